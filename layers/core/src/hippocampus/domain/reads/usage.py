"""A tenant's LLM use of the day against its token budget (GET /v1/tenants/{tenant_id}/usage,
docs/api.md "Usage")."""

from datetime import UTC, datetime, time, timedelta

from hippocampus.contracts.budgets import DeferralStore, TenantUsage, TokenBudgets, UsageStore, utc_day
from hippocampus.domain.clock import Clock, utc_now


class UsageService:
    def __init__(
        self, budgets: TokenBudgets, usage: UsageStore, deferrals: DeferralStore, clock: Clock = utc_now
    ) -> None:
        self._budgets = budgets
        self._usage = usage
        self._deferrals = deferrals
        self._clock = clock

    def usage(self, tenant_id: str) -> TenantUsage:
        day = utc_day(self._clock())
        used = self._usage.usage(tenant_id, day)
        budget = self._budgets.of(tenant_id)
        return TenantUsage(
            tenant_id=tenant_id,
            day=day,
            calls=used.calls,
            prompt_tokens=used.prompt_tokens,
            completion_tokens=used.completion_tokens,
            tokens=used.tokens,
            budget=budget,
            remaining=None if budget is None else max(0, budget - used.tokens),
            deferred_jobs=self._deferrals.count(tenant_id),
            resets_at=datetime.combine(day + timedelta(days=1), time(), UTC),
        )
