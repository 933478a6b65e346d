"""What the tools of `hippocampus-mcp` take and give back (client/README.md, "MCP server").

The parameter types carry the API's limits (docs/api.md "Limits", "Query", "Context"), so an
agent sees them in each tool's input schema and a call outside them is refused before any
request. The results are small models of their own, not the client's: their fields are the
output schema the agent reads, and stay the same when the API adds fields. An agent's server
(`hippocampus-mcp --agent`) has its own where it says more (`Agent…`: each result's scope, the
agent's id, the shared memory's version), so a user's server's schemas show none of it.
"""

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field

from .base import ResultKind
from .identifiers import IDENTIFIER_PATTERN
from .models import Job

# docs/api.md "Routes", identifiers; "Limits".
ID_PATTERN = IDENTIFIER_PATTERN  # the client's own check (identifiers.py), in every input schema
NOT_BLANK = r"\S"  # a search, not a full match: at least one character that is not whitespace
MAX_TEXT_CHARS, MAX_QUERY_CHARS, MAX_TITLE_CHARS = 32_000, 2_000, 256
MAX_TOP_K, MAX_CONTEXT_WORDS, MAX_FACTS, MAX_RECORDS = 50, 2_000, 200, 200
MAX_WAIT_SECONDS = 60

UserId = Annotated[
    str,
    Field(
        pattern=ID_PATTERN,
        description="The application's id of the user whose memory this is "
        "(letters, digits and . _ @ : -, at most 128 characters), e.g. 'alice' or 'alice@example.com'.",
    ),
]
FactId = Annotated[
    str,
    Field(pattern=ID_PATTERN, description="The id of one fact, as read_memory or recall return it."),
]
QueryText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NOT_BLANK, description="What to look for."),
]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NOT_BLANK)]
Side = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Title = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS, pattern=NOT_BLANK)]
Kind = ResultKind
KINDS: tuple[str, ...] = get_args(ResultKind)  # what `recall` may be limited to: the API's kinds
# Where a result of an agent's server comes from (docs/api.md "Agent scopes").
SCOPE_DESCRIPTION = "'shared' (the user's memory, seen by every agent) or 'agent' (this agent's own)."


class RecallHit(BaseModel):
    type: str = Field(
        description="'fact' (stored verbatim), 'episode' (a past conversation turn) or 'record' "
        "(a dated statement about the user, as list_records gives it)."
    )
    id: str
    text: str
    title: str | None = None
    score: float = Field(description="Relevance in [0, 1], highest first.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    updated_at: str | None = None


class AgentRecallHit(RecallHit):
    scope: str | None = Field(default=None, description=SCOPE_DESCRIPTION)


class RecallResult(BaseModel):
    results: list[RecallHit]


class AgentRecallResult(BaseModel):
    """`recall` of an agent's server: the user's shared memory and the agent's own, ranked together."""

    results: list[AgentRecallHit]


class ContextSourceInfo(BaseModel):
    type: str = Field(description="'memory' (the summary), 'fact', 'episode' or 'record'.")
    id: str | None = None


class AgentContextSourceInfo(ContextSourceInfo):
    scope: str | None = Field(default=None, description=SCOPE_DESCRIPTION)


class ContextBlock(BaseModel):
    context: str = Field(description="The block to put before the conversation, as is.")
    word_count: int


class ContextResult(ContextBlock):
    memory_version: int | None = None
    sources: list[ContextSourceInfo]


class AgentContextResult(ContextBlock):
    """`get_context` of an agent's server: built from the user's shared memory and the agent's own."""

    memory_version: int | None = Field(default=None, description="The version of this agent's own summary.")
    shared_memory_version: int | None = Field(
        default=None, description="The version of the user's shared summary, which every agent reads."
    )
    sources: list[AgentContextSourceInfo]


class JobInfo(BaseModel):
    job_id: str
    item_id: str | None = None
    status: str = Field(
        description="queued, processing, deferred (the tenant's daily token budget is spent: condensed "
        "after it resets at 00:00 UTC; error_code token_budget_exhausted), completed, failed or skipped."
    )
    error_code: str | None = None
    memory_version: int | None = None

    @classmethod
    def of(cls, job: Job) -> "JobInfo":
        code = job.error.code if job.error is not None else None
        return cls(
            job_id=job.job_id,
            item_id=job.item_id,
            status=job.status,
            error_code=code,
            memory_version=job.memory_version,
        )


class RememberResult(BaseModel):
    jobs: list[JobInfo]
    final: bool = Field(
        description="True when every job is completed, failed or skipped: recall already sees what was stored."
    )


class FactInfo(BaseModel):
    id: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    updated_at: str | None = None


class MemoryResult(BaseModel):
    user_id: str
    summary: str | None = Field(description="The condensed summary; null before anything was condensed.")
    version: int = Field(description="The summary's version: 0 before a first one, and after a forget.")
    word_count: int
    updated_at: str | None = None
    facts: list[FactInfo] = Field(description="The user's facts, in id order (at most max_facts of them).")
    facts_total: int


class AgentMemoryResult(MemoryResult):
    """`read_memory` of an agent's server: the agent's own scope of the user's memory (the fields
    above), and the user's shared memory, which every agent reads."""

    agent_id: str
    shared: MemoryResult = Field(description="The user's shared memory: summary, version and facts.")


class RecordInfo(BaseModel):
    id: str
    text: str
    category: str | None = Field(
        default=None,
        description="identity, location, work, relationship, preference, possession, plan, event or other.",
    )
    valid_from: str | None = Field(default=None, description="When it became true in the world.")
    valid_to: str | None = Field(default=None, description="When it stopped being true; null while it is.")
    recorded_at: str | None = Field(default=None, description="When the memory learned it.")
    invalidated_at: str | None = Field(default=None, description="When a newer statement replaced it.")
    superseded_by: str | None = Field(default=None, description="The id of the record that replaced it.")


class RecordsResult(BaseModel):
    records: list[RecordInfo] = Field(description="Newest first by valid_from (at most max_records).")
    more: bool = Field(description="True when older records were left out: raise max_records to see them.")


class Forgotten(BaseModel):
    user_id: str
    fact_id: str | None = None
    # The whole scope's: the id of the deletion receipt, what the forget erased (docs/api.md
    # "Deletion receipts").
    receipt_id: str | None = None


class ForgetResult(Forgotten):
    forgotten: Literal["user", "fact"]


class AgentForgetResult(Forgotten):
    """`forget` of an agent's server: `agent`, everything the agent's scope held about the user
    (the user's shared memory and other agents' stay), or one of its facts."""

    forgotten: Literal["agent", "fact"]
    agent_id: str
