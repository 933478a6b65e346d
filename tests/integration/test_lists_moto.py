"""On DynamoDB (moto): the tenant's users and a user's jobs, in pages (docs/api.md "Users", "Lists").

A user shows in the tenant's list once a summary or a fact is stored, never another tenant's, and
no longer once forgotten; jobs come newest first, each page after the last one given."""

import boto3

from hippocampus.adapters.dynamodb_table import index_pk

TENANT = "/v1/tenants/acme"


def memory(user: str, tenant: str = TENANT) -> str:
    return f"{tenant}/users/{user}/memory"


def all_pages(service, path: str, limit: int) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        query = {"limit": str(limit)} | ({"cursor": cursor} if cursor else {})
        answer = service.call("GET", path, query=query)
        assert answer.status == 200, answer.body
        pages.append(answer.body["items"])
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return pages


def test_the_users_list_holds_users_with_memory_or_facts_by_id_and_forgets_with_them(service):
    service.call("POST", memory("carol"), {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.call("POST", memory("alice"), {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    service.call("POST", memory("bob"), {"items": [{"id": "t1", "text": "I run a bakery."}]})
    service.call(
        "POST", memory("dave", "/v1/tenants/other"), {"items": [{"id": "f", "text": "x", "infer": False}]}
    )
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "alice"}]]  # turns not condensed yet
    service.drain()
    pages = all_pages(service, TENANT + "/users", 2)
    assert [[user["user_id"] for user in page] for page in pages] == [["alice", "bob"], ["carol"]]
    assert service.call("DELETE", memory("bob")).status == 204
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "alice"}, {"user_id": "carol"}]]
    service.call("POST", memory("bob"), {"items": [{"id": "f2", "text": "Back again.", "infer": False}]})
    listed = all_pages(service, TENANT + "/users", 10)[0]
    assert [user["user_id"] for user in listed] == ["alice", "bob", "carol"]


def test_a_users_jobs_come_newest_first_in_pages_that_never_repeat_one(service):
    for n in range(5):
        service.call(
            "POST", memory("alice"), {"items": [{"id": f"t{n}", "text": f"Turn {n} about candles."}]}
        )
    service.call("POST", memory("bob"), {"items": [{"id": "b", "text": "Not alice."}]})
    service.drain()
    pages = all_pages(service, memory("alice") + "/jobs", 2)
    assert [len(page) for page in pages] == [2, 2, 1]
    jobs = [job for page in pages for job in page]
    assert [job["item_id"] for job in jobs] == ["t4", "t3", "t2", "t1", "t0"]
    assert {job["status"] for job in jobs} == {"completed"}
    service.call("DELETE", memory("alice"))
    assert all_pages(service, memory("alice") + "/jobs", 10) == [[]]


def test_a_user_with_episodes_only_is_listed_too(service):
    for text in ("Hi", "ok", "Thanks!"):  # nothing worth keeping: episodes, no summary, no fact
        service.call("POST", memory("eve"), {"items": [{"id": text.strip("!"), "text": text}]})
    service.drain()
    assert service.call("GET", memory("eve")).body["version"] == 0
    assert len(service.call("GET", memory("eve") + "/episodes").body["episodes"]) == 3
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "eve"}]]


def test_jobs_past_their_retention_never_end_the_paging_early(service, aws):
    for n in range(3):
        service.call(
            "POST", memory("alice"), {"items": [{"id": f"t{n}", "text": f"Turn {n} about candles."}]}
        )
    table = boto3.client("dynamodb")
    for n in range(3):  # newer references whose jobs are gone (past their retention)
        sk = f"JOB#{9_999_999_999_990 + n:013d}#job-gone{n}"
        item = {"pk": {"S": index_pk("acme", "alice")}, "sk": {"S": sk}, "generation": {"N": "0"}}
        table.put_item(TableName=aws.table_name, Item=item)
    pages = all_pages(service, memory("alice") + "/jobs", 2)
    assert [[job["item_id"] for job in page] for page in pages] == [["t2", "t1"], ["t0"]]


def test_a_delete_leaves_the_list_to_the_new_life(service):
    service.call("POST", memory("alice"), {"items": [{"id": "t1", "text": "I sell candles."}]})
    caught = service.call("POST", memory("alice"), {"items": [{"id": "t2", "text": "I moved."}]}).body[
        "jobs"
    ][0]
    assert service.call("DELETE", memory("alice")).status == 204
    assert all_pages(service, memory("alice") + "/jobs", 10) == [[]]
    assert service.call("GET", f"{TENANT}/jobs/{caught['job_id']}").body["status"] == "skipped"  # still by id
    service.call("POST", memory("alice"), {"items": [{"id": "t3", "text": "I sell soap now."}]})
    assert [job["item_id"] for job in all_pages(service, memory("alice") + "/jobs", 10)[0]] == ["t3"]


def test_users_stored_before_the_index_are_listed_by_the_upgrade_tool_and_the_forgotten_are_not(service, aws):
    from tools.list_users import list_users

    service.call("POST", memory("alice"), {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.call("POST", memory("bob"), {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    service.call("POST", memory("carol"), {"items": [{"id": "f2", "text": "Likes soap.", "infer": False}]})
    service.drain()
    service.call("DELETE", memory("carol"))  # a tombstone: not a user to list
    table = boto3.client("dynamodb")
    for user in ("alice", "bob"):  # as written before the index existed
        table.update_item(
            TableName=aws.table_name,
            Key={"pk": {"S": f"T#acme#U#{user}"}, "sk": {"S": "MEMORY"}},
            UpdateExpression="REMOVE tenant_users, listed_user",
        )
    assert all_pages(service, TENANT + "/users", 10) == [[]]
    assert list_users(table, aws.table_name) == 2
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "alice"}, {"user_id": "bob"}]]
    assert list_users(table, aws.table_name) == 0  # once
