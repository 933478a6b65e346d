"""`with_memory`: the openai SDK with the memory of each user (client/README.md, "with_memory").

    chat = with_memory(OpenAI(), memory, user="alice")
    answer = chat.chat.completions.create(model="gpt-4o-mini", messages=[...])

Each `chat.completions.create` call: the last user message is the query of the user's context
block (`memory.context`, 3 s at most, None on any failure); the block goes into the request as
one system message starting with `MEMORY_PREFIX`, after the caller's own system messages; the
model answers (its errors propagate unchanged); the SDK's own result is returned at once, and
the turn is handed to `memory.add`, which sends it in the background. With `stream=True` the
chunks pass through as they arrive and the turn is stored when the stream stops. A failure of
memory never reaches the caller: it is logged with ids and codes and the chat goes on.
Everything else (`client.models`, `client.responses`, `chat.completions.parse`, ...) is the
SDK's own, untouched. This module is the blocking side; openai_async.py is the asyncio side.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, overload

from .async_client import AsyncMemoryClient
from .errors import ConfigurationError, MissingDependencyError
from .openai_async import AsyncMemoryOpenAI
from .openai_turns import (
    MEMORY_PREFIX,
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
    from openai import AsyncOpenAI, OpenAI, Stream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam

__all__ = ["MEMORY_PREFIX", "AsyncMemoryOpenAI", "MemoryOpenAI", "with_memory"]


@overload
def with_memory(
    openai_client: AsyncOpenAI,
    memory: AsyncMemoryClient | MemoryClient,
    *,
    user: str | None = None,
    max_words: int = 300,
    prefix: str = MEMORY_PREFIX,
    store_turns: bool = True,
) -> AsyncMemoryOpenAI: ...


@overload
def with_memory(
    openai_client: OpenAI,
    memory: MemoryClient,
    *,
    user: str | None = None,
    max_words: int = 300,
    prefix: str = MEMORY_PREFIX,
    store_turns: bool = True,
) -> MemoryOpenAI: ...


def with_memory(
    openai_client: OpenAI | AsyncOpenAI,
    memory: MemoryClient | AsyncMemoryClient,
    *,
    user: str | None = None,
    max_words: int = 300,
    prefix: str = MEMORY_PREFIX,
    store_turns: bool = True,
) -> MemoryOpenAI | AsyncMemoryOpenAI:
    """`openai_client` (an `OpenAI` or `AsyncOpenAI`, any base_url) with the memory of its users.

    - `user`: the user of every call; a call's `user_id=` overrides it (one wrapper, many users).
    - `max_words`: the size of the context block (docs/api.md "Context", 1 to 2,000).
    - `prefix`: the first line of the memory's system message.
    - `store_turns=False`: read the memory, never add to it.

    An `AsyncOpenAI` takes an `AsyncMemoryClient` (or a `MemoryClient`, called off the event
    loop); an `OpenAI` takes a `MemoryClient`. Raises `ConfigurationError` for wrong settings
    (here, never during a call) and `MissingDependencyError` without the openai SDK.
    """
    try:
        from openai import AsyncOpenAI
    except ImportError as error:
        raise MissingDependencyError(
            "with_memory needs the openai SDK: pip install 'hippocampus-client[openai]'"
        ) from error
    settings = Settings(user=user, max_words=max_words, prefix=prefix, store_turns=store_turns)
    if isinstance(openai_client, AsyncOpenAI):
        return AsyncMemoryOpenAI(openai_client, memory, settings)
    if isinstance(memory, AsyncMemoryClient):
        raise ConfigurationError("a blocking OpenAI client needs a MemoryClient, not an AsyncMemoryClient")
    return MemoryOpenAI(openai_client, memory, settings)


class MemoryOpenAI:
    """An `OpenAI` client whose `chat.completions.create` remembers; the rest is the client's own."""

    def __init__(self, client: OpenAI, memory: MemoryClient, settings: Settings) -> None:
        self.openai = client  # the client itself, for what should bypass memory
        self.memory = memory
        self.settings = settings
        self.chat = MemoryChat(client.chat, MemoryCompletions(client.chat.completions, memory, settings))

    def with_options(self, **options: Any) -> MemoryOpenAI:
        """The SDK's `with_options` (a copy with other timeouts, retries, ...), still with memory."""
        return MemoryOpenAI(self.openai.with_options(**options), self.memory, self.settings)

    copy = with_options

    def __getattr__(self, name: str) -> Any:
        return delegated(self, "openai", name)


class MemoryCompletions:
    """`chat.completions` with memory on `create`; `retrieve`, `list`, `parse`, ... are the SDK's."""

    def __init__(self, completions: Any, memory: MemoryClient, settings: Settings) -> None:
        self._completions = completions
        self._memory = memory
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        return delegated(self, "_completions", name)

    @overload
    def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: Literal[False] | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion: ...

    @overload
    def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: Literal[True],
        user_id: str | None = None,
        **options: Any,
    ) -> Stream[ChatCompletionChunk]: ...

    @overload
    def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: bool,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion | Stream[ChatCompletionChunk]: ...

    def create(
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        model: str,
        stream: bool | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> ChatCompletion | Stream[ChatCompletionChunk]:
        """The SDK's `create`, with the user's memory as a system message and the turn stored.
        `user_id` (not sent to the model) overrides the wrapper's `user`; the other arguments
        are the SDK's, sent as given."""
        sent = list(messages)
        if stream is not None:
            options["stream"] = stream
        user = self._settings.user_for(user_id)
        if user is None:
            return self._completions.create(messages=sent, model=model, **options)  # type: ignore[no-any-return]
        question = last_user_text(sent)
        block = self._block(user, question)
        result = self._completions.create(
            messages=with_block(sent, block, self._settings.prefix), model=model, **options
        )
        if stream:
            return remember_stream(result, lambda answer: self._store(user, question, answer))
        self._store(user, question, answer_text(result))
        return result  # type: ignore[no-any-return]

    def _block(self, user: str, question: str | None) -> str | None:
        try:
            return block_of(self._memory.context(user, query_of(question), self._settings.max_words))
        except Exception as error:  # a strict client raises: memory must not break the chat
            log_failure("context", self._memory.tenant, user, error)
            return None

    def _store(self, user: str, question: str | None, answer: str) -> None:
        turn = turn_of(question, answer)
        if turn is None or not self._settings.store_turns:
            return
        try:
            self._memory.add(user, turn)  # returns at once: sent in the background (client/README.md)
        except Exception as error:
            log_failure("add", self._memory.tenant, user, error)


def remember_stream(
    stream: Stream[ChatCompletionChunk], store: Callable[[str], None]
) -> Stream[ChatCompletionChunk]:
    """The SDK's own stream, each chunk passed on as it arrives, `store(text)` called once when it
    stops: read to the end, failed, or closed early (`close()`, leaving `with`; a stream dropped
    unclosed, when the garbage collector frees it).

    The stream keeps its type (`isinstance(s, openai.Stream)` holds): its iterator is wrapped in
    place, and `close` also ends the wrapper, so an early close stores what the caller was given."""
    inner: Iterator[ChatCompletionChunk] | None = getattr(stream, "_iterator", None)
    if inner is None:  # an SDK whose stream is built otherwise: pass it on, without the turn
        logger.warning("with_memory: this openai SDK's stream cannot be read along: turn not stored")
        return stream
    parts: list[str] = []

    def tap(chunks: Iterator[ChatCompletionChunk]) -> Generator[ChatCompletionChunk, None, None]:
        try:
            for chunk in chunks:
                parts.append(delta_text(chunk))
                yield chunk
        finally:
            store("".join(parts))

    tapped = tap(inner)
    stream._iterator = tapped
    sdk_close = stream.close

    def close() -> None:
        try:
            sdk_close()
        finally:
            tapped.close()  # runs the `finally` above, if the stream had started

    stream.close = close  # type: ignore[method-assign]
    return stream
