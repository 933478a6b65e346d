"""Keep them closed, continued: S3 and SQS fail under the real adapters (see test_failure_injection.py)."""

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from hippocampus import wiring
from hippocampus.adapters.llm.offline import OfflineModel
from tests.integration.test_failure_injection import (
    KEPT,
    USER,
    assert_retried_then_failed,
    job,
    memory,
    stored_jobs,
    with_memory_and_one_item,
)
from tests.support.clients import ClientProxy, aws_error, fail, proxied_service

S3_ERRORS = ["InternalError", "SlowDown", "ServiceUnavailable"]


@pytest.fixture
def clients(aws, monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_WORDS", "50")
    wiring.reset()
    return {name: ClientProxy(boto3.client(name)) for name in ("dynamodb", "s3", "sqs")}


@pytest.fixture
def service(aws, clients):
    return proxied_service(aws, **clients, model=OfflineModel())


def keys(aws, prefix):
    listing = boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name, Prefix=prefix)
    return [obj["Key"] for obj in listing.get("Contents", [])]


def under(prefix):
    return lambda **request: request["Key"].startswith(prefix)


ITEMS = [{"id": "turn-1", "text": "Alice moved to Porto."}, {"id": "turn-2", "text": "Alice sells soap."}]


# --- S3 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [aws_error(code, "PutObject") for code in S3_ERRORS]
    + [EndpointConnectionError(endpoint_url="https://s3"), ReadTimeoutError(endpoint_url="https://s3")],
    ids=[*S3_ERRORS, "connection refused", "read timeout"],
)
def test_a_raw_payload_s3_refuses_is_503_with_no_job_and_no_message(service, clients, aws, error):
    fail(clients["s3"], "put_object", error, times=1, when=under("raw/"))
    response = service.call("POST", USER, {"items": ITEMS})
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert service.receive() == [] and keys(aws, "raw/") == []
    assert all(
        status != "queued" for status, _ in stored_jobs(aws).values()
    )  # no queued job without a message
    again = service.call("POST", USER, {"items": ITEMS})
    assert again.status == 202 and [j["status"] for j in again.body["jobs"]] == ["queued", "queued"]
    assert len(service.receive()) == 2


@pytest.mark.parametrize("code", S3_ERRORS)
def test_a_raw_payload_s3_cannot_read_is_retried_and_the_job_is_not_lost(service, clients, code):
    job_id, message = with_memory_and_one_item(service)
    fail(clients["s3"], "get_object", aws_error(code, "GetObject"), when=under("raw/"))
    assert_retried_then_failed(service, job_id, message, "llm_or_dependency_error")
    clients["s3"].restore("get_object")
    assert service.deliver([message], receive_count=1) == set()  # redriven from the DLQ
    assert job(service, job_id)["status"] == "completed" and "Porto" in memory(service)["memory"]


def test_a_history_copy_s3_refuses_leaves_the_memory_written_and_is_logged(service, clients, caplog):
    job_id, message = with_memory_and_one_item(service)
    refused = fail(
        clients["s3"], "put_object", aws_error("InternalError", "PutObject"), when=under("history/")
    )
    assert service.deliver([message], receive_count=1) == set()  # acknowledged: not condensed twice
    assert len(refused) == 1
    assert job(service, job_id) | {"status": "completed", "memory_version": 2} == job(service, job_id)
    assert memory(service)["version"] == 2 and "Porto" in memory(service)["memory"]
    assert any(
        record.getMessage() == "history version not archived" and getattr(record, "version", None) == 2
        for record in caplog.records
    )
    history = service.call("GET", USER + "/history").body["versions"]
    assert [entry["version"] for entry in history] == [1]  # the audit trail misses version 2, nothing else


@pytest.mark.parametrize(
    "refusal",
    [
        lambda request: (_ for _ in ()).throw(aws_error("InternalError", "DeleteObjects")),
        lambda request: {"Errors": [{"Key": request["Delete"]["Objects"][0]["Key"], "Code": "SlowDown"}]},
    ],
    ids=["DeleteObjects fails", "keys refused in a 200"],
)
def test_an_erase_s3_refuses_is_503_and_delete_again_finishes(service, clients, aws, refusal):
    service.call("PUT", USER, {"memory": KEPT, "expected_version": 0})
    service.call("POST", USER, {"items": ITEMS})
    assert keys(aws, "raw/acme/alice/") and keys(aws, "history/acme/alice/")
    clients["s3"].intercept("delete_objects", lambda **request: refusal(request))
    response = service.call("DELETE", USER)
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert memory(service) | {"memory": None, "version": 0} == memory(service)  # the tombstone came first
    clients["s3"].restore("delete_objects")
    assert service.call("DELETE", USER).status == 204
    assert keys(aws, "raw/acme/alice/") == [] and keys(aws, "history/acme/alice/") == []
    service.drain()  # the items queued before the delete bring nothing back
    assert memory(service)["memory"] is None
    assert {status for status, _ in stored_jobs(aws).values()} == {"skipped"}


# --- SQS -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "refusal",
    [
        lambda request: (_ for _ in ()).throw(
            aws_error("AWS.SimpleQueueService.ServiceUnavailable", "SendMessageBatch")
        ),
        lambda request: {
            "Successful": [],
            "Failed": [
                {"Id": e["Id"], "Code": "InternalError", "SenderFault": False, "Message": "x"}
                for e in request["Entries"]
            ],
        },
    ],
    ids=["SendMessageBatch fails", "every entry failed in a 200"],
)
def test_a_send_sqs_refuses_is_503_the_jobs_fail_and_sending_again_queues_them(
    service, clients, aws, refusal
):
    clients["sqs"].intercept("send_message_batch", lambda **request: refusal(request))
    response = service.call("POST", USER, {"items": ITEMS})
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert service.receive() == []
    assert stored_jobs(aws) == {
        "turn-1": ("failed", "dependency_unavailable"),
        "turn-2": ("failed", "dependency_unavailable"),
    }
    clients["sqs"].restore("send_message_batch")
    again = service.call("POST", USER, {"items": ITEMS})
    assert again.status == 202 and [j["status"] for j in again.body["jobs"]] == ["queued", "queued"]
    assert service.drain() == 2
    assert all(job(service, j["job_id"])["status"] == "completed" for j in again.body["jobs"])
    assert "Porto" in memory(service)["memory"]


def test_a_send_sqs_half_refuses_is_503_and_sending_again_applies_each_item_once(service, clients, aws):
    real = clients["sqs"]._client.send_message_batch

    def second_entry_refused(**request):
        first, second = request["Entries"]
        sent = real(**dict(request, Entries=[first]))
        return sent | {"Failed": [{"Id": second["Id"], "Code": "InternalError", "SenderFault": False}]}

    clients["sqs"].intercept("send_message_batch", second_entry_refused)
    response = service.call("POST", USER, {"items": ITEMS})
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert {status for status, _ in stored_jobs(aws).values()} == {"failed"}
    assert len(service.receive()) == 1  # turn-1 is on the queue: its payload must stay
    assert keys(aws, "raw/acme/alice/")
    clients["sqs"].restore("send_message_batch")
    again = service.call("POST", USER, {"items": ITEMS})
    assert again.status == 202 and [j["status"] for j in again.body["jobs"]] == ["queued", "queued"]
    service.drain()
    assert {status for status, _ in stored_jobs(aws).values()} == {"completed"}
    stored = memory(service)
    assert "Porto" in stored["memory"] and "soap" in stored["memory"]
    assert stored["memory"].count("Porto") == 1  # turn-1, queued twice, applied once


def test_an_index_request_sqs_refuses_beside_the_turns_is_only_logged(service, clients, aws):
    # The facts are stored and the turn queued: vectors are not worth a 503 (the condensation that
    # follows embeds the facts anyway).
    real = clients["sqs"]._client.send_message_batch

    def index_entry_refused(**request):
        kept = [entry for entry in request["Entries"] if entry["Id"] != "index"]
        refused = [entry for entry in request["Entries"] if entry["Id"] == "index"]
        assert refused  # it rides with the turns
        failed = [{"Id": entry["Id"], "Code": "InternalError", "SenderFault": False} for entry in refused]
        return real(**dict(request, Entries=kept)) | {"Failed": failed}

    clients["sqs"].intercept("send_message_batch", index_entry_refused)
    fact = {"id": "pay", "text": "Pays through Stripe.", "infer": False}
    response = service.call("POST", USER, {"items": [fact, *ITEMS]})
    assert response.status == 202
    assert service.drain() == 2
    assert all(job(service, j["job_id"])["status"] == "completed" for j in response.body["jobs"])
    assert "Porto" in memory(service)["memory"]


def test_a_put_whose_history_copy_s3_refuses_is_still_written(service, clients):
    fail(clients["s3"], "put_object", aws_error("SlowDown", "PutObject"), when=under("history/"))
    response = service.call("PUT", USER, {"memory": KEPT, "expected_version": 0})
    assert response.status == 200 and response.body["version"] == 1
    assert memory(service)["memory"] == KEPT
    assert service.call("GET", USER + "/history").body == {"versions": []}
