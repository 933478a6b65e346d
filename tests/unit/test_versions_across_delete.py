"""Nothing read before a delete matches after it: ETags, `If-Match`, `expected_version` (HTTP and
direct invoke); and a turn sent again beside a new one is exported once (docs/api.md "Headers",
"Replace the summary", "Export"). On the in-memory fakes."""

from typing import Any

import pytest

from hippocampus.contracts.models import IngestRequest
from tests.support.fakes import Ports, ScriptedModel
from tests.support.lambda_harness import Context

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


def put(ports: Ports, text: str, **how: Any) -> tuple[int, dict[str, str], Any]:
    headers = {"If-Match": how.pop("if_match")} if "if_match" in how else None
    return ports.call("PUT", MEMORY, {"memory": text, **how}, headers=headers)


def put_direct(ports: Ports, text: str, expected_version: int) -> Any:
    event = {"action": "put_memory", "tenant_id": T, "user_id": U, "memory": text}
    return ports.api_functions()["ingest"](event | {"expected_version": expected_version}, Context())


def forget(ports: Ports) -> None:
    assert ports.call("DELETE", MEMORY)[0] == 204


def ingest(ports: Ports, request_id: str, *items: dict[str, Any]) -> None:
    request = IngestRequest.model_validate({"items": list(items)})
    ports.ingest().ingest(T, U, request, request_id)


def condense(ports: Ports, answer: str) -> None:
    ports.consolidation(ScriptedModel(answer)).process_batch(ports.queued())
    ports.queue.messages.clear()


def test_the_etag_after_a_delete_and_a_new_put_is_not_the_old_one(ports):
    _, before, _ = put(ports, "Alice sells candles.", expected_version=0)
    forget(ports)
    status, after, body = put(ports, "Bob sells soap.", expected_version=0)
    assert status == 200 and after["ETag"] != before["ETag"]
    status, headers, body = ports.call("GET", MEMORY, headers={"If-None-Match": before["ETag"]})
    assert (status, body["memory"], headers["ETag"]) == (200, "Bob sells soap.", after["ETag"])


def test_an_empty_memory_after_a_delete_has_another_etag_than_before(ports):
    _, never_seen, _ = ports.call("GET", MEMORY)
    forget(ports)
    status, headers, body = ports.call("GET", MEMORY, headers={"If-None-Match": never_seen["ETag"]})
    assert status == 200 and (body["memory"], body["version"]) == (None, 0)
    assert headers["ETag"] != never_seen["ETag"]


def test_a_pre_delete_if_match_or_expected_version_is_409_after_the_delete(ports):
    _, tag, _ = put(ports, "Alice sells candles.", expected_version=0)
    forget(ports)
    assert put(ports, "Bob sells soap.", expected_version=0)[0] == 200
    stale_header = put(ports, "Alice sells candles in Lyon.", if_match=tag["ETag"])
    stale_version = put(ports, "Alice sells candles in Lyon.", expected_version=1)
    stale_direct = put_direct(ports, "Alice sells candles in Lyon.", 1)
    assert stale_header[0] == stale_version[0] == stale_direct["error"]["status"] == 409
    assert ports.call("GET", MEMORY)[2]["memory"] == "Bob sells soap."


def test_a_version_read_before_a_delete_is_409_on_the_emptied_memory_too(ports):
    put(ports, "Alice sells candles.", expected_version=0)
    forget(ports)
    assert put(ports, "Alice sells candles in Lyon.", expected_version=1)[0] == 409
    assert put_direct(ports, "Alice sells candles in Lyon.", 1)["error"]["code"] == "version_conflict"
    assert ports.call("GET", MEMORY)[2]["memory"] is None


def test_versions_go_on_after_a_delete_in_the_body_history_and_jobs(ports):
    put(ports, "Alice sells candles.", expected_version=0)
    put(ports, "Alice sells candles in Lyon.", expected_version=1)
    forget(ports)
    assert ports.call("GET", MEMORY)[2]["version"] == 0
    ingest(ports, "r1", {"id": "t1", "text": "I am Bob, I sell soap."})
    condense(ports, "Bob sells soap.")
    _, _, body = ports.call("GET", MEMORY)
    assert (body["memory"], body["version"]) == ("Bob sells soap.", 3)
    _, _, export = ports.call("GET", MEMORY + "/export")
    assert [version["version"] for version in export["history"]] == [3]
    assert [job["memory_version"] for job in export["jobs"]] == [3]
    direct = put_direct(ports, "Bob sells soap in Rome.", 3)
    assert direct["version"] == 4


def test_a_turn_sent_again_beside_a_new_one_is_exported_once_in_order(ports):
    t0, t1 = {"id": "t0", "text": "I sell candles."}, {"id": "t1", "text": "I moved to Lyon."}
    ingest(ports, "z-first", t0)  # request ids sort against the order of acceptance
    condense(ports, "Alice sells candles.")
    ingest(ports, "a-second", t0, t1)
    condense(ports, "Alice sells candles in Lyon.")
    _, _, export = ports.call("GET", MEMORY + "/export")
    assert [item["id"] for item in export["items"]] == ["t0", "t1"]
    assert [job["item_id"] for job in export["jobs"]] == ["t0", "t1"]
    assert all(job["status"] == "completed" for job in export["jobs"])
