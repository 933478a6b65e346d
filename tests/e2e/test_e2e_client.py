"""The Python client (client/README.md) against the local stack over HTTP, or a deployed stack
(signed with SigV4) when MEMORY_API_URL is set: the calls a host application makes."""

import asyncio
from typing import Any

import pytest
from e2e_support import ASYNC_DEADLINE_S, Api, marker, wait_for

from hippocampus_client import (
    AsyncMemoryClient,
    InvokeTransport,
    Item,
    MemoryClient,
    NotFoundError,
    VersionConflictError,
)

pytestmark = pytest.mark.e2e
# The product's read default is 3 s; a shared test machine gets more room for the strict checks.
ROOM_S = 20.0


def test_a_turn_added_strictly_is_condensed_into_the_summary(
    llm: Any, api: Api, tenant: str, user: str
) -> None:
    word = marker()
    conversation = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": f"I sell handmade candles, reference {word}."},
        {"role": "assistant", "content": "Nice to meet you!"},
    ]
    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        jobs = memory.add(user, conversation, id="turn-1", user_name="Alice")
        assert jobs is not None and [(job.item_id, job.status) for job in jobs] == [("turn-1", "queued")]
        done = memory.wait(jobs, timeout=ASYNC_DEADLINE_S)
        assert done is not None and done[0].status == "completed"
        summary = memory.get(user)
        assert summary is not None and word in summary
        full = memory.get_full(user)
        assert (
            full is not None and full.version == done[0].memory_version and full.etag == f'"{full.version}"'
        )
        history = memory.history(user)
        assert history is not None and history[0].job_ids == [jobs[0].job_id]


def test_query_and_context_recall_what_was_added(api: Api, tenant: str, user: str) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with AsyncMemoryClient(
            endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S
        ) as memory:
            items = [
                Item(id="pay", text="Pays every supplier through Stripe invoices.", infer=False),
                {"id": "t1", "text": "Orders ship to Canada now."},
            ]
            jobs = await memory.add(user, items)
            assert jobs is not None and [job.status for job in jobs] == ["completed", "queued"]
            await memory.wait(jobs, timeout=ASYNC_DEADLINE_S)
            answer = await memory.query(user, "supplier invoices", top_k=5, types=["fact"])
            context = await memory.context(user, "How are supplier invoices paid?", max_words=100)
            return answer, context, await memory.facts(user)

    answer, context, facts = asyncio.run(scenario())
    assert [result.id for result in answer.results] == ["pay"]
    assert "Stripe" in context.context and context.word_count <= 100
    assert any(source.id == "pay" for source in context.sources)
    assert [fact.id for fact in facts] == ["pay"]


def test_a_deleted_user_reads_as_never_seen(api: Api, tenant: str, user: str) -> None:
    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        written = memory.put(user, "Alice sells candles.", 0)
        assert written is not None and written.version == 1
        with pytest.raises(VersionConflictError):
            memory.put(user, "A stale edit.", 0)
        memory.add(user, {"id": "pref", "text": "Prefers email.", "infer": False})
        assert memory.get(user) == "Alice sells candles."
        receipt_id = memory.forget(user)
        assert receipt_id is not None and receipt_id.startswith("del_")
        receipt = memory.deletion(user, receipt_id)  # what went, in counts
        assert (
            receipt is not None and receipt.erased.dynamodb.memory == 1 and receipt.erased.dynamodb.facts == 1
        )
        assert memory.delete(user) is True  # again: nothing left to erase
        assert memory.get(user) is None
        after = memory.get_full(user)
        assert after is not None and (after.version, after.facts) == (0, [])
        with pytest.raises(NotFoundError):
            memory.delete_fact(user, "pref")
    lenient = MemoryClient(endpoint=api.base_url, tenant=tenant)
    assert lenient.delete_fact(user, "pref") is False
    lenient.close()


def test_the_five_line_example_stores_in_the_background(llm: Any, api: Api, tenant: str, user: str) -> None:
    word = marker()
    memory = MemoryClient(endpoint=api.base_url, tenant=tenant)
    assert memory.add(user, f"User: I sell candles on Shopify ({word}).\nAssistant: Nice!") is None
    assert memory.flush(10)
    assert memory.writer_stats().sent == 1
    summary = wait_for(lambda: memory.get(user), what="the summary", diagnostics=api.diagnostics)
    assert word in summary
    memory.close()


def test_the_invoke_transport_runs_the_functions_through_the_local_invoke_api(
    local_stack: Any, llm: Any, tenant: str, user: str
) -> None:
    """The same calls over `lambda:Invoke`: the local stack answers Lambda's Invoke API on its
    port (docs/api.md "Direct invocation"), so the client runs the real handlers as in AWS."""
    if local_stack is None:
        pytest.skip("the Invoke API is the local stack's")
    word = marker()
    transport = InvokeTransport.local(local_stack.url)
    with MemoryClient(tenant=tenant, transport=transport, strict=True, timeout=ROOM_S) as memory:
        jobs = memory.add(user, [{"id": "pay", "text": f"Pays through Stripe ({word}).", "infer": False}])
        assert jobs is not None and jobs[0].status == "completed"
        full = memory.get_full(user)
        assert full is not None and [fact.text for fact in full.facts] == [f"Pays through Stripe ({word})."]
        answer = memory.query(user, "Stripe", types=["fact"])
        assert answer is not None and [result.id for result in answer.results] == ["pay"]
        with pytest.raises(NotFoundError):
            memory.delete_fact(user, "unknown")
        receipt_id = memory.forget(user)  # the receipt's id comes in the invocation's answer
        assert receipt_id is not None
        receipt = memory.deletion(user, receipt_id)
        assert receipt is not None and receipt.erased.dynamodb.facts == 1
