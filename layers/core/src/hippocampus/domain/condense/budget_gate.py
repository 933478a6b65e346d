"""Per-tenant token budgets in the condenser (docs/architecture.md "Token budgets").

Before each LLM call the gate reads the tenant's usage of the day. Over its budget, the user's
turns are parked: their episodes written (recall finds them at once), their jobs `deferred`, their
messages in the tenant's deferral ledger, in one transaction; the queue moves on to the next user.
A turn queued after one of its user's parked turns is parked behind it even within the budget,
so a user's turns are condensed in the order they were accepted, whatever was parked between.
After each call the tokens it used are added to the tenant's day.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from hippocampus.contracts.budgets import (
    DailyUsage,
    Deferral,
    DeferralStore,
    TokenBudgets,
    UsageStore,
    accepted_order,
    utc_day,
)
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.episodes import episode_of
from hippocampus.domain.condense.live_items import LiveItem
from hippocampus.domain.condense.queued import QueuedItem
from hippocampus.observability import MetricName, logger, record_metric, record_tenant_deferred


@dataclass(frozen=True)
class Admitted:
    """The turns that may be condensed now, and the jobs among them that come from the ledger
    (their entries go once they are condensed)."""

    live: list[LiveItem]
    from_ledger: frozenset[str]


class BudgetGate:
    def __init__(
        self,
        budgets: TokenBudgets,
        usage: UsageStore,
        deferrals: DeferralStore,
        clock: Clock = utc_now,
    ) -> None:
        self._budgets = budgets
        self._usage = usage
        self._deferrals = deferrals
        self._clock = clock

    def admitted(self, live: list[LiveItem], generation: int) -> Admitted:
        """Park what must wait (ConditionFailed when the user was deleted since `generation`)."""
        first = live[0].queued.message
        ledger = self._deferrals.user_entries(first.tenant_id, first.user_id)
        spent = self.spent(first.tenant_id)
        condensing = {entry.queued.message.job_id for entry in live}
        # The oldest parked turn of the user not being condensed now: a turn accepted after it waits.
        oldest = min(
            (accepted_order(e.message) for e in ledger if e.message.job_id not in condensing), default=None
        )
        held: list[LiveItem] = []
        admitted: list[LiveItem] = []
        for entry in live:
            behind = oldest is not None and oldest < accepted_order(entry.queued.message)
            (held if spent or behind else admitted).append(entry)
        if held:
            self._park(held, generation, spent)
        ledger_jobs = {entry.message.job_id for entry in ledger}
        return Admitted(admitted, frozenset(e.queued.message.job_id for e in admitted) & ledger_jobs)

    def spent(self, tenant_id: str) -> bool:
        """Whether the tenant has used its budget of the day (False without a budget)."""
        budget = self._budgets.of(tenant_id)
        if budget is None:
            return False
        return self._usage.usage(tenant_id, utc_day(self._clock())).tokens >= budget

    def used(self, tenant_id: str, usage: DailyUsage) -> None:
        """Add one condensation's calls and tokens to the tenant's day (best effort: the call is
        made and its memory written; a lost count only lets the tenant spend a little more)."""
        try:
            self._usage.add_usage(tenant_id, utc_day(self._clock()), usage)
        except Exception:
            logger.exception("could not count the tenant's token usage")

    def condensed(self, items: Sequence[QueuedItem], from_ledger: frozenset[str]) -> None:
        """The ledger entries of turns just condensed go (best effort: the scheduled pass removes an
        entry whose job is done)."""
        for item in items:
            if item.message.job_id in from_ledger:
                try:
                    self._deferrals.retire(item.message)
                except Exception:
                    logger.exception("could not remove a condensed turn from the deferral ledger")

    def _park(self, held: list[LiveItem], generation: int, spent: bool) -> None:
        first = held[0].queued.message
        episodes = [episode_of(entry.queued.message, entry.content) for entry in held]
        messages = [entry.queued.message for entry in held]
        self._deferrals.defer(Deferral(first.tenant_id, first.user_id, generation, episodes, messages))
        record_metric(MetricName.JOBS_DEFERRED, len(held))
        record_tenant_deferred(first.tenant_id, len(held))
        reason = "token budget spent" if spent else "behind the user's parked turns"
        logger.info("turns deferred", extra={"jobs": len(held), "reason": reason})
