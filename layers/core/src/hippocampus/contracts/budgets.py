"""Per-tenant token budgets (docs/architecture.md "Token budgets").

A tenant with a budget (MEMORY_TENANT_DAILY_TOKENS) spends at most about that many LLM tokens
(prompt and completion) per UTC day. Past it, its users' turns are still stored as episodes, their
jobs are `deferred` and parked in the tenant's deferral ledger, and the condenser's scheduled pass
sends them back to the queue, oldest first, once the budget allows: nothing is dropped, and no
other tenant waits.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Final, Protocol

from pydantic import Field

from hippocampus.contracts.models import CondenseMessage, JobError, Record
from hippocampus.contracts.recall import Episode

TOKEN_BUDGET_EXHAUSTED: Final = "token_budget_exhausted"  # noqa: S105 - an error code, not a secret
# A tenant's entries sent back to the queue per scheduled pass, oldest first: a day's backlog goes
# back in steps, each condensed before the next is sent, so the new day's budget is spent in order.
RELEASED_PER_PASS: Final = 100
# A turn sent back this long ago whose job is still `queued` is sent again: its message was lost
# (a pass that died between marking and sending). A duplicate is applied once (the job ledger).
RESEND_AFTER_S: Final = 900
# How long a tenant's daily usage is kept (the usage route reads today's).
USAGE_RETENTION_DAYS: Final = 35
ANY_TENANT: Final = "*"


def utc_day(moment: datetime) -> date:
    """The UTC day a budget counts `moment` in."""
    return moment.astimezone(UTC).date()


def budget_exhausted() -> JobError:
    return JobError(
        code=TOKEN_BUDGET_EXHAUSTED,
        message="the tenant's daily token budget is spent: condensed after it resets (00:00 UTC)",
    )


@dataclass(frozen=True)
class TokenBudgets:
    """Tokens per UTC day, by tenant; `default` for a tenant not named (None: no budget)."""

    by_tenant: Mapping[str, int] = field(default_factory=dict)
    default: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> "TokenBudgets":
        """`"200000"` (every tenant), or a JSON object of tenant → tokens, `"*"` for the others.
        ValueError says what is wrong."""
        if text is None or not text.strip():
            return cls()
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError('must be a whole number or a JSON object such as {"acme": 200000}') from error
        if type(parsed) is int:
            return cls(default=_tokens(ANY_TENANT, parsed))
        if not isinstance(parsed, dict):
            raise ValueError('must be a whole number or a JSON object such as {"acme": 200000}')
        budgets = {str(tenant): _tokens(str(tenant), tokens) for tenant, tokens in parsed.items()}
        default = budgets.pop(ANY_TENANT, None)
        return cls(budgets, default)

    def of(self, tenant_id: str) -> int | None:
        return self.by_tenant.get(tenant_id, self.default)


def _tokens(tenant: str, tokens: object) -> int:
    if type(tokens) is not int or tokens < 1:
        raise ValueError(f"the budget of {tenant!r} must be a whole number of tokens, at least 1")
    return tokens


@dataclass(frozen=True)
class DailyUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TenantUsage(Record):
    """A tenant's LLM use today (UTC), against its budget (GET /v1/tenants/{tenant_id}/usage)."""

    tenant_id: str
    day: date
    calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    budget: int | None = Field(description="Tokens per UTC day; null: no budget.")
    remaining: int | None = Field(description="Tokens left today; null: no budget.")
    deferred_jobs: int = Field(description="Jobs parked until the budget allows.")
    resets_at: datetime


@dataclass(frozen=True)
class Deferral:
    """One user's turns parked: their episodes written, their jobs `deferred`, a ledger entry each
    (new ones counted), all in one transaction that checks the user's generation."""

    tenant_id: str
    user_id: str
    generation: int
    episodes: Sequence[Episode]
    messages: Sequence[CondenseMessage]


@dataclass(frozen=True)
class DeferredEntry:
    message: CondenseMessage
    released: bool  # sent back to the queue, its job not yet done


class UsageStore(Protocol):
    def add_usage(self, tenant_id: str, day: date, usage: DailyUsage) -> None:
        """Add one condensation's calls and tokens to the tenant's day."""
        ...

    def usage(self, tenant_id: str, day: date) -> DailyUsage: ...


class DeferralStore(Protocol):
    """The tenants' deferral ledgers."""

    def defer(self, deferral: Deferral) -> None:
        """Write the episodes, turn the jobs `deferred` and park their messages; ConditionFailed
        when the user was deleted since."""
        ...

    def user_entries(self, tenant_id: str, user_id: str) -> list[DeferredEntry]:
        """The user's entries, oldest first (usually none: one Query of an empty range)."""
        ...

    def tenants(self) -> list[str]:
        """The tenants whose ledgers may hold entries (every tenant that ever parked a turn)."""
        ...

    def entries(self, tenant_id: str) -> list[DeferredEntry]:
        """The tenant's entries, oldest first."""
        ...

    def count(self, tenant_id: str) -> int: ...

    def mark_released(
        self, tenant_id: str, entries: Sequence[DeferredEntry], at: datetime
    ) -> list[CondenseMessage]:
        """Mark the entries sent back at `at`, their jobs `queued` again, before they are sent; the
        messages to send (with `released_at`). An entry parked again meanwhile, or whose job is done
        or was sent again since it was read, is left out."""
        ...

    def retire(self, message: CondenseMessage) -> None:
        """Remove the entry of a job that is done (completed, skipped or failed)."""
        ...

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> int:
        """Remove the user's entries of the lives before `generation` (the user is forgotten); how
        many there were."""
        ...


def accepted_order(message: CondenseMessage) -> tuple[datetime, str, int]:
    """The order turns were accepted in: by queue time, then request (raw keys sort in the order
    they were stored), then place in the request."""
    return (message.queued_at, message.raw_key, message.raw_index)
