"""What the generated models (models.py) build on: the client's parsing policy and the one
behaviour a model has beyond its fields. Written by hand; models.py is generated."""

from pydantic import BaseModel, ConfigDict

# Job statuses after which nothing changes any more (docs/api.md "Jobs"). Not `queued`,
# `processing` nor `deferred` (its tenant's daily token budget is spent: condensed after the reset).
FINAL_STATUSES = frozenset({"completed", "failed", "skipped"})


class ApiModel(BaseModel):
    """Unknown fields are kept (`model_extra`): an answer of a newer server that adds fields
    still parses, and an `Item` sends a field a newer server accepts before this client names it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class SettlesWhenFinal:
    """`Job.final`: a mixin, so the generated `Job` keeps its fields as the document gives them."""

    status: str

    @property
    def final(self) -> bool:
        """True once the job can no longer change: completed, failed or skipped (not `deferred`)."""
        return self.status in FINAL_STATUSES
