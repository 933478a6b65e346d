"""`hippocampus-mcp` (client/README.md, "MCP server") against the real API: the local stack, or a
deployed stack when MEMORY_API_URL is set. The SDK's own client calls the tools in process."""

from typing import Any

import anyio
import pytest
from e2e_support import Api, marker
from mcp import Client

from hippocampus_client import MemoryClient
from hippocampus_client.mcp_server import build_server

pytestmark = pytest.mark.e2e
ROOM_S = 20.0  # a shared test machine gets more room than the product's 3 s


def test_a_fact_remembered_through_mcp_is_recalled_and_forgotten(api: Api, tenant: str, user: str) -> None:
    word = marker()
    text = f"Pays every supplier through Stripe, reference {word}."

    async def scenario(memory: MemoryClient) -> list[Any]:
        async with Client(build_server(memory)) as session:
            stored = await session.call_tool("remember", {"user_id": user, "text": text, "fact_id": "pay"})
            found = await session.call_tool("recall", {"user_id": user, "query": f"supplier {word}"})
            forgotten = await session.call_tool("forget", {"user_id": user, "fact_id": "pay"})
            again = await session.call_tool("forget", {"user_id": user, "fact_id": "pay"})
            return [stored, found, forgotten, again]

    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        stored, found, forgotten, again = anyio.run(scenario, memory)
    assert stored.structured_content is not None and stored.structured_content["final"] is True
    assert found.structured_content is not None
    assert [(r["type"], r["id"]) for r in found.structured_content["results"]] == [("fact", "pay")]
    assert found.structured_content["results"][0]["text"] == text
    assert forgotten.structured_content == {
        "user_id": user,
        "forgotten": "fact",
        "fact_id": "pay",
        "receipt_id": None,
    }
    assert again.is_error and "not_found (HTTP 404)" in str(again.content)


def test_a_lax_forget_erases_nothing(api: Api, tenant: str, user: str) -> None:
    """`confirm: "yes"`, an unknown `tenant`, a `..` fact id: each refused, the user's fact still there."""
    lax = [
        {"user_id": user, "confirm": "yes"},
        {"user_id": user, "confirm": True, "tenant": "other"},
        {"user_id": user, "fact_id": ".."},
    ]

    async def scenario(memory: MemoryClient) -> tuple[list[Any], Any]:
        async with Client(build_server(memory)) as session:
            await session.call_tool(
                "remember", {"user_id": user, "text": "Prefers email.", "fact_id": "contact"}
            )
            refused = [await session.call_tool("forget", arguments) for arguments in lax]
            return refused, await session.call_tool("read_memory", {"user_id": user})

    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        refused, memory_now = anyio.run(scenario, memory)
    assert all(result.is_error and "invalid_input" in str(result.content) for result in refused)
    assert "pydantic" not in str([result.content for result in refused])
    assert [fact["id"] for fact in memory_now.structured_content["facts"]] == ["contact"]


def test_list_records_of_a_user_without_any(api: Api, tenant: str, user: str) -> None:
    arguments = {"user_id": user, "as_of": "2022-06-01T00:00:00Z", "include_invalidated": True}

    async def scenario(memory: MemoryClient) -> Any:
        async with Client(build_server(memory)) as session:
            return await session.call_tool("list_records", arguments)

    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        listed = anyio.run(scenario, memory)
    assert listed.structured_content == {"records": [], "more": False}, listed.content
