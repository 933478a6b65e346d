"""`hippocampus events` (client/README.md "events"): each detail type as one line, `--json` as the
events themselves, what was printed deleted, the local stack's queue found by its name on the
endpoint, a deployment needing --queue-url, and a clean stop on Ctrl-C and SIGTERM. SQS is moto's
server on 127.0.0.1, which speaks SQS's API on its port as the local stack's port does."""

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto.server import ThreadedMotoServer

from hippocampus_client.cli import cli
from hippocampus_client.cli_events import event_line

TIME = "2026-12-05T15:30:00Z"
MEMORY_UPDATED = {
    "version": "0",
    "id": "e-1",
    "detail-type": "Memory Updated",
    "source": "hippocampus",
    "account": "123456789012",
    "time": TIME,
    "region": "us-east-1",
    "resources": [],
    "detail": {
        "event_id": "ev1",
        "tenant_id": "acme",
        "user_id": "alice",
        "version": 4,
        "previous_version": 3,
        "generation": 0,
        "word_count": 27,
        "job_ids": ["job-2f9c", "job-3a1b"],
        "updated_at": "2026-12-05T15:30:00.410Z",
    },
}


def event(detail_type: str, **detail: Any) -> dict[str, Any]:
    return MEMORY_UPDATED | {
        "detail-type": detail_type,
        "detail": {"tenant_id": "acme", "user_id": "alice"} | detail,
    }


RECEIPT = {
    "event_id": "ev5",
    "receipt_id": "del_0a1b",
    "generation": 2,
    "requested_at": TIME,
    "completed_at": TIME,
    "erased": {
        "dynamodb": {"memory": 1, "facts": 0, "episodes": 120, "records": 14, "jobs": 1, "job_references": 1},
        "s3": {"raw_objects": 3, "raw_items_blanked": 0, "history_objects": 2, "object_versions": 0},
        "queue": {"messages_skipped": 0, "deferred_turns": 0},
        "vectors": {"facts": 0, "episodes": 120, "records": 14},
    },
}
EVENTS = [
    MEMORY_UPDATED,
    event("Memory Updated", version=1, word_count=1, job_ids=[]),
    event("Records Changed", record_id="rec_1", change="added", category="location", job_id="job-2f9c"),
    event("Records Changed", record_id="rec_0", change="invalidated", category=None, superseded_by="rec_1"),
    event("Records Changed", record_id="rec_9", change="deleted"),
    event(
        "Job Finished", job_id="job-2f9c", item_id="t1", status="completed", memory_version=4, error_code=None
    ),
    event(
        "Job Finished",
        job_id="job-5e",
        item_id=None,
        status="failed",
        memory_version=None,
        error_code="llm_error",
    ),
    event("User Forgotten", **RECEIPT),
    event("Something New", event_id="ev9"),
    # An agent's private scope (docs/api.md "Agent scopes").
    event("Memory Updated", version=2, word_count=5, job_ids=["job-7"], agent_id="research"),
    event(
        "User Forgotten",
        **(RECEIPT | {"erased": {"dynamodb": {"memory": 1, "agent_scopes": 2}}}),
    ),
    event("User Forgotten", **(RECEIPT | {"erased": {"dynamodb": {"memory": 1}}}), agent_id="writer"),
]
LINES = [
    f"{TIME} Memory Updated acme/alice v4, 27 words (job-2f9c, job-3a1b)",
    f"{TIME} Memory Updated acme/alice v1, 1 word (by hand)",
    f"{TIME} Records Changed acme/alice added rec_1 (location, job-2f9c)",
    f"{TIME} Records Changed acme/alice invalidated rec_0 (superseded by rec_1)",
    f"{TIME} Records Changed acme/alice deleted rec_9",
    f"{TIME} Job Finished acme/alice job-2f9c completed v4 item=t1",
    f"{TIME} Job Finished acme/alice job-5e failed error=llm_error",
    f"{TIME} User Forgotten acme/alice receipt del_0a1b generation 2 (1 summary, 120 episodes, 14 records, 1 job, "
    "1 job reference, 3 raw payloads, 2 past summaries)",
    f"{TIME} Something New acme/alice event ev9",
    f"{TIME} Memory Updated acme/alice agent research v2, 5 words (job-7)",
    f"{TIME} User Forgotten acme/alice receipt del_0a1b generation 2 (1 summary, 2 agent scopes)",
    f"{TIME} User Forgotten acme/alice agent writer receipt del_0a1b generation 2 (1 summary)",
]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def sqs(endpoint: str) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


@pytest.fixture
def queue(endpoint: str) -> str:
    return str(sqs(endpoint).create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}")["QueueUrl"])


def send(endpoint: str, queue: str, *bodies: Any) -> None:
    for body in bodies:
        sqs(endpoint).send_message(
            QueueUrl=queue, MessageBody=body if isinstance(body, str) else json.dumps(body)
        )


def left(endpoint: str, queue: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs(endpoint).get_queue_attributes(QueueUrl=queue, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_each_detail_type_is_one_line_with_its_ids_and_counts(endpoint: str, queue: str) -> None:
    send(endpoint, queue, *EVENTS)
    result = run("events", "--queue-url", queue)
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout.splitlines()) == sorted(LINES)  # a standard queue: any order
    assert (result.stderr, left(endpoint, queue)) == ("", 0)  # what was printed is deleted
    assert [event_line(e) for e in EVENTS] == LINES  # each line alone, in order


def test_json_prints_each_event_as_it_came_one_a_line(endpoint: str, queue: str) -> None:
    send(endpoint, queue, *EVENTS[:3])
    result = run("--json", "events", "--queue-url", queue)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and sorted(map(json.loads, lines), key=json.dumps) == sorted(
        EVENTS[:3], key=json.dumps
    )


def test_a_message_that_is_no_event_is_noted_and_deleted(endpoint: str, queue: str) -> None:
    send(endpoint, queue, "not json", {"no": "detail-type"})
    result = run("events", "--queue-url", queue)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.count("not an event, deleted") == 2
    assert left(endpoint, queue) == 0


def test_the_local_stacks_queue_is_found_by_its_name_on_the_endpoint(endpoint: str) -> None:
    local = sqs(endpoint).create_queue(QueueName="hippocampus-dev-events")["QueueUrl"]
    send(endpoint, local, MEMORY_UPDATED)
    result = run("--endpoint", endpoint, "events")  # as --local does with http://127.0.0.1:3000
    assert (result.exit_code, result.stdout) == (0, LINES[0] + "\n"), result.output
    assert left(endpoint, local) == 0


def test_a_local_stack_without_the_queue_is_one_error_line(endpoint: str) -> None:
    sqs(endpoint).delete_queue(QueueUrl=f"{endpoint}/123456789012/hippocampus-dev-events")
    result = run("--endpoint", endpoint, "events")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: not_found (404): no queue hippocampus-dev-events on "), (
        result.stderr
    )


def test_a_local_stack_that_is_not_running_is_one_error_line_naming_it() -> None:
    result = run("--endpoint", "http://127.0.0.1:9", "events")
    assert result.exit_code == 1
    assert "cannot reach http://127.0.0.1:9: is make dev running?" in result.stderr


@pytest.mark.parametrize(
    "options",
    [["--stack", "Hippocampus-dev"], ["--endpoint", "https://abc.execute-api.eu-west-1.amazonaws.com/dev"]],
)
def test_a_deployment_needs_the_url_of_a_queue_subscribed_to_its_bus(options: list[str]) -> None:
    result = run(*options, "events")
    assert result.exit_code == 2 and "--queue-url" in result.stderr


def test_a_queue_url_that_is_none_is_a_usage_error() -> None:
    result = run("events", "--queue-url", "hippocampus-dev-events")
    assert result.exit_code == 2 and "is not a queue URL" in result.stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_follow_prints_as_events_come_and_stops_cleanly_on_a_signal(
    endpoint: str, queue: str, stop: signal.Signals
) -> None:
    program = str(Path(sys.executable).with_name("hippocampus"))  # the console script, as installed
    process = subprocess.Popen(
        [program, "events", "--follow", "--queue-url", queue],
        # As from a shell that ignores Ctrl-C for its background jobs (an xdist worker does too).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # noqa: TID251 - the child inherits PATH
    )
    try:
        send(endpoint, queue, MEMORY_UPDATED)
        assert process.stdout is not None
        assert process.stdout.readline() == LINES[0] + "\n"  # printed as it came, while following
        send(endpoint, queue, EVENTS[5])
        assert process.stdout.readline() == LINES[5] + "\n"
    finally:
        process.send_signal(stop)  # while it waits in a 20 s receive: it stops at once, not after
        out, err = process.communicate(timeout=15)
    assert (process.returncode, out, err) == (0, "", "")
    assert left(endpoint, queue) == 0
