"""`title`, `is_markdown` and `upsert: false` through the real handlers and DynamoDB adapter, on moto."""

import boto3

from hippocampus.adapters.dynamodb_table import FACT_PREFIX, user_pk
from hippocampus.contracts.names import TABLE_PARTITION_KEY, TABLE_SORT_KEY

USER = "/v1/tenants/acme/users/alice/memory"
MARKDOWN = "## Payments\n\n- provider: **Stripe**  \n- currency: `EUR`\n"


def test_a_fact_with_title_and_markdown_round_trips_through_dynamodb(service):
    item = {"id": "billing", "text": MARKDOWN, "infer": False, "title": "Billing", "is_markdown": True}
    accepted = service.call("POST", USER, {"items": [item, {"id": "plain", "text": "Hi.", "infer": False}]})
    assert accepted.status == 202
    facts = {fact["id"]: fact for fact in service.call("GET", USER).body["facts"]}
    assert (facts["billing"]["text"], facts["billing"]["title"], facts["billing"]["is_markdown"]) == (
        MARKDOWN,
        "Billing",
        True,
    )
    assert (facts["plain"]["title"], facts["plain"]["is_markdown"]) == (None, False)
    exported = service.call("GET", USER + "/export").body["memory"]["facts"]
    assert {fact["id"]: fact["title"] for fact in exported} == {"billing": "Billing", "plain": None}


def test_a_fact_stored_before_titles_existed_reads_without_them(service, aws):
    boto3.client("dynamodb").put_item(
        TableName=aws.table_name,
        Item={
            TABLE_PARTITION_KEY: {"S": user_pk("acme", "alice")},
            TABLE_SORT_KEY: {"S": FACT_PREFIX + "old"},
            "id": {"S": "old"},
            "text": {"S": "Written by an earlier version."},
            "metadata": {"S": "{}"},
            "additional_metadata": {"S": "{}"},
            "updated_at": {"S": "2026-01-01T00:00:00Z"},
            "generation": {"N": "0"},
        },
    )
    [fact] = service.call("GET", USER).body["facts"]
    assert (fact["id"], fact["title"], fact["is_markdown"]) == ("old", None, False)


def test_upsert_false_leaves_a_stored_fact_and_its_job_says_why(service):
    original = {"id": "f1", "text": "Old.", "infer": False, "title": "first"}
    assert service.call("POST", USER, {"items": [original]}).status == 202
    before = service.call("GET", USER).body["facts"]
    again = {"items": [original | {"text": "New."}, {"id": "f2", "text": "Fresh.", "infer": False}]}
    accepted = service.call("POST", USER, again | {"upsert": False})
    assert accepted.status == 202
    skipped, written = accepted.body["jobs"]
    assert written["status"] == "completed"
    job = service.call("GET", f"/v1/tenants/acme/jobs/{skipped['job_id']}").body
    assert job["status"] == "skipped" and job["item_id"] == "f1"
    assert job["error"] == {
        "code": "fact_exists",
        "message": "a fact with this id exists and upsert is false",
    }
    facts = service.call("GET", USER).body["facts"]
    assert [fact for fact in facts if fact["id"] == "f1"] == before
    assert [fact["id"] for fact in facts] == ["f1", "f2"]


def test_a_turn_with_title_and_markdown_is_archived_as_sent(service):
    turn = {"id": "t1", "text": MARKDOWN, "title": "Payments chat", "is_markdown": True}
    assert service.call("POST", USER, {"items": [turn], "upsert": False}).status == 202
    [item] = service.call("GET", USER + "/export").body["items"]
    assert (item["text"], item["title"], item["is_markdown"]) == (MARKDOWN, "Payments chat", True)
    assert service.drain() == 1
