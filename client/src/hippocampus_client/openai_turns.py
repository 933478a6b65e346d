"""What `with_memory` does to a chat request and to its answer (client/README.md, "with_memory").

Shared by the blocking and the asyncio wrappers: the settings, the query (the last user
message), the messages with the memory block, the answer's text (whole or streamed), the turn
to store, and how a failure of memory is logged. Nothing here imports openai at run time: the
SDK is an extra (`hippocampus-client[openai]`) and `hippocampus_client` imports without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .errors import CircuitOpenError, ConfigurationError, HippocampusError

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionChunk,
        ChatCompletionMessageParam,
        ChatCompletionSystemMessageParam,
    )

    from .models import Context

logger = logging.getLogger("hippocampus_client.openai")

# The first line of the system message that carries the memory; fixed and documented
# (client/README.md, "with_memory"), so that prompts and tests can recognise it.
MEMORY_PREFIX = "Memory about this user (from Hippocampus):"
# docs/api.md "Query" and "Context": a query is 1 to 2,000 characters, max_words 1 to 2,000.
MAX_QUERY_CHARS = 2_000
MAX_CONTEXT_WORDS = 2_000
# The caller's instructions come first; the memory goes right after them (client/README.md).
INSTRUCTION_ROLES = frozenset({"system", "developer"})

C = TypeVar("C")


@dataclass(frozen=True)
class Settings:
    """The options of `with_memory`, checked once when the wrapper is made."""

    user: str | None = None
    max_words: int = 300
    prefix: str = MEMORY_PREFIX
    store_turns: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.max_words <= MAX_CONTEXT_WORDS:
            raise ConfigurationError(f"max_words must be 1 to {MAX_CONTEXT_WORDS}, not {self.max_words}")

    def user_for(self, user_id: str | None) -> str | None:
        """The user of one call: its `user_id=`, else the wrapper's `user=`; None logs a warning."""
        user = user_id or self.user
        if not user:
            logger.warning("with_memory: no user (pass user= to with_memory or user_id= to create)")
        return user or None


def delegated(wrapper: object, attribute: str, name: str) -> Any:
    """`name` of the object a wrapper holds in `attribute`: what the wrapper does not wrap is the
    SDK's own. AttributeError (no recursion) while the wrapper is not built yet (copy, pickle)."""
    try:
        target = vars(wrapper)[attribute]
    except KeyError:
        raise AttributeError(name) from None
    return getattr(target, name)


class MemoryChat(Generic[C]):  # noqa: UP046 - the client supports Python 3.11
    """`client.chat` with memory on `completions.create`; every other attribute is the SDK's own."""

    def __init__(self, chat: Any, completions: C) -> None:
        self._chat = chat
        self.completions = completions

    def __getattr__(self, name: str) -> Any:
        return delegated(self, "_chat", name)


# --- the request ---------------------------------------------------------------------------------


def _field(message: object, name: str) -> object:
    """A field of a message: a dict as the SDK takes, or a model such as a previous answer's message."""
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def text_of(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_field(part, "text") for part in content if _field(part, "type") == "text"]
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


def last_user_text(messages: Sequence[object]) -> str | None:
    """The text of the last user message (the new message of the conversation), or None."""
    for message in reversed(messages):
        if _field(message, "role") == "user":
            text = text_of(_field(message, "content")).strip()
            return text or None
    return None


def query_of(question: str | None) -> str | None:
    """The context route's query: the new message, cut to the API's limit (docs/api.md "Query")."""
    return question[:MAX_QUERY_CHARS] if question else None


def block_of(context: Context | None) -> str | None:
    """The context block to give the model, or None when memory has nothing (or failed)."""
    if context is None or not context.context.strip():
        return None
    return context.context


def with_block(
    messages: list[ChatCompletionMessageParam], block: str | None, prefix: str
) -> list[ChatCompletionMessageParam]:
    """The messages with ONE system message `prefix` + newline + `block`, after the caller's
    leading system (or developer) messages, or first when there are none; unchanged without a block."""
    if block is None:
        return messages
    position = 0
    while position < len(messages) and _field(messages[position], "role") in INSTRUCTION_ROLES:
        position += 1
    memory: ChatCompletionSystemMessageParam = {"role": "system", "content": f"{prefix}\n{block}"}
    return [*messages[:position], memory, *messages[position:]]


# --- the answer and the turn ---------------------------------------------------------------------


def answer_text(completion: ChatCompletion) -> str:
    """The text of the first choice ("" for an answer without text, e.g. only tool calls)."""
    choices = getattr(completion, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def delta_text(chunk: ChatCompletionChunk) -> str:
    """The text a streamed chunk adds to the first choice ("" for role, usage or tool chunks)."""
    for choice in getattr(chunk, "choices", None) or []:
        if getattr(choice, "index", 0) == 0:
            content = getattr(getattr(choice, "delta", None), "content", None)
            return content if isinstance(content, str) else ""
    return ""


def turn_of(question: str | None, answer: str) -> list[dict[str, str]] | None:
    """The turn to store as openai-style messages, or None when there is nothing to store: a turn
    needs the user's message and an answer with text (a tool-call round is stored with its final
    answer, by the next call)."""
    if not question or not answer.strip():
        return None
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def log_failure(what: str, tenant: str, user: str, error: BaseException) -> None:
    """Memory failed and the chat goes on: ids and codes only, never content (client/README.md)."""
    code = error.code if isinstance(error, HippocampusError) else None
    # A skipped call while the circuit is open: its opening was logged once (breaker.py).
    log = logger.debug if isinstance(error, CircuitOpenError) else logger.warning
    log(
        "with_memory: %s failed, going on without it: tenant_id=%s user_id=%s error=%s code=%s",
        what, tenant, user, type(error).__name__, code,
    )  # fmt: skip
