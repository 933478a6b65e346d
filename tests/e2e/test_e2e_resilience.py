"""The LLM fails, recovers, or is flooded: retries, the DLQ and coalescing, seen from outside.

These tests steer the OpenAI stub, so they run on the local stack only.
"""

import json
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from e2e_support import ASYNC_DEADLINE_S, MARKER, Api, marker, stub_calls_with, wait_for

from hippocampus.contracts import names as schema

pytestmark = pytest.mark.e2e

# The local stack retries a failed condensation within 10 s (docs/architecture.md); a loaded machine
# takes longer to run each attempt, so the deadlines are that plus the suite's generous margin.
RETRY_WITHIN_S = 10


def _dlq_bodies(endpoint: str) -> list[str]:
    sqs = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    url = sqs.get_queue_url(QueueName=schema.resource_name("local", schema.DLQ_NAME))["QueueUrl"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0).get(
        "Messages", []
    )
    return [m["Body"] for m in messages]


def test_an_llm_outage_is_retried_and_recovers(llm, api: Api, tenant: str, user: str) -> None:
    word = marker()
    llm.fail_with(500)
    (job,) = api.ingest(tenant, user, [{"text": f"During the outage {word}."}])
    wait_for(lambda: stub_calls_with(llm, word), what="a first (failing) condensation attempt")
    assert api.job(tenant, job["job_id"])["status"] in {"queued", "processing"}

    llm.recover()
    done = api.wait_job(tenant, job["job_id"], timeout_s=RETRY_WITHIN_S + ASYNC_DEADLINE_S)
    assert done["status"] == "completed", done
    assert done["error"] is None
    assert MARKER.findall(api.memory(tenant, user)["memory"]) == [word]


def test_a_permanent_failure_fails_the_job_after_five_attempts_and_dead_letters_it(
    llm, local_stack, api: Api, tenant: str, user: str
) -> None:
    word = marker()
    llm.fail_with(500)
    (job,) = api.ingest(tenant, user, [{"text": f"Never condensed {word}."}])
    deadline_s = schema.DLQ_MAX_RECEIVE_COUNT * RETRY_WITHIN_S + ASYNC_DEADLINE_S
    done = api.wait_job(tenant, job["job_id"], timeout_s=deadline_s)
    assert done["status"] == "failed", done
    assert done["error"] and done["error"]["code"], done
    # One attempt per delivery (plus the SDK's own quick retry inside each attempt).
    assert stub_calls_with(llm, word) >= schema.DLQ_MAX_RECEIVE_COUNT

    bodies = wait_for(
        lambda: [b for b in _dlq_bodies(local_stack.aws_endpoint) if job["job_id"] in b],
        timeout_s=RETRY_WITHIN_S + ASYNC_DEADLINE_S,
        what="the message in the DLQ",
    )
    assert json.loads(bodies[0])["job_id"] == job["job_id"]
    memory = api.memory(tenant, user)
    assert memory["version"] == 0 and memory["memory"] is None  # a failure never writes a memory

    # The user is not stuck: once the LLM is back, new items are condensed.
    llm.recover()
    later = marker()
    (job,) = api.ingest(tenant, user, [{"text": f"After the failure {later}."}])
    assert api.wait_job(tenant, job["job_id"])["status"] == "completed"
    assert MARKER.findall(api.memory(tenant, user)["memory"]) == [later]


def test_a_burst_for_one_user_is_coalesced(llm, api: Api, tenant: str, user: str) -> None:
    words = [marker() for _ in range(20)]
    jobs = api.ingest(tenant, user, [{"text": f"Turn {i}: {word}."} for i, word in enumerate(words)])
    api.wait_completed(tenant, jobs)
    calls = stub_calls_with(llm, *words)
    # One LLM call per user per batch of up to 10 messages: 20 items, 2 calls (Hippocampus: 20).
    assert calls <= 4, calls
    memory = api.memory(tenant, user)
    assert MARKER.findall(memory["memory"]) == words  # in arrival order, nothing lost
    assert memory["version"] <= calls


def test_a_burst_of_separate_requests_is_coalesced_too(llm, api: Api, tenant: str, user: str) -> None:
    words = [marker() for _ in range(20)]
    # The first item is picked up at once; the others arrive while it is condensed and share calls.
    llm.delay_s = 0.5
    with ThreadPoolExecutor(max_workers=10) as pool:
        jobs = list(pool.map(lambda word: api.ingest(tenant, user, [{"text": f"Turn {word}."}])[0], words))
    api.wait_completed(tenant, jobs)
    calls = stub_calls_with(llm, *words)
    assert calls <= len(words) / 2, calls
    assert sorted(MARKER.findall(api.memory(tenant, user)["memory"])) == sorted(words)
