"""What the client sends and how it reads the answers: the routes and bodies of docs/api.md."""

import asyncio
import json
import time
from typing import Any

import httpx2
import pytest
from client_test_servers import (
    Recorder,
    RecordingServer,
    deferred_job_body,
    fake_clock,
    job_body,
    json_answer,
    memory_body,
    mocked,
    mocked_async,
    usage_body,
)

from hippocampus_client import (
    AsyncMemoryClient,
    ConfigurationError,
    HttpTransport,
    Item,
    Job,
    MalformedResponseError,
    MemoryClient,
    TenantUsage,
    WaitTimeoutError,
)


def jobs(count: int) -> httpx2.Response:
    return httpx2.Response(202, json={"jobs": [job_body(f"job-{n}") for n in range(count)]})


def test_a_string_is_one_text_item() -> None:
    recorder = Recorder(jobs(1))
    mocked(recorder, strict=True).add("alice", "User: I sell candles on Shopify.\nAssistant: Nice!")
    request = recorder.requests[0]
    assert (request.method, request.url.path) == ("POST", "/v1/tenants/acme/users/alice/memory")
    assert request.headers["content-type"] == "application/json"
    assert recorder.bodies() == [
        {"items": [{"text": "User: I sell candles on Shopify.\nAssistant: Nice!"}], "upsert": True}
    ]


def test_openai_messages_become_pairs_without_the_system_prompt() -> None:
    messages = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "I sell candles."},
        {"role": "assistant", "content": [{"type": "text", "text": "Nice!"}]},
        {"role": "user", "content": "On Shopify."},
        {"role": "user", "content": "Since 2020."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]},
    ]
    recorder = Recorder(jobs(1))
    mocked(recorder, strict=True).add("alice", messages, user_name="Alice", metadata={"channel": "web"})
    (item,) = recorder.bodies()[0]["items"]
    assert item == {
        "user_assistant_pairs": [
            {"user": "I sell candles.", "assistant": "Nice!"},
            {"user": "On Shopify.\nSince 2020.", "assistant": ""},
        ],
        "user_name": "Alice",
        "metadata": {"channel": "web"},
    }


def test_a_long_conversation_is_split_at_the_api_limit_of_fifty_pairs() -> None:
    messages = [{"role": role, "content": f"{role} {n}"} for n in range(60) for role in ("user", "assistant")]
    recorder = Recorder(jobs(2))
    mocked(recorder, strict=True).add("alice", messages, id="chat-9")
    items = recorder.bodies()[0]["items"]
    assert [len(item["user_assistant_pairs"]) for item in items] == [50, 10]
    assert [item["id"] for item in items] == ["chat-9-1", "chat-9-2"]


def test_items_are_sent_as_given_with_upsert_and_the_idempotency_key() -> None:
    recorder = Recorder(jobs(2))
    items = [Item(id="pref", text="Prefers email.", infer=False), {"id": "t1", "text": "Moved to Lyon."}]
    mocked(recorder, strict=True).add("alice", items, upsert=False, idempotency_key="turn-42", title="Note")
    assert recorder.requests[0].headers["idempotency-key"] == "turn-42"
    assert recorder.bodies()[0] == {
        "items": [
            {"id": "pref", "text": "Prefers email.", "infer": False, "title": "Note"},
            {"id": "t1", "text": "Moved to Lyon.", "title": "Note"},
        ],
        "upsert": False,
    }


def test_ids_are_percent_encoded_and_one_the_api_refuses_is_never_sent() -> None:
    recorder = Recorder(httpx2.Response(200, json=memory_body()))
    memory = mocked(recorder)
    memory.get("alice@example.com")
    memory.job("job:7")
    assert memory.get("../../jobs/x") is None  # tests/client/test_client_hostile.py: every id, every method
    assert [r.url.raw_path.decode() for r in recorder.requests] == [
        "/v1/tenants/acme/users/alice%40example.com/memory",
        "/v1/tenants/acme/jobs/job%3A7",
    ]


def test_query_and_context_send_only_what_was_given() -> None:
    recorder = Recorder(
        httpx2.Response(
            200, json={"memory": "m", "version": 1, "results": [{"type": "fact", "id": "p", "text": "t"}]}
        ),
        httpx2.Response(200, json={"context": "What you know about this user:\nm", "word_count": 6}),
    )
    memory = mocked(recorder)
    answer = memory.query("alice", "payments?", top_k=3, metadata_filters={"topic": ["billing"]})
    context = memory.context("alice", "payments?", max_words=50)
    assert [r.url.path for r in recorder.requests] == [
        "/v1/tenants/acme/users/alice/memory/query",
        "/v1/tenants/acme/users/alice/memory/context",
    ]
    assert recorder.bodies() == [
        {"query": "payments?", "top_k": 3, "metadata_filters": {"topic": ["billing"]}},
        {"max_words": 50, "query": "payments?"},
    ]
    assert answer is not None and [r.id for r in answer.results] == ["p"]
    assert context is not None and context.context.startswith("What you know")


def test_put_sends_the_expected_version_and_returns_the_etag() -> None:
    answer = httpx2.Response(200, json=memory_body("New text.", 4), headers={"ETag": '"4"'})
    recorder = Recorder(answer)
    memory = mocked(recorder).put("alice", "New text.", 3)
    assert recorder.requests[0].method == "PUT"
    assert recorder.bodies() == [{"memory": "New text.", "expected_version": 3}]
    assert memory is not None and (memory.version, memory.etag) == (4, '"4"')


def test_answers_with_fields_this_client_does_not_know_still_parse() -> None:
    body = memory_body() | {"sentiment": "happy", "facts": [{"id": "f", "text": "t", "embedding_v": 2}]}
    memory = mocked(lambda request: httpx2.Response(200, json=body)).get_full("alice")
    assert memory is not None and memory.memory == "Alice sells candles."
    assert memory.model_extra == {"sentiment": "happy"}


def test_export_follows_every_page_into_one_document() -> None:
    first = {"tenant_id": "acme", "user_id": "alice", "memory": memory_body(), "jobs": [job_body("j1")]}
    second = {"tenant_id": "acme", "user_id": "alice", "memory": None, "jobs": [job_body("j2")]}
    recorder = Recorder(
        httpx2.Response(200, json=first | {"next_cursor": "c1"}),
        httpx2.Response(200, json=second | {"next_cursor": None}),
    )
    document = mocked(recorder).export("alice")
    assert [r.url.params.get("cursor") for r in recorder.requests] == [None, "c1"]
    assert document is not None and [job.job_id for job in document.jobs] == ["j1", "j2"]
    assert document.memory is not None and document.memory.version == 1


def test_export_merges_the_records_of_every_page() -> None:
    def record(record_id: str) -> dict[str, Any]:
        return {"id": record_id, "text": f"Statement {record_id}.", "category": "location"}

    first = {"tenant_id": "acme", "user_id": "alice", "memory": memory_body(), "records": [record("r1")]}
    second = {"tenant_id": "acme", "user_id": "alice", "memory": None, "records": [record("r2")]}
    third = {"tenant_id": "acme", "user_id": "alice", "memory": None, "jobs": [job_body("j3")]}
    recorder = Recorder(
        httpx2.Response(200, json=first | {"next_cursor": "c1"}),
        httpx2.Response(200, json=second | {"next_cursor": "c2"}),
        httpx2.Response(200, json=third | {"next_cursor": None}),
    )
    document = mocked(recorder).export("alice")
    assert document is not None and [r.id for r in document.records] == ["r1", "r2"]
    assert [job.job_id for job in document.jobs] == ["j3"] and document.next_cursor is None


def test_facts_follow_the_pages_and_history_sends_its_limit() -> None:
    fact = {"id": "f", "text": "t"}
    recorder = Recorder(
        httpx2.Response(200, json={"facts": [fact, fact], "next_cursor": "c"}),
        httpx2.Response(200, json={"facts": [fact], "next_cursor": None}),
        httpx2.Response(200, json={"versions": [{"version": 2, "memory": "m", "job_ids": []}]}),
    )
    memory = mocked(recorder)
    assert len(memory.facts("alice") or []) == 3
    assert [v.version for v in memory.history("alice", limit=5) or []] == [2]
    assert [dict(r.url.params) for r in recorder.requests] == [
        {"limit": "100"},
        {"limit": "100", "cursor": "c"},
        {"limit": "5"},
    ]


def test_wait_polls_each_job_until_it_is_final_and_keeps_the_order() -> None:
    states = {"job-a": ["queued", "processing", "completed"], "job-b": ["skipped"]}

    def poll(request: httpx2.Request) -> httpx2.Response:
        job_id = request.url.path.rsplit("/", 1)[1]
        status = states[job_id].pop(0) if len(states[job_id]) > 1 else states[job_id][0]
        return httpx2.Response(200, json=job_body(job_id, status))

    done = mocked(poll).wait([Job(job_id="job-b", status="queued"), "job-a"], interval=0.01)
    assert [(job.job_id, job.status) for job in done or []] == [("job-b", "skipped"), ("job-a", "completed")]
    assert asyncio.run(mocked_async(poll).wait("job-a", interval=0.01)) is not None


def test_a_deferred_job_is_polled_on_until_it_is_final(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Job(job_id="job-a", status="deferred").final is False
    clock = fake_clock(monkeypatch)
    answers = [deferred_job_body("job-a")] * 3 + [job_body("job-a", "completed")]

    def poll(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answers.pop(0) if len(answers) > 1 else answers[0])

    # The pauses between polls are the fake clock's: the test waits for nothing.
    done = mocked(poll).wait("job-a", timeout=60, interval=10)
    assert [(job.status, job.error) for job in done or []] == [("completed", None)]
    assert clock.slept == [10] * 3
    answers[:] = [deferred_job_body("job-a"), job_body("job-a", "completed")]
    done_async = asyncio.run(mocked_async(poll).wait("job-a", interval=0))
    assert [job.status for job in done_async or []] == ["completed"]


def test_a_job_still_deferred_when_the_wait_ends_is_not_final(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch)
    polls: list[str] = []

    def deferred(request: httpx2.Request) -> httpx2.Response:
        polls.append(request.url.path)
        return httpx2.Response(200, json=deferred_job_body())

    with pytest.raises(WaitTimeoutError, match="1 of 1 jobs not final after 30"):
        mocked(deferred, strict=True).wait("job-1", timeout=30, interval=5)
    assert clock.slept == [5] * 6 and len(polls) == 7  # polled to the end: deferred is not final
    assert mocked(deferred).wait("job-1", timeout=30, interval=5) is None
    assert mocked(job_states("deferred")).add("alice", "hi", wait=30) is None


def test_a_wait_that_sees_deferred_keeps_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch)
    answer = job_states("queued", "deferred", "deferred", "queued", "processing", "completed")
    done = mocked(answer).add("alice", "User: I sell candles.\nAssistant: Nice!", wait=True)
    assert [job.status for job in done or []] == ["completed"]
    assert clock.slept == [0.25] * 5  # `add(wait=True)`'s interval, five pauses, none of them real


def test_usage_reads_the_tenants_route_with_both_clients() -> None:
    counts = {"calls": 12, "prompt_tokens": 40_100, "completion_tokens": 8_110, "deferred_jobs": 3}
    body = usage_body(budget=200_000, **counts)
    requests: list[httpx2.Request] = []

    def recorder(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, json=body)

    usage = mocked(recorder).usage()
    assert usage == TenantUsage(
        tenant_id="acme", day="2026-12-05", calls=12, prompt_tokens=40_100, completion_tokens=8_110,
        tokens=48_210, budget=200_000, remaining=151_790, deferred_jobs=3, resets_at="2026-12-06T00:00:00Z",
    )  # fmt: skip
    assert asyncio.run(mocked_async(recorder).usage()) == usage
    assert [(r.method, r.url.raw_path.decode(), r.content) for r in requests] == [
        ("GET", "/v1/tenants/acme/usage", b""),
    ] * 2
    transport = HttpTransport("http://hippocampus.test", transport=httpx2.MockTransport(recorder))
    MemoryClient(tenant="acme@eu", transport=transport).usage()
    asyncio.run(AsyncMemoryClient(tenant="acme@eu", transport=transport).usage())
    assert [r.url.raw_path.decode() for r in requests[2:]] == ["/v1/tenants/acme%40eu/usage"] * 2


def test_usage_without_a_budget_and_an_answer_that_does_not_say() -> None:
    body = usage_body(calls=1, prompt_tokens=9)
    unlimited = mocked(lambda request: httpx2.Response(200, json=body)).usage()
    assert unlimited is not None
    assert (unlimited.budget, unlimited.remaining, unlimited.tokens) == (None, None, 9)
    silent = usage_body(budget=10)
    del silent["budget"]  # read as None, it would say "no budget": malformed instead
    memory = mocked(lambda request: httpx2.Response(200, json=silent), strict=True)
    with pytest.raises(MalformedResponseError, match="budget"):
        memory.usage()
    assert mocked(lambda request: httpx2.Response(200, json=silent)).usage() is None


def test_the_environment_configures_endpoint_and_tenant_and_arguments_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with RecordingServer(lambda method, path, body: json_answer(200, memory_body())) as server:
        monkeypatch.setenv("HIPPOCAMPUS_ENDPOINT", server.url)
        monkeypatch.setenv("HIPPOCAMPUS_TENANT", "from-env")
        assert MemoryClient().get("alice") == "Alice sells candles."
        assert MemoryClient(tenant="acme").get("bob") == "Alice sells candles."
    assert [path for _, path, _ in server.requests] == [
        "/v1/tenants/from-env/users/alice/memory",
        "/v1/tenants/acme/users/bob/memory",
    ]


def test_a_client_without_endpoint_or_tenant_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HIPPOCAMPUS_ENDPOINT", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_TENANT", raising=False)
    with pytest.raises(ConfigurationError, match="HIPPOCAMPUS_ENDPOINT"):
        MemoryClient(tenant="acme")
    with pytest.raises(ConfigurationError, match="HIPPOCAMPUS_TENANT"):
        MemoryClient(endpoint="http://127.0.0.1:3000")
    with pytest.raises(ConfigurationError, match="http"):
        MemoryClient(endpoint="ftp://example.com", tenant="acme")


def job_states(*statuses: str) -> Any:
    """An ingest that answers one queued job, whose polls then go through `statuses`."""
    polls = list(statuses)

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            return jobs(1)
        status = polls.pop(0) if len(polls) > 1 else polls[0]
        return httpx2.Response(200, json=job_body(request.url.path.rsplit("/", 1)[1], status))

    return answer


def test_add_with_wait_sends_now_and_returns_the_jobs_once_final() -> None:
    requests: list[httpx2.Request] = []
    answer = job_states("queued", "processing", "completed")

    def record(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return answer(request)

    done = mocked(record).add("alice", "User: I sell candles.\nAssistant: Nice!", wait=True)
    assert [(job.job_id, job.status) for job in done or []] == [("job-0", "completed")]
    assert [(r.method, r.url.path) for r in requests] == [
        ("POST", "/v1/tenants/acme/users/alice/memory"),
        *[("GET", "/v1/tenants/acme/jobs/job-0")] * 3,
    ]
    done_async = asyncio.run(mocked_async(job_states("queued", "completed")).add("alice", "hi", wait=True))
    assert [job.status for job in done_async or []] == ["completed"]


def test_add_with_wait_is_none_when_the_jobs_are_not_final_in_time_and_strict_raises() -> None:
    started = time.monotonic()
    assert mocked(job_states("queued")).add("alice", "hi", wait=0.3) is None
    assert time.monotonic() - started < 2
    with pytest.raises(WaitTimeoutError):
        mocked(job_states("queued"), strict=True).add("alice", "hi", wait=0.3)
    with pytest.raises(WaitTimeoutError):
        asyncio.run(mocked_async(job_states("queued"), strict=True).add("alice", "hi", wait=0.3))


def test_add_with_wait_goes_after_what_earlier_adds_queued() -> None:
    sent: list[Any] = []
    answer = job_states("completed")

    def record(request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            sent.append(json.loads(request.content)["items"][0]["text"])
        return answer(request)

    memory = mocked(record)
    memory.add("alice", "first")
    assert memory.add("alice", "second", wait=True) is not None
    assert sent == ["first", "second"]
