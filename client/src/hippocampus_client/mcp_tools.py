"""The six tools of `hippocampus-mcp` (client/README.md, "MCP server"), bound to one strict client.

Each tool is a method of `MemoryTools`: its type hints are the tool's input schema (the API's
limits, mcp_models.py), its docstring the description the agent reads, its result model the
output schema. A client of an agent (`hippocampus-mcp --agent`, docs/api.md "Agent scopes") makes
them serve that agent's scope: the same methods call the agent's routes, and `MemoryTools.view`
says what its server shows otherwise: `remember(share=...)`, both scopes in `read_memory`, each
result's scope, `forget` erasing the agent's scope only. A user's server shows none of it. The client's typed errors become tool errors naming the code (docs/api.md
"Errors"); the log line of a failure holds the tool, the code and the request id only.
"""

import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from .base import QueryOptions
from .errors import HippocampusError, InvalidInputError, WaitTimeoutError
from .mcp_models import (
    KINDS,
    MAX_CONTEXT_WORDS,
    MAX_FACTS,
    MAX_RECORDS,
    MAX_TOP_K,
    MAX_WAIT_SECONDS,
    AgentContextResult,
    AgentForgetResult,
    AgentMemoryResult,
    AgentRecallResult,
    ContextResult,
    FactId,
    FactInfo,
    ForgetResult,
    JobInfo,
    Kind,
    MemoryResult,
    QueryText,
    RecallResult,
    RecordInfo,
    RecordsResult,
    RememberResult,
    Side,
    Text,
    Title,
    UserId,
)
from .models import AgentMemory, Job, Memory
from .sync_client import MemoryClient

logger = logging.getLogger("hippocampus_client.mcp")
# A TypeVar, not PEP 695 syntax: the client supports Python 3.11 (client/pyproject.toml).
T = TypeVar("T")

# `remember`'s parameters.
NoteText = Annotated[Text | None, Field(description="A note about the user to keep.")]
UserSide = Annotated[Side | None, Field(description="The user's side of a turn.")]
AssistantSide = Annotated[Side | None, Field(description="The answer of the turn.")]
NoteFactId = Annotated[
    FactId | None,
    Field(description="Store `text` verbatim as a fact under this id (replacing one with it)."),
]
NoteTitle = Annotated[Title | None, Field(description="A short label kept with it.")]
NoteMetadata = Annotated[
    dict[str, Any] | None, Field(description="A JSON object kept with it (at most 16 KiB).")
]
OccurredAt = Annotated[
    str | None,
    Field(description="When it happened, RFC 3339 with Z or an offset (2023-05-08T13:56:00Z); default: now."),
]
WaitSeconds = Annotated[
    int, Field(ge=0, le=MAX_WAIT_SECONDS, description="Wait this long for a turn to be condensed.")
]
Share = Annotated[
    bool,
    Field(
        description="Keep it in the user's shared memory, which every agent reads, rather than this "
        "agent's own (default)."
    ),
]
ForgetFactId = Annotated[FactId | None, Field(description="Forget only this fact.")]


def _describe(error: HippocampusError) -> str:
    """The tool error an agent reads: the code first (docs/api.md "Errors"), then what to fix."""
    where = f" (HTTP {error.status})" if error.status else ""
    fields = sorted({str(d["field"]) for d in error.details if d.get("field")})
    detail = f" [fields: {', '.join(fields)}]" if fields else ""
    request = f" [request_id: {error.request_id}]" if error.request_id else ""
    return f"{error.code}{where}: {error.message or error.code}{detail}{request}"


@contextmanager
def _tool_errors(tool: str) -> Iterator[None]:
    """The client's typed errors as tool errors; the log line holds the code and ids only.

    A tool's whole body runs inside: the SDK would log any other exception with its traceback,
    whose text may hold a user's content."""
    try:
        yield
    except HippocampusError as error:
        logger.warning(
            "tool %s failed: code=%s status=%s request_id=%s",
            tool,
            error.code,
            error.status,
            error.request_id,
        )
        raise ToolError(_describe(error)) from None
    except Exception as error:
        # A bug of this server, not of the call: its text may hold content, so only its type is told.
        logger.error("tool %s failed: %s", tool, type(error).__name__)
        raise ToolError(f"internal_error: {type(error).__name__} in hippocampus-mcp") from None


def _answered(value: T | None) -> T:  # noqa: UP047 - Python 3.11
    # A strict client raises instead of returning None; None would be a broken promise, not a result.
    if value is None:
        raise HippocampusError("the client returned no answer (is it strict?)")
    return value


@dataclass(frozen=True)
class ToolView:
    """How a server shows one tool (mcp_server.build_server): the description the agent reads, the
    model of its result (its output schema; None: the method's return annotation), and the
    parameters it does not take (they keep their defaults)."""

    description: str
    result: type[BaseModel] | None = None
    hidden: tuple[str, ...] = ()


# What an agent's server (`hippocampus-mcp --agent`) shows unlike a user's: per tool, the result
# models of a user's server and of an agent's (with each result's scope, the agent's id), a
# sentence added to the description, and the parameters only an agent's server takes.
RESULTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "recall": (RecallResult, AgentRecallResult),
    "get_context": (ContextResult, AgentContextResult),
    "read_memory": (MemoryResult, AgentMemoryResult),
    "forget": (ForgetResult, AgentForgetResult),
}
AGENT_NOTES = {
    "recall": "On this agent's server: the user's shared memory and this agent's own, each result's "
    "`scope` saying which.",
    "get_context": "On this agent's server: from the user's shared memory and this agent's own, each "
    "source's `scope` saying which.",
    "remember": "On this agent's server it goes to this agent's own memory of the user; with `share` "
    "true, to the user's shared memory, which every agent reads.",
    "read_memory": "On this agent's server: this agent's own summary, version and facts; in `shared` "
    "the same of the user's shared memory, which every agent reads.",
    "forget": "On this agent's server: only what this agent keeps about the user (`forgotten`: "
    "agent); the user's shared memory and other agents' stay.",
}
AGENT_PARAMETERS = ("share",)


class MemoryTools:
    """The tools, bound to one strict client (and so to its one tenant). With a client of an agent
    they are that agent's (`hippocampus-mcp --agent`, docs/api.md "Agent scopes"): each tool calls
    the agent's routes and gives the agent's results, `remember` takes `share` (`view`)."""

    def __init__(self, client: MemoryClient) -> None:
        self.client = client
        self.agent = client.agent

    def view(self, method: Callable[..., Any]) -> ToolView:
        """How this server shows `method`, one of the tools."""
        name = method.__name__
        description = inspect.getdoc(method) or ""
        users, agents = RESULTS.get(name, (None, None))
        if self.agent is None:
            return ToolView(description, users, hidden=AGENT_PARAMETERS)
        note = AGENT_NOTES.get(name)
        return ToolView(f"{description}\n\n{note}" if note else description, agents)

    def recall(
        self,
        user_id: UserId,
        query: QueryText,
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many results at most.")] = 10,
        types: Annotated[
            list[Kind] | None,
            Field(min_length=1, max_length=len(KINDS), description="Only these kinds; default all."),
        ] = None,
    ) -> RecallResult | AgentRecallResult:
        """Search the user's memory: their facts, records (dated statements about them) and past
        conversation turns ranked for `query`, best first, each with its type, id, text and a score
        in [0, 1]. Nothing relevant: no results. For the block to put before an answer use
        get_context instead."""
        options: QueryOptions = {"top_k": top_k, "include_memory": False}
        if types:
            options["types"] = list(types)
        with _tool_errors("recall"):
            answer = _answered(self.client.query(user_id, query, **options))
            model = RecallResult if self.agent is None else AgentRecallResult
            return model.model_validate({"results": [r.model_dump() for r in answer.results]})

    def get_context(
        self,
        user_id: UserId,
        query: Annotated[
            QueryText | None,
            Field(description="The user's new message, to pick the facts and turns relevant to it."),
        ] = None,
        max_words: Annotated[int, Field(ge=1, le=MAX_CONTEXT_WORDS, description="Size bound.")] = 300,
    ) -> ContextResult | AgentContextResult:
        """What is known about the user, as one text block ready to put before your answer: the
        summary, then the facts, records and past turns relevant to `query` (newest facts without
        one), never over `max_words` words; `sources` name what it was built from."""
        with _tool_errors("get_context"):
            context = _answered(self.client.context(user_id, query, max_words))
            model = ContextResult if self.agent is None else AgentContextResult
            return model.model_validate(context.model_dump())

    def remember(
        self,
        user_id: UserId,
        text: NoteText = None,
        user_message: UserSide = None,
        assistant_message: AssistantSide = None,
        fact_id: NoteFactId = None,
        title: NoteTitle = None,
        metadata: NoteMetadata = None,
        occurred_at: OccurredAt = None,
        wait_seconds: WaitSeconds = 0,
        share: Share = False,
    ) -> RememberResult:
        """Store something in the user's memory: either `text`, or one conversation turn
        (`user_message` and/or `assistant_message`). A turn or a note is condensed into the
        summary by the service, seconds later (job `queued`; `wait_seconds` waits for it), or,
        while the tenant's daily token budget is spent, after it resets at 00:00 UTC (job
        `deferred`; recall finds the turn meanwhile); with `fact_id`, `text` is stored at once,
        verbatim, as a fact (job `completed`)."""
        with _tool_errors("remember"):
            item = _note(text, user_message, assistant_message, fact_id, title, metadata, occurred_at)
            # `share`: an agent's server's only (a user's does not take it); the client refuses it
            # without an agent all the same.
            jobs = _answered(self.client.add(user_id, item, share=share))
            if wait_seconds and not all(job.final for job in jobs):
                jobs = self._waited(jobs, wait_seconds)
            return RememberResult(jobs=[JobInfo.of(job) for job in jobs], final=all(j.final for j in jobs))

    def _waited(self, jobs: list[Job], seconds: int) -> list[Job]:
        try:
            return _answered(self.client.wait(jobs, timeout=seconds))
        except WaitTimeoutError:  # not final yet: not an error, `final` says it
            return self._current(jobs)

    def _current(self, jobs: list[Job]) -> list[Job]:
        """The jobs as they are now (`deferred`, with its code, while the tenant's token budget is
        spent); as they were added when they cannot be read: the turn is stored all the same."""
        try:
            return [_answered(self.client.job(job.job_id, user=job.user_id)) for job in jobs]
        except HippocampusError:
            return jobs

    def read_memory(
        self,
        user_id: UserId,
        max_facts: Annotated[int, Field(ge=0, le=MAX_FACTS, description="Facts to return at most.")] = 50,
    ) -> MemoryResult | AgentMemoryResult:
        """Everything the memory holds for the user: the condensed summary (null while there is
        none), its version and the facts, in id order. A user never seen has version 0, no facts."""
        with _tool_errors("read_memory"):
            if self.agent is None:
                return _memory_result(_answered(self.client.get_full(user_id)), max_facts)
            both: AgentMemory = _answered(self.client.get_scopes(user_id))
            own = _memory_result(both.scopes.agent, max_facts)
            shared = _memory_result(both.scopes.shared, max_facts)
            return AgentMemoryResult(**own.model_dump(), agent_id=both.agent_id, shared=shared)

    def list_records(
        self,
        user_id: UserId,
        as_of: Annotated[
            str | None,
            Field(
                description="Only the records true at this time, RFC 3339 with Z or an offset "
                "(2022-06-01T00:00:00Z); default: the current ones."
            ),
        ] = None,
        include_invalidated: Annotated[
            bool, Field(description="Also the records a newer statement replaced (valid_to, superseded_by).")
        ] = False,
        max_records: Annotated[
            int, Field(ge=1, le=MAX_RECORDS, description="Records to return at most, newest first.")
        ] = 50,
    ) -> RecordsResult:
        """The user's records: dated statements about them (where they live, their work, plans,
        relationships, ...), newest first by when they became true. By default the ones true now;
        `as_of` gives those true at that time ("where did they live in 2022?"), and
        `include_invalidated` adds those since replaced, each with `valid_to` and `superseded_by`."""
        with _tool_errors("list_records"):
            found = _answered(
                self.client.records(
                    user_id, as_of=as_of, include_invalidated=include_invalidated, limit=max_records + 1
                )
            )
            return RecordsResult(
                records=[RecordInfo.model_validate(r.model_dump()) for r in found[:max_records]],
                more=len(found) > max_records,
            )

    def forget(
        self,
        user_id: UserId,
        fact_id: ForgetFactId = None,
        confirm: Annotated[
            bool,
            Field(
                description="Must be true to forget everything this memory keeps about the user (no fact_id)."
            ),
        ] = False,
    ) -> ForgetResult | AgentForgetResult:
        """Erase from the user's memory: one fact (`fact_id`; not_found when there is no such
        fact), or, with `confirm` true and no `fact_id`, everything stored about the user (summary,
        facts, past turns, history), for good. Only when the user asks for it."""
        with _tool_errors("forget"):
            if fact_id is not None:
                self.client.delete_fact(user_id, fact_id)
                return self._forgotten(user_id, fact_id=fact_id)
            if not confirm:
                whole = "the whole user" if self.agent is None else "the agent's memory of the user"
                raise InvalidInputError(f"forgetting {whole} needs confirm=true (or give a fact_id)")
            return self._forgotten(user_id, receipt_id=self.client.forget(user_id))

    def _forgotten(
        self, user_id: str, fact_id: str | None = None, receipt_id: str | None = None
    ) -> ForgetResult | AgentForgetResult:
        """`forget`'s result: one fact, or the user's memory (an agent's server's: its own scope)."""
        if self.agent is None:
            whole = "user" if fact_id is None else "fact"
            return ForgetResult(user_id=user_id, forgotten=whole, fact_id=fact_id, receipt_id=receipt_id)
        scope = "agent" if fact_id is None else "fact"
        return AgentForgetResult(
            user_id=user_id, forgotten=scope, agent_id=self.agent, fact_id=fact_id, receipt_id=receipt_id
        )


def _memory_result(memory: Memory, max_facts: int) -> MemoryResult:
    return MemoryResult(
        user_id=memory.user_id,
        summary=memory.memory,
        version=memory.version,
        word_count=memory.word_count,
        updated_at=memory.updated_at,
        facts=[FactInfo.model_validate(f.model_dump()) for f in memory.facts[:max_facts]],
        facts_total=len(memory.facts),
    )


def _note(
    text: str | None,
    user_message: str | None,
    assistant_message: str | None,
    fact_id: str | None,
    title: str | None,
    metadata: dict[str, Any] | None,
    occurred_at: str | None,
) -> dict[str, Any]:
    """`remember`'s item: `_item` with the fields given."""
    item = _item(text, user_message, assistant_message, fact_id)
    given = (("title", title), ("metadata", metadata), ("occurred_at", occurred_at))
    return item | {k: v for k, v in given if v is not None}


def _item(
    text: str | None, user_message: str | None, assistant_message: str | None, fact_id: str | None
) -> dict[str, Any]:
    """The one item of `remember` (docs/api.md "Ingest"): a text, a fact or a pair."""
    turn = user_message is not None or assistant_message is not None
    if (text is None) == (not turn):
        raise InvalidInputError("give either text, or user_message and/or assistant_message")
    if text is not None:
        return {"text": text} | ({"id": fact_id, "infer": False} if fact_id is not None else {})
    if fact_id is not None:
        raise InvalidInputError("fact_id stores a text as a fact: give text, not a turn")
    return {"user_assistant_pairs": [{"user": user_message or "", "assistant": assistant_message or ""}]}
