"""A user's summary item and current facts as stored, in plain Python: what the memory store reads
and what the memory read's fast lane answers from (api/memory_lane.py), which never loads pydantic."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict


@dataclass(frozen=True)
class MemoryState:
    """The summary item of one user, as read (version 0 = no summary)."""

    memory: str | None = None
    version: int = 0
    word_count: int = 0
    updated_at: datetime | None = None
    generation: int = 0
    # Episodes written since the last trim, at least (a hint: retries and TTL make it high).
    episode_count: int = 0
    # Bumped by each change of the episodes a count cannot show (one forgotten, old ones given
    # new vectors): a copy of the episodes made before it is read whole again (adapters/episode_cache.py).
    episodes_revision: int = 0
    # Every episode ever written in this generation (a trim takes none off): a copy that did not
    # find as many since it was made missed one written out of order (adapters/episode_cache.py).
    episodes_written: int = 0
    # The last version of a summary a delete (or the memory TTL) emptied: versions go on after it,
    # so none read before a delete ever matches after it (docs/api.md "Headers").
    version_floor: int = 0

    @property
    def last_version(self) -> int:
        """The version counter as stored: the next summary is `last_version + 1`."""
        return max(self.version, self.version_floor)


class FactFields(TypedDict):
    """A stored fact's fields, as `Fact` (contracts/models.py) takes them."""

    id: str
    text: str
    metadata: dict[str, Any]
    additional_metadata: dict[str, Any]
    title: str | None
    is_markdown: bool
    updated_at: datetime


@dataclass(frozen=True)
class StoredMemory:
    """One user's memory as one Query reads it: the summary item and the current facts."""

    state: MemoryState
    facts: list[FactFields]
