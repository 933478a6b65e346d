"""The asyncio side of `with_memory` (openai_wrapper.py; client/README.md, "with_memory").

`with_memory(AsyncOpenAI(), memory)` gives an `AsyncMemoryOpenAI`: the same flow as the blocking
wrapper, awaited. The memory is an `AsyncMemoryClient`, or a `MemoryClient` whose blocking calls
run in a thread so that the event loop never waits on the memory service.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, overload

from .async_client import AsyncMemoryClient
from .openai_turns import (
    MemoryChat,
    Settings,
    answer_text,
    block_of,
    delegated,
    delta_text,
    last_user_text,
    log_failure,
    logger,
    query_of,
    turn_of,
    with_block,
)
from .sync_client import MemoryClient

if TYPE_CHECKING:
    from openai import AsyncOpenAI, AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam

    from .models import Context


class AsyncMemoryOpenAI:
    """An `AsyncOpenAI` client whose `chat.completions.create` remembers; the rest is the client's own."""

    def __init__(
        self, client: AsyncOpenAI, memory: AsyncMemoryClient | MemoryClient, settings: Settings
    ) -> None:
        self.openai = client  # the client itself, for what should bypass memory
        self.memory = memory
        self.settings = settings
        completions = AsyncMemoryCompletions(client.chat.completions, memory, settings)
        self.chat = MemoryChat(client.chat, completions)

    def with_options(self, **options: Any) -> AsyncMemoryOpenAI:
        """The SDK's `with_options` (a copy with other timeouts, retries, ...), still with memory."""
        return AsyncMemoryOpenAI(self.openai.with_options(**options), self.memory, self.settings)

    copy = with_options

    def __getattr__(self, name: str) -> Any:
        return delegated(self, "openai", name)


class AsyncMemoryCompletions:
    """`chat.completions` with memory on `create`; `retrieve`, `list`, `parse`, ... are the SDK's."""

    def __init__(
        self, completions: Any, memory: AsyncMemoryClient | MemoryClient, settings: Settings
    ) -> None:
        self._completions = completions
        self._memory = memory
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        return delegated(self, "_completions", name)

    @overload
    async def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: Literal[False] | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion: ...

    @overload
    async def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: Literal[True],
        user_id: str | None = None,
        **options: Any,
    ) -> AsyncStream[ChatCompletionChunk]: ...

    @overload
    async def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: bool,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]: ...

    async def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: bool | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        """The SDK's `create`, awaited, with the user's memory as a system message and the turn
        stored; `user_id` as for the blocking wrapper (openai_wrapper.py)."""
        sent = list(messages)
        if stream is not None:
            options["stream"] = stream
        user = self._settings.user_for(user_id)
        if user is None:
            return await self._completions.create(messages=sent, model=model, **options)  # type: ignore[no-any-return]
        question = last_user_text(sent)
        block = await self._block(user, question)
        result = await self._completions.create(
            messages=with_block(sent, block, self._settings.prefix), model=model, **options
        )
        if stream:
            return remember_async_stream(result, lambda answer: self._store(user, question, answer))
        await self._store(user, question, answer_text(result))
        return result  # type: ignore[no-any-return]

    async def _context(self, user: str, question: str | None) -> Context | None:
        query, max_words = query_of(question), self._settings.max_words
        if isinstance(self._memory, AsyncMemoryClient):
            return await self._memory.context(user, query, max_words)
        return await asyncio.to_thread(self._memory.context, user, query, max_words)

    async def _block(self, user: str, question: str | None) -> str | None:
        try:
            return block_of(await self._context(user, question))
        except Exception as error:  # a strict client raises: memory must not break the chat
            log_failure("context", self._memory.tenant, user, error)
            return None

    async def _store(self, user: str, question: str | None, answer: str) -> None:
        turn = turn_of(question, answer)
        if turn is None or not self._settings.store_turns:
            return
        try:
            # Both clients return at once and send in the background (client/README.md); only a
            # strict blocking client would send now, so it sends from a thread.
            if isinstance(self._memory, AsyncMemoryClient):
                await self._memory.add(user, turn)
            elif self._memory.strict:
                await asyncio.to_thread(self._memory.add, user, turn)
            else:
                self._memory.add(user, turn)
        except Exception as error:
            log_failure("add", self._memory.tenant, user, error)


def remember_async_stream(
    stream: AsyncStream[ChatCompletionChunk], store: Callable[[str], Awaitable[None]]
) -> AsyncStream[ChatCompletionChunk]:
    """The SDK's own async stream, each chunk passed on as it arrives, `await store(text)` once when
    it stops: read to the end, failed, or closed early (`close()`/`aclose()`, leaving `async with`;
    a stream dropped unclosed, when its generator is finalised). As `remember_stream`, in place."""
    inner: AsyncIterator[ChatCompletionChunk] | None = getattr(stream, "_iterator", None)
    if inner is None:  # an SDK whose stream is built otherwise: pass it on, without the turn
        logger.warning("with_memory: this openai SDK's stream cannot be read along: turn not stored")
        return stream
    parts: list[str] = []

    async def tap(chunks: AsyncIterator[ChatCompletionChunk]) -> AsyncGenerator[ChatCompletionChunk, None]:
        try:
            async for chunk in chunks:
                parts.append(delta_text(chunk))
                yield chunk
        finally:
            await store("".join(parts))

    tapped = tap(inner)
    stream._iterator = tapped
    sdk_close = stream.close  # `aclose()` and `__aexit__` call `close()`, so they end here too

    async def close() -> None:
        try:
            await sdk_close()
        finally:
            await tapped.aclose()  # runs the `finally` above, if the stream had started

    stream.close = close  # type: ignore[method-assign]
    return stream
