"""The rest of HydraDB's item shape on the fakes: `title`, `is_markdown` and the request's `upsert`
(docs/api.md "Ingest", "Jobs", "Limits")."""

from typing import Any

import pytest

from hippocampus.contracts.limits import MAX_TITLE_CHARS
from hippocampus.contracts.models import IngestItem, IngestRequest
from hippocampus.domain.jobs import content_hash
from tests.support.fakes import Ports
from tests.support.lambda_harness import Context

MEMORY = "/v1/tenants/acme/users/alice/memory"
MARKDOWN = "# Billing\n\n* pays with **Stripe**  \n* invoices in `EUR`\n\n| a | b |\n|---|---|\n"


@pytest.fixture
def ports() -> Ports:
    return Ports()


def post(ports: Ports, items: list[dict[str, Any]], **request: Any) -> tuple[int, Any]:
    status, _, body = ports.call("POST", MEMORY, {"items": items, **request})
    return status, body


def facts(ports: Ports) -> dict[str, dict[str, Any]]:
    status, _, body = ports.call("GET", MEMORY)
    assert status == 200
    return {fact["id"]: fact for fact in body["facts"]}


def fact(fact_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"id": fact_id, "text": text, "infer": False, **fields}


HOSTILE = {
    "title over 256 characters": ({"title": "t" * (MAX_TITLE_CHARS + 1)}, {}, "items[0].title"),
    "empty title": ({"title": ""}, {}, "items[0].title"),
    "blank title": ({"title": " \t\n "}, {}, "items[0].title"),
    "title not a string": ({"title": 7}, {}, "items[0].title"),
    "is_markdown as a string": ({"is_markdown": "true"}, {}, "items[0].is_markdown"),
    "is_markdown as 1": ({"is_markdown": 1}, {}, "items[0].is_markdown"),
    "upsert as 1": ({}, {"upsert": 1}, "upsert"),
    "upsert as a string": ({}, {"upsert": "false"}, "upsert"),
    "upsert null": ({}, {"upsert": None}, "upsert"),
}


@pytest.mark.parametrize(("item_fields", "request_fields", "field"), HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("infer", [False, True])
def test_a_bad_title_markdown_flag_or_upsert_is_422_naming_the_field_and_changes_nothing(
    ports, item_fields, request_fields, field, infer
):
    status, body = post(ports, [{"id": "i1", "text": "x", "infer": infer, **item_fields}], **request_fields)
    assert status == 422 and body["error"]["code"] == "validation_error"
    assert field in [detail["field"] for detail in body["error"]["details"]]
    assert facts(ports) == {} and ports.queue.messages == [] and ports.jobs.jobs == {}


def test_a_direct_invocation_validates_the_new_fields_like_http(ports):
    handler = ports.api_functions()["ingest"]
    items = [fact("f1", "x", title="")]
    result = handler({"action": "ingest", "tenant_id": "acme", "user_id": "alice", "items": items}, Context())
    assert result["error"]["status"] == 422
    assert [d["field"] for d in result["error"]["details"]] == ["items[0].title"]


def test_a_title_of_256_characters_is_kept(ports):
    title = "é" * MAX_TITLE_CHARS  # characters, not bytes
    assert post(ports, [fact("f1", "x", title=title)])[0] == 202
    assert facts(ports)["f1"]["title"] == title


def test_a_fact_keeps_its_title_and_markdown_as_written(ports):
    status, body = post(ports, [fact("billing", MARKDOWN, title="Billing setup", is_markdown=True)])
    assert status == 202 and body["jobs"][0]["status"] == "completed"
    stored = facts(ports)["billing"]
    assert stored["text"] == MARKDOWN  # not stripped, not rendered
    assert stored["title"] == "Billing setup" and stored["is_markdown"] is True


def test_a_fact_without_them_reads_title_null_and_not_markdown(ports):
    post(ports, [fact("plain", "Prefers dark mode.")])
    stored = facts(ports)["plain"]
    assert stored["title"] is None and stored["is_markdown"] is False


def test_the_export_gives_the_facts_and_the_turns_with_title_and_markdown(ports):
    post(
        ports,
        [
            fact("billing", MARKDOWN, title="Billing", is_markdown=True),
            {"id": "t1", "text": MARKDOWN, "title": "A chat", "is_markdown": True},
        ],
    )
    status, _, document = ports.call("GET", MEMORY + "/export")
    assert status == 200
    [exported] = document["memory"]["facts"]
    assert (exported["title"], exported["is_markdown"], exported["text"]) == ("Billing", True, MARKDOWN)
    [turn] = document["items"]
    assert (turn["title"], turn["is_markdown"], turn["text"]) == ("A chat", True, MARKDOWN)


def test_a_turn_keeps_title_and_markdown_in_its_raw_payload_for_the_condenser(ports):
    turn = {"id": "t1", "user_assistant_pairs": [{"user": "**bold**  ", "assistant": "ok"}]}
    assert post(ports, [turn | {"title": "Payments chat", "is_markdown": True}])[0] == 202
    [payload] = ports.archive.raw.values()
    item = IngestItem.model_validate(payload["items"][0])  # what the condenser reads back
    assert item.title == "Payments chat" and item.is_markdown is True
    assert item.user_assistant_pairs is not None and item.user_assistant_pairs[0].user == "**bold**  "


def test_an_item_without_the_new_fields_hashes_and_archives_as_before_they_existed():
    # Job ids and Idempotency-Key bodies of items sent before the fields existed must not change.
    item = IngestItem(id="t1", text="hello")
    assert item.model_dump(mode="json") == {
        "id": "t1",
        "text": "hello",
        "user_assistant_pairs": None,
        "infer": True,
        "user_name": None,
        "custom_instructions": None,
        "metadata": {},
        "additional_metadata": {},
    }
    assert "upsert" not in IngestRequest(items=[item]).model_dump()
    assert IngestRequest(items=[item], upsert=False).model_dump()["upsert"] is False
    titled = item.model_copy(update={"title": "T"})
    assert content_hash(titled) != content_hash(item)  # a title is content: another job


def test_upsert_defaults_to_true_and_replaces_a_fact(ports):
    post(ports, [fact("f1", "Old.", title="old")])
    assert post(ports, [fact("f1", "New.")])[1]["jobs"][0]["status"] == "completed"
    assert (facts(ports)["f1"]["text"], facts(ports)["f1"]["title"]) == ("New.", None)
    assert post(ports, [fact("f1", "Newer.")], upsert=True)[1]["jobs"][0]["status"] == "completed"
    assert facts(ports)["f1"]["text"] == "Newer."


def test_upsert_false_skips_an_existing_fact_with_its_reason_and_writes_a_new_one(ports):
    post(ports, [fact("f1", "Old.", title="kept")])
    before = facts(ports)["f1"]
    status, body = post(ports, [fact("f1", "New.", title="lost"), fact("f2", "Fresh.")], upsert=False)
    assert status == 202
    skipped, written = body["jobs"]
    error = {"code": "fact_exists", "message": "a fact with this id exists and upsert is false"}
    assert (skipped["status"], skipped["item_id"], skipped["error"]) == ("skipped", "f1", error)
    assert skipped["memory_version"] is None
    assert written["status"] == "completed" and written["error"] is None
    assert facts(ports)["f1"] == before  # not touched, not even its time
    assert facts(ports)["f2"]["text"] == "Fresh."
    status, _, job = ports.call("GET", f"/v1/tenants/acme/jobs/{skipped['job_id']}")
    assert status == 200 and job["status"] == "skipped" and job["error"] == error


def test_upsert_false_lets_the_first_of_two_items_with_one_id_win(ports):
    status, body = post(ports, [fact("f1", "First."), fact("f1", "Second.")], upsert=False)
    assert status == 202 and [job["status"] for job in body["jobs"]] == ["completed", "skipped"]
    assert facts(ports)["f1"]["text"] == "First."


def test_upsert_false_does_not_touch_turns(ports):
    turn = {"id": "t1", "text": "I sell candles."}
    first = post(ports, [turn], upsert=False)[1]["jobs"][0]
    again = post(ports, [turn], upsert=False)[1]["jobs"][0]
    assert first["status"] == "queued" and again == first  # deduplicated as always, never `skipped`
    assert len(ports.queue.messages) == 1


def test_upsert_false_after_a_delete_of_the_fact_writes_it_again(ports):
    post(ports, [fact("f1", "Old.")])
    assert ports.call("DELETE", MEMORY + "/facts/f1")[0] == 204
    assert post(ports, [fact("f1", "Back.")], upsert=False)[1]["jobs"][0]["status"] == "completed"
    assert facts(ports)["f1"]["text"] == "Back."


def test_the_existence_check_holds_at_the_commit_not_only_at_the_read(ports):
    """A rival writes f1 between this request's read and its commit: the commit changes nothing, the
    request reads again, sees f1 and skips it."""

    def rival_first() -> None:
        rival = IngestRequest.model_validate({"items": [fact("f1", "Rival.")]})
        ports.ingest().ingest("acme", "alice", rival, "rival")

    ports.store.before_fact = rival_first
    request = IngestRequest.model_validate({"items": [fact("f1", "Mine.")], "upsert": False})
    [job] = ports.ingest().ingest("acme", "alice", request, "mine").jobs
    assert job.status == "skipped" and facts(ports)["f1"]["text"] == "Rival."
    assert len(ports.jobs.jobs) == 2  # the rival's and this one: the lost commit wrote no job


def test_a_skipped_fact_does_not_count_towards_the_fact_limits(ports):
    """Near the 4 MiB of facts, a large item whose id is a small fact is skipped, not refused."""
    big = "x" * 32_000
    items = [fact(f"big-{n}", big) for n in range(130)] + [fact("small", "x")]
    for start in range(0, len(items), 100):
        request = IngestRequest.model_validate({"items": items[start : start + 100]})
        ports.ingest().ingest("acme", "alice", request, f"seed-{start}")
    replace = {"items": [fact("small", big)]}
    status, body = post(ports, replace["items"])
    assert status == 422 and body["error"]["code"] == "limit_exceeded"  # replacing would exceed
    status, body = post(ports, replace["items"], upsert=False)
    assert status == 202 and body["jobs"][0]["status"] == "skipped"
    assert facts(ports)["small"]["text"] == "x"
