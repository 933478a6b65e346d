"""Ports of the fact writes: a user's facts with their counts, and the commits that change them
(docs/architecture.md "Fact limits"). MemoryStore (contracts/ports.py) reads and commits them;
domain/ingest/fact_writes.py decides what a commit holds."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from hippocampus.contracts.models import Fact, Job

# A fact commit is one DynamoDB transaction (at most 100 writes): the memory item, and up to three
# writes per entry (its job, the job's reference in the user's index, its fact or a check of it).
MAX_FACT_ENTRIES: Final = 33


@dataclass(frozen=True)
class FactCounts:
    """What a user's facts add up to, as the fact limits count them (docs/api.md "Limits")."""

    facts: int = 0
    bytes: int = 0

    def __add__(self, other: "FactCounts") -> "FactCounts":
        return FactCounts(self.facts + other.facts, self.bytes + other.bytes)

    def __neg__(self) -> "FactCounts":
        return FactCounts(-self.facts, -self.bytes)


@dataclass(frozen=True)
class StoredFact:
    fact: Fact
    # The bytes it was counted with; None for a fact stored before facts were counted.
    size: int | None
    has_vector: bool = False  # an embedding is stored on it (erased with it)


@dataclass(frozen=True)
class FactLedger:
    """A user's facts as a fact write decides on them (docs/architecture.md "Fact limits")."""

    generation: int
    version: int  # of the summary: the one a fact's job is completed at
    facts: Mapping[str, StoredFact]  # the live facts of the current generation, by id
    counts: FactCounts | None  # as stored on the memory item; None: not counted yet
    revision: int  # bumped by every commit and every removal of a fact
    settling: bool  # a request written in several commits may still be writing


@dataclass(frozen=True)
class Present:
    """An entry's expectation: the fact with its id is live, counted with `size` bytes."""

    size: int | None


@dataclass(frozen=True)
class Absent:
    """An entry's expectation: no live fact of the user's generation has its id."""


ABSENT = Absent()


@dataclass(frozen=True)
class FactEntry:
    """One item of a fact request: its job, and the fact it stores (replacing the one with its
    id), if any; `expect`, about the stored fact with that id, is checked in the same commit."""

    fact_id: str
    job: Job
    fact: Fact | None = None
    size: int = 0  # the bytes `fact` is counted with
    expect: Present | Absent | None = None  # None: no check


@dataclass(frozen=True)
class FactCommit:
    """One atomic write of a fact request (all of it, or the first part of a larger one)."""

    tenant_id: str
    user_id: str
    generation: int
    entries: Sequence[FactEntry]
    change: FactCounts  # added to the stored counts
    # The counts after the change must stay within these (None: not checked; a change that only
    # takes away needs no check).
    limits: FactCounts | None = None
    # Set the counts to `change` instead, if the facts are still at this revision and no request
    # is settling: for counts absent or grown apart from the facts.
    rebase_from: int | None = None
    more_follow: bool = False  # later commits of the same request follow: the counts may not be rebased


@dataclass(frozen=True)
class FactRemoval:
    """The delete of one fact (`DELETE …/facts/{id}`), taken off the counts when they exist."""

    tenant_id: str
    user_id: str
    generation: int
    fact_id: str
    expect: Present
    # What the fact counts for, taken off the user's counts (None: the user is not counted yet).
    counts: FactCounts | None
