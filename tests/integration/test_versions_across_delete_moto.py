"""On DynamoDB, S3 and SQS (moto), through the functions as deployed: nothing read before a delete
matches after it (ETag, `If-Match`, `expected_version`, HTTP and direct invoke), versions go on
after a delete, and a turn sent again beside a new one is exported once, in order
(docs/api.md "Headers", "Replace the summary", "Export")."""

from typing import Any

USER = "/v1/tenants/acme/users/alice/memory"


def put(service: Any, text: str, expected_version: int | None = None, if_match: str | None = None) -> Any:
    body: dict[str, Any] = {"memory": text}
    if expected_version is not None:
        body["expected_version"] = expected_version
    headers = {"If-Match": if_match} if if_match is not None else None
    return service.call("PUT", USER, body, headers=headers)


def put_direct(service: Any, text: str, expected_version: int) -> Any:
    event = {"action": "put_memory", "tenant_id": "acme", "user_id": "alice", "memory": text}
    return service.invoke("ingest", event | {"expected_version": expected_version})


def test_nothing_read_before_a_delete_matches_after_it(service):
    before = put(service, "Alice sells candles.", expected_version=0)
    assert before.status == 200 and service.call("DELETE", USER).status == 204
    emptied = service.call("GET", USER, headers={"If-None-Match": '"0"'})
    assert emptied.status == 200 and (emptied.body["memory"], emptied.body["version"]) == (None, 0)
    after = put(service, "Bob sells soap.", expected_version=0)
    assert after.status == 200 and after.headers["etag"] != before.headers["etag"]
    read = service.call("GET", USER, headers={"If-None-Match": before.headers["etag"]})
    assert (read.status, read.body["memory"]) == (200, "Bob sells soap.")
    assert put(service, "Alice sells candles in Lyon.", if_match=before.headers["etag"]).status == 409
    assert put(service, "Alice sells candles in Lyon.", expected_version=1).status == 409
    assert put_direct(service, "Alice sells candles in Lyon.", 1)["error"]["code"] == "version_conflict"
    assert service.call("GET", USER).body["memory"] == "Bob sells soap."


def test_the_condenser_goes_on_numbering_after_a_delete(service):
    put(service, "Alice sells candles.", expected_version=0)
    put(service, "Alice sells candles in Lyon.", expected_version=1)
    service.call("DELETE", USER)
    turn = {"id": "t1", "text": "I am Bob, I sell soap."}
    job = service.call("POST", USER, {"items": [turn]}).body["jobs"][0]
    service.drain()
    memory = service.call("GET", USER).body
    assert memory["version"] == 3 and memory["memory"]
    assert service.call("GET", f"/v1/tenants/acme/jobs/{job['job_id']}").body["memory_version"] == 3
    history = service.call("GET", USER + "/history").body["versions"]
    assert [version["version"] for version in history] == [3]
    assert put_direct(service, "Bob sells soap in Rome.", 3)["version"] == 4


def test_a_completed_turn_sent_again_beside_a_new_one_is_exported_once_in_order(service):
    t0 = {"id": "t0", "text": "I sell handmade candles."}
    t1 = {"id": "t1", "text": "I moved to Lyon."}
    first = service.call("POST", USER, {"items": [t0]}).body["jobs"][0]
    service.drain()
    again = service.call("POST", USER, {"items": [t0, t1]}).body["jobs"]
    assert again[0]["job_id"] == first["job_id"]
    service.drain()
    export = service.call("GET", USER + "/export").body
    assert [item["id"] for item in export["items"]] == ["t0", "t1"]
    assert [(job["item_id"], job["status"]) for job in export["jobs"]] == [
        ("t0", "completed"),
        ("t1", "completed"),
    ]
    assert [episode["id"] for episode in export["episodes"]] == ["t0", "t1"]
