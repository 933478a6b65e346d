"""The condenser through its real handler: ordering, exactly-once, conflicts, deletes and failures."""

import boto3
import pytest

from hippocampus import wiring
from hippocampus.contracts.ports import LlmResult
from hippocampus.contracts.prompt_format import NEW_CONTENT_BEGIN, NEW_CONTENT_END

USER = "/v1/tenants/acme/users/alice/memory"
BOB = "/v1/tenants/acme/users/bob/memory"


class FakeLlm:
    """Answers with the new content appended to the old memory; hooks let a test act mid-call."""

    name = "fake"

    def __init__(self):
        self.prompts: list[str] = []
        self.during_call = None
        self.error: Exception | None = None

    def complete(
        self, system: str, prompt: str, timeout_s: float | None = None, schema: object = None
    ) -> LlmResult:
        self.prompts.append(prompt)
        if self.during_call:
            hook, self.during_call = self.during_call, None
            hook()
        if self.error:
            raise self.error
        new = prompt.split(NEW_CONTENT_BEGIN, 1)[1].split(NEW_CONTENT_END, 1)[0].strip()
        new = "\n".join(line for line in new.splitlines() if not line.startswith("Item id:"))
        old = prompt.split("<<<OLD_MEMORY>>>", 1)[1].split("<<<END_OLD_MEMORY>>>", 1)[0].strip()
        merged = " ".join(part for part in (old, new) if part)
        return LlmResult(merged, prompt_tokens=len(prompt.split()), completion_tokens=len(merged.split()))


@pytest.fixture
def llm(service, monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_WORDS", "200")
    wiring.reset()
    fake = FakeLlm()
    service.condense_with(fake)
    return fake


def ingest(service, *texts, user="alice"):
    items = [{"text": text} for text in texts]
    response = service.call("POST", f"/v1/tenants/acme/users/{user}/memory", {"items": items})
    assert response.status == 202, response.body
    return [job["job_id"] for job in response.body["jobs"]]


def job(service, job_id):
    return service.call("GET", f"/v1/tenants/acme/jobs/{job_id}").body


def memory(service, user="alice"):
    return service.call("GET", f"/v1/tenants/acme/users/{user}/memory").body


def test_chain_of_five_condensations_keeps_every_fact(service):
    # The offline provider: deterministic, no network.
    facts = [
        "Alice sells candles.",
        "Alice lives in Lisbon.",
        "Alice prefers email.",
        "Alice uses Shopify.",
        "Alice plans a winter sale.",
    ]
    for fact in facts:
        ingest(service, fact)
        service.drain()
    summary = memory(service)["memory"]
    assert memory(service)["version"] == 5
    for word in ("candles", "Lisbon", "email", "Shopify", "winter"):
        assert word in summary


def test_one_llm_call_per_user_per_batch_in_order(service, llm):
    ids = ingest(service, "First fact.", "Second fact.", "Third fact.")
    ingest(service, "Bob fact.", user="bob")
    service.drain()
    assert len(llm.prompts) == 2
    alice_prompt = next(p for p in llm.prompts if "First" in p)
    assert alice_prompt.index("First") < alice_prompt.index("Second") < alice_prompt.index("Third")
    assert memory(service)["version"] == 1
    assert {job(service, i)["memory_version"] for i in ids} == {1}
    assert "Bob" not in memory(service)["memory"] and "First" not in memory(service, "bob")["memory"]


def test_redelivered_record_makes_no_second_llm_call(service, llm):
    ingest(service, "Alice sells candles.")
    messages = service.receive()
    assert service.deliver(messages) == set()
    assert service.deliver(messages) == set()  # SQS delivered it again
    assert len(llm.prompts) == 1
    assert memory(service)["version"] == 1
    history = service.call("GET", USER + "/history").body["versions"]
    assert len(history) == 1


def test_concurrent_writer_loses_the_condition_and_retries(service, llm):
    service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    ingest(service, "Alice opened a shop in Porto.")
    # A manual edit lands while the LLM is thinking on version 1.
    llm.during_call = lambda: service.call(
        "PUT", USER, {"memory": "Alice sells soap.", "expected_version": 1}
    )
    service.drain()
    assert len(llm.prompts) == 2  # condensed again on top of the winner
    final = memory(service)
    assert final["version"] == 3
    assert "soap" in final["memory"] and "Porto" in final["memory"]


def test_delete_during_condensation_brings_nothing_back(service, llm):
    [job_id] = ingest(service, "Alice sells candles.")
    llm.during_call = lambda: service.call("DELETE", USER)
    service.drain()
    assert memory(service)["memory"] is None
    assert service.call("GET", USER + "/history").body == {"versions": []}
    assert job(service, job_id)["status"] == "skipped"


def test_items_queued_before_a_delete_are_skipped(service, llm):
    [job_id] = ingest(service, "Alice sells candles.")
    assert service.call("DELETE", USER).status == 204
    service.drain()
    assert llm.prompts == []
    assert memory(service)["memory"] is None
    assert job(service, job_id)["status"] == "skipped"


def test_llm_failure_keeps_memory_and_fails_the_job_after_the_last_attempt(service, llm):
    service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    [job_id] = ingest(service, "Alice moved to Porto.")
    llm.error = TimeoutError("LLM timed out")
    messages = service.receive()
    assert service.deliver(messages, receive_count=1) == {messages[0]["MessageId"]}
    retrying = job(service, job_id)
    assert retrying["status"] == "queued" and retrying["error"]["code"]
    assert service.deliver(messages, receive_count=5) == {messages[0]["MessageId"]}
    failed = job(service, job_id)
    assert failed["status"] == "failed" and failed["error"]["message"]
    assert memory(service)["memory"] == "Alice sells candles." and memory(service)["version"] == 1


def test_an_empty_llm_answer_keeps_the_memory_and_the_item_is_retried(service, llm):
    service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    [job_id] = ingest(service, "Alice moved to Porto.")
    llm.complete = lambda system, prompt, timeout_s=None, schema=None: LlmResult("   ")
    messages = service.receive()
    assert service.deliver(messages, receive_count=1) == {messages[0]["MessageId"]}
    retrying = job(service, job_id)
    assert retrying["status"] == "queued" and retrying["error"]["code"] == "empty_llm_answer"
    assert service.deliver(messages, receive_count=5) == {messages[0]["MessageId"]}
    assert job(service, job_id)["status"] == "failed"
    assert memory(service)["memory"] == "Alice sells candles." and memory(service)["version"] == 1


def test_one_users_failure_does_not_block_another(service, llm):
    ingest(service, "Alice fact.")
    ingest(service, "Bob fact.", user="bob")
    messages = service.receive()
    original = llm.complete

    def fail_for_alice(system, prompt, timeout_s=None, schema=None):
        if "Alice" in prompt:
            raise ConnectionError("boom")
        return original(system, prompt, timeout_s)

    llm.complete = fail_for_alice
    failed = service.deliver(messages)
    assert len(failed) == 1
    assert memory(service, "bob")["version"] == 1 and memory(service)["version"] == 0


def test_unreadable_message_is_reported_failed(service, aws):
    sqs = boto3.client("sqs")
    sqs.send_message(
        QueueUrl=aws.queue_url, MessageBody="not json", MessageGroupId="g", MessageDeduplicationId="d"
    )
    messages = service.receive()
    assert service.deliver(messages) == {messages[0]["MessageId"]}


def test_failed_job_can_be_sent_again(service, llm):
    item = {"id": "turn-7", "text": "Alice moved to Porto."}
    [job_id] = [j["job_id"] for j in service.call("POST", USER, {"items": [item]}).body["jobs"]]
    llm.error = TimeoutError("down")
    service.deliver(service.receive(), receive_count=5)
    assert job(service, job_id)["status"] == "failed"
    llm.error = None
    again = service.call("POST", USER, {"items": [item]}).body["jobs"][0]
    assert (
        again["job_id"] == job_id
        and again["status"] == "queued"
        and job(service, job_id)["status"] == "queued"
    )
    service.drain()
    assert job(service, job_id)["status"] == "completed"


def test_custom_prompt_template_is_used(service, llm, monkeypatch):
    monkeypatch.setenv(
        "MEMORY_CONDENSE_PROMPT",
        "Keep {{MAX_WORDS}} words for {{USER_NAME}}.\n{{OLD_MEMORY}}\n{{NEW_CONTENT}}",
    )
    wiring.reset()
    service.condense_with(llm)
    service.call("POST", USER, {"items": [{"text": "Alice sells candles.", "user_name": "Alice"}]})
    service.drain()
    # The user's name is fenced as data wherever the template puts it.
    assert llm.prompts[0].startswith("Keep 200 words for <<<USER_NAME>>>\nAlice\n<<<END_USER_NAME>>>.")


def test_unknown_placeholder_fails_the_cold_start(aws, monkeypatch):
    from hippocampus.contracts.errors import ConfigurationError
    from tests.support.lambda_harness import load_handler

    monkeypatch.setenv("MEMORY_CONDENSE_PROMPT", "{{NEW_CONTENT}} {{MOOD}}")
    wiring.reset()
    with pytest.raises(ConfigurationError, match=r"MEMORY_CONDENSE_PROMPT.*MOOD"):
        load_handler("condenser")


def test_a_failed_job_redriven_from_the_dlq_completes(service, llm):
    [job_id] = ingest(service, "Alice moved to Porto.")
    messages = service.receive()
    llm.error = TimeoutError("down")
    service.deliver(messages, receive_count=5)
    assert job(service, job_id)["status"] == "failed"
    llm.error = None
    assert service.deliver(messages, receive_count=1) == set()  # an operator redrove the DLQ
    assert job(service, job_id)["status"] == "completed" and "Porto" in memory(service)["memory"]


def test_users_past_the_time_left_are_deferred_not_failed(service, llm):
    from tests.support.lambda_harness import Context

    [alice_job] = ingest(service, "Alice fact.")
    [bob_job] = ingest(service, "Bob fact.", user="bob")
    messages = service.receive()
    # Time for one user's LLM call (20 s timeout + 5 s margin), not for a second user's worst case.
    failed = service.deliver(messages, context=Context(remaining_ms=30_000))
    assert len(failed) == 1 and len(llm.prompts) == 1  # the first user always runs
    deferred = bob_job if job(service, alice_job)["status"] == "completed" else alice_job
    assert job(service, deferred) == job(service, deferred) | {"status": "queued", "error": None}
    assert service.drain() == 1 and job(service, deferred)["status"] == "completed"


def test_payload_gone_without_a_delete_fails_the_job_with_a_reason(service, llm, aws):
    import boto3

    [job_id] = ingest(service, "Alice fact.")
    s3 = boto3.client("s3")
    for obj in s3.list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/")["Contents"]:
        s3.delete_object(Bucket=aws.bucket_name, Key=obj["Key"])  # expired by the lifecycle rule
    assert service.drain() == 1
    failed = job(service, job_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == "payload_missing"
    assert llm.prompts == []


def test_a_missing_api_key_fails_the_cold_start(aws, monkeypatch):
    from hippocampus.contracts.errors import ConfigurationError
    from tests.support.lambda_harness import load_handler

    monkeypatch.setenv("MEMORY_LLM_PROVIDER", "openai")
    wiring.reset()
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        load_handler("condenser")


def test_a_record_deferred_on_its_last_receive_fails_its_job_and_can_be_sent_again(service, llm):
    from tests.support.lambda_harness import Context

    items = {
        path: {"id": "turn-1", "text": f"{name} fact."} for path, name in ((USER, "Alice"), (BOB, "Bob"))
    }
    jobs = {
        path: service.call("POST", path, {"items": [item]}).body["jobs"][0]["job_id"]
        for path, item in items.items()
    }
    messages = service.receive()
    context = Context(remaining_ms=60_000)
    # The first user's LLM call takes 40 s: what is left cannot fit even one more call.
    llm.during_call = lambda: setattr(context, "remaining_ms", context.remaining_ms - 40_000)
    assert len(service.deliver(messages, receive_count=5, context=context)) == 1
    [deferred] = [path for path, job_id in jobs.items() if job(service, job_id)["status"] != "completed"]
    stuck = job(service, jobs[deferred])
    assert stuck["status"] == "failed" and stuck["error"]["code"] == "condensation_timeout"
    again = service.call("POST", deferred, {"items": [items[deferred]]}).body["jobs"][0]
    assert again["job_id"] == jobs[deferred] and again["status"] == "queued"
    service.drain()  # the new message (the harness keeps the old one too: it never reaches a DLQ here)
    assert job(service, jobs[deferred])["status"] == "completed"


def test_every_llm_call_is_capped_by_the_invocation_time_left(service, llm):
    from tests.support.lambda_harness import Context

    seen: list[float | None] = []
    original = llm.complete
    llm.complete = lambda system, prompt, timeout_s=None, schema=None: (
        seen.append(timeout_s) or original(system, prompt)
    )
    ingest(service, "Alice fact.")
    service.deliver(service.receive(), context=Context(remaining_ms=50_000))
    [timeout_s] = seen
    assert timeout_s is not None and 40 < timeout_s <= 45  # the time left less the 5 s I/O margin


def test_a_summary_of_huge_words_is_held_to_the_character_bound(service, llm):
    giant = "x" * 25_000
    llm.complete = lambda system, prompt, timeout_s=None, schema=None: LlmResult(" ".join([giant] * 20))
    [job_id] = ingest(service, "Alice fact.")
    service.drain()
    stored = memory(service)
    assert job(service, job_id)["status"] == "completed"
    assert 0 < len(stored["memory"]) <= 200 * 12  # MEMORY_MAX_WORDS is 200 here


def test_a_put_over_the_character_bound_is_refused_naming_memory(service):
    response = service.call("PUT", USER, {"memory": " ".join(["y" * 100] * 10), "expected_version": 0})
    assert response.status == 422, response.body
    assert response.body["error"]["code"] == "limit_exceeded"
    assert [detail["field"] for detail in response.body["error"]["details"]] == ["memory"]
    assert memory(service)["version"] == 0


def test_one_llm_call_for_a_burst_of_one_item_requests(service, llm):
    """The first message's condensation takes the turns queued behind it (read from the user's
    index); their own messages, delivered after, find them applied."""
    jobs = [ingest(service, f"Alice fact number {i}.")[0] for i in range(6)]
    first = service.receive(max_messages=1)
    assert service.deliver(first) == set()
    assert len(llm.prompts) == 1 and all(f"number {i}" in llm.prompts[0] for i in range(6))
    assert [job(service, job_id)["status"] for job_id in jobs] == ["completed"] * 6
    service.drain()  # the five other messages
    assert len(llm.prompts) == 1 and memory(service)["version"] == 1
