"""The API layer with its services injected: routes, envelope and the condenser's batch report, on fakes."""

from datetime import UTC, datetime

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.api.queue_batch import batch_failures, condenser_function
from hippocampus.contracts.recall import IndexMessage
from tests.support.fakes import Outage, Ports
from tests.support.lambda_harness import Context

MEMORY = "/v1/tenants/acme/users/alice/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


@pytest.fixture
def call(ports):
    return ports.call


def test_routes_serve_the_injected_services(call, ports):
    status, _, body = call("POST", MEMORY, {"items": [{"id": "t1", "text": "I sell handmade candles."}]})
    assert status == 202 and body["jobs"][0]["status"] == "queued"
    assert len(ports.queue.messages) == 1

    condenser = condenser_function(
        lambda: ports.consolidation(OfflineModel()), ports.reconciler, ports.indexer
    )
    message, _ = ports.queue.messages[0]
    record = {
        "messageId": "m1",
        "body": message.model_dump_json(),
        "attributes": {"ApproximateReceiveCount": "1", "MessageGroupId": "g"},
    }
    assert condenser({"Records": [record]}, Context()) == {"batchItemFailures": []}

    status, headers, body = call("GET", MEMORY)
    assert status == 200 and headers["ETag"] == '"1"'
    assert "candles" in body["memory"]


def test_one_batch_condenses_turns_serves_index_requests_and_fails_what_it_cannot_read(call, ports):
    facts = [{"id": "pay", "text": "Pays through Stripe.", "infer": False}]
    assert call("POST", MEMORY, {"items": facts})[0] == 202
    assert call("POST", MEMORY, {"items": [{"id": "t1", "text": "I sell candles."}]})[0] == 202
    [(turn, _)] = ports.queue.messages
    index = IndexMessage(tenant_id="acme", user_id="alice", requested_at=datetime.now(UTC))
    bodies = {"turn": turn.model_dump_json(), "index": index.model_dump_json(), "junk": '{"kind": 3}'}
    records = [
        {
            "messageId": name,
            "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "MessageGroupId": name},
        }
        for name, body in bodies.items()
    ]
    condenser = condenser_function(
        lambda: ports.consolidation(OfflineModel()), ports.reconciler, ports.indexer
    )
    assert condenser({"Records": records}, Context()) == {"batchItemFailures": [{"itemIdentifier": "junk"}]}
    assert "candles" in call("GET", MEMORY)[2]["memory"]
    assert ports.indexer().index_user("acme", "alice") == 0  # the fact and the episode have their vectors


def test_a_user_whose_write_keeps_losing_is_not_indexed_until_its_redelivery_condenses_it(call, ports):
    ports.queue.fail_next = Outage("throttled")  # the fact's own index request is lost
    assert (
        call("POST", MEMORY, {"items": [{"id": "pay", "text": "Pays through Stripe.", "infer": False}]})[0]
        == 202
    )
    assert call("POST", MEMORY, {"items": [{"id": "t1", "text": "I sell candles."}]})[0] == 202
    [(turn, _)] = ports.queue.messages
    edits = ports.edits()

    def rival() -> None:  # another writer wins every conditional write of the condensation
        edits.put_memory("acme", "alice", "Alice sells soap.", None)
        ports.store.before_write = rival

    ports.store.before_write = rival
    condenser = condenser_function(
        lambda: ports.consolidation(OfflineModel()), ports.reconciler, ports.indexer
    )
    record = {
        "messageId": "m1",
        "body": turn.model_dump_json(),
        "attributes": {"ApproximateReceiveCount": "1"},
    }
    assert condenser({"Records": [record]}, Context()) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert ports.store.vectors == {}  # nothing was committed: nothing indexed
    ports.store.before_write = None
    record["attributes"]["ApproximateReceiveCount"] = "2"
    assert condenser({"Records": [record]}, Context()) == {"batchItemFailures": []}
    # The fact, the turn's episode and the record the stand-in learned from it.
    assert {key.partition(":")[0] for key in ports.store.vectors[("acme", "alice")]} == {
        "fact",
        "episode",
        "record",
    }


def test_an_idempotency_key_replays_the_first_answer_and_refuses_another_body(call, ports):
    key = {"Idempotency-Key": "k-1"}
    body = {"items": [{"id": "t1", "text": "I sell handmade candles."}]}
    first = call("POST", MEMORY, body, headers=key)
    again = call("POST", MEMORY, body, headers=key)
    assert first[0] == again[0] == 202 and again[2] == first[2]
    assert len(ports.queue.messages) == 1
    status, _, error = call("POST", MEMORY, {"items": [{"id": "t2", "text": "Other."}]}, headers=key)
    assert status == 409 and error["error"]["code"] == "idempotency_conflict"
    assert len(ports.queue.messages) == 1


def test_a_stale_put_is_409_in_the_envelope(call):
    assert call("PUT", MEMORY, {"memory": "Alice sells candles.", "expected_version": 0})[0] == 200
    status, _, body = call("PUT", MEMORY, {"memory": "Alice sells soap.", "expected_version": 0})
    assert status == 409 and body["error"] == {
        "code": "version_conflict",
        "message": "memory is at version 1, not 0",
        "status": 409,
        "details": [],
    }


def test_an_unknown_job_is_404_and_a_known_path_with_another_method_is_405(call):
    status, _, body = call("GET", "/v1/tenants/acme/jobs/job-missing")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, headers, body = call("POST", "/v1/tenants/acme/jobs/job-missing")
    assert status == 405 and headers["Allow"] == "GET" and body["error"]["status"] == 405


def _record(message_id: str, group: str) -> SQSRecord:
    return SQSRecord({"messageId": message_id, "body": "{}", "attributes": {"MessageGroupId": group}})


def test_a_failed_record_fails_the_rest_of_its_group_only():
    records = [_record("a1", "alice"), _record("b1", "bob"), _record("a2", "alice"), _record("b2", "bob")]
    response = batch_failures(records, {"a1"})
    assert response == {"batchItemFailures": [{"itemIdentifier": "a1"}, {"itemIdentifier": "a2"}]}
    assert batch_failures(records, set()) == {"batchItemFailures": []}


def test_the_etag_changes_with_the_facts_and_answers_304_while_nothing_changed(call):
    assert call("GET", MEMORY)[1]["ETag"] == '"0"'
    call("POST", MEMORY, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    with_fact = call("GET", MEMORY)[1]["ETag"]
    assert with_fact.startswith('"0-') and with_fact != '"0"'
    status, headers, body = call("GET", MEMORY, headers={"If-None-Match": with_fact})
    assert (status, headers["ETag"], body) == (304, with_fact, None)
    call("POST", MEMORY, {"items": [{"id": "f1", "text": "Likes green tea.", "infer": False}]})
    status, headers, _ = call("GET", MEMORY, headers={"If-None-Match": with_fact})
    assert status == 200 and headers["ETag"] not in (with_fact, '"0"')
    call("DELETE", f"{MEMORY}/facts/f1")
    assert call("GET", MEMORY, headers={"If-None-Match": with_fact})[1]["ETag"] == '"0"'


def test_a_put_takes_back_the_etag_it_was_given(call):
    call("POST", MEMORY, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    etag = call("GET", MEMORY)[1]["ETag"]
    status, headers, body = call(
        "PUT", MEMORY, {"memory": "Alice sells candles."}, headers={"If-Match": etag}
    )
    assert status == 200 and body["version"] == 1 and headers["ETag"].startswith('"1-')
    stale = call("PUT", MEMORY, {"memory": "Alice sells soap."}, headers={"If-Match": etag})
    assert stale[0] == 409
