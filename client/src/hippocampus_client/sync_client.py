"""`MemoryClient`: the blocking client (client/README.md).

Never raises into the host application unless `strict=True`: a read returns None on any error
(connection refused, timeout, an error status, an answer of the wrong shape), a write returns
False or None, and the failure is logged to the `hippocampus_client` logger with ids and codes,
never content. `add` returns at once and sends in the background.
"""

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Self, TypeVar, Unpack

from . import programs
from .base import ClientBase, ItemOptions, QueryOptions
from .calls import Call, Sleep
from .errors import RequestTimeoutError
from .items import Content
from .models import (
    AgentMemory,
    Context,
    DeletionReceipt,
    Episode,
    Export,
    Fact,
    Job,
    Memory,
    MemoryRecord,
    MemoryVersion,
    QueryAnswer,
    TenantUsage,
)
from .programs import WAIT_INTERVAL_S, WAIT_TIMEOUT_S, Program, RecordView

T = TypeVar("T")


class MemoryClient(ClientBase):
    """The memory of one tenant's users: `MemoryClient(endpoint="http://127.0.0.1:3000", tenant="acme")`.

    The constructor's parameters are `ClientBase`'s (base.py). With `agent="research"` every
    per-user method reads and writes that agent's scope of the user's memory (client/README.md,
    "Agent scopes"): `get` and `get_full` its own summary, `get_scopes` both scopes, `query` and
    `context` the shared memory and its own.
    """

    def _run(self, program: Program[T], what: str) -> T | None:
        step: Call | Sleep | None = None
        try:
            step = next(program)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = program.send(None)
                else:
                    step = program.send(self._sync_sender.send(step))
        except StopIteration as stop:
            value: T = stop.value
            return value
        except Exception as error:
            self._failed(error, step, what)
            return None
        finally:
            program.close()

    # --- reads: None on any error --------------------------------------------------------------

    def get(self, user: str) -> str | None:
        """The user's summary (an agent's client: the agent's own); None when there is none yet,
        or on error."""
        return self._run(programs.get(self._scope(user)), "get")

    def get_full(self, user: str) -> Memory | None:
        """The memory body (summary, version, facts, `etag`; an agent's client: the agent's own
        scope, the one `put` replaces); None on error."""
        return self._run(programs.get_full(self._scope(user)), "get_full")

    def get_scopes(self, user: str) -> AgentMemory | None:
        """An agent's client only: both scopes it reads, `scopes.shared` (the user's memory) and
        `scopes.agent` (its own), from one request; None on error, and on a client without an
        agent (strict: `ConfigurationError`)."""
        return self._run(programs.get_scopes(self._scope(user)), "get_scopes")

    def query(self, user: str, text: str, **options: Unpack[QueryOptions]) -> QueryAnswer | None:
        """Facts and episodes ranked for `text`; options: `top_k`, `types`, `alpha`, `recency_bias`,
        `metadata_filters`, `include_memory` (docs/api.md "Query"). None on error."""
        request = self._query_request(text, options)
        return self._run(programs.query(self._scope(user), request), "query")

    def context(self, user: str, query: str | None = None, max_words: int = 300) -> Context | None:
        """The block to prepend to a prompt (`.context`), at most `max_words` words; None on error."""
        request = self._context_request(query, max_words)
        return self._run(programs.context(self._scope(user), request), "context")

    def history(self, user: str, limit: int = 20) -> list[MemoryVersion] | None:
        """Past versions of the summary, newest first; None on error."""
        return self._run(programs.history(self._scope(user), limit), "history")

    def facts(self, user: str, limit: int | None = None) -> list[Fact] | None:
        """The user's facts, newest first (all, or the first `limit`), every page within the read
        `timeout`; None on error."""
        read = programs.ListRead(limit, self.policy.timeout)
        return self._run(programs.facts(self._scope(user), read), "facts")

    def episodes(self, user: str, limit: int | None = None) -> list[Episode] | None:
        """The user's condensed turns, newest first (all, or the first `limit`), every page within
        the read `timeout`; None on error."""
        read = programs.ListRead(limit, self.policy.timeout)
        return self._run(programs.episodes(self._scope(user), read), "episodes")

    def records(
        self,
        user: str,
        *,
        as_of: datetime | str | None = None,
        known_at: datetime | str | None = None,
        include_invalidated: bool = False,
        limit: int | None = None,
    ) -> list[MemoryRecord] | None:
        """The user's records, newest first by `valid_from` (all, or the first `limit`), every page
        within the read `timeout`: the current ones; those true at `as_of`; those the service held
        at `known_at`; with `include_invalidated`, the replaced ones too (docs/api.md "Records").
        A time is an aware `datetime` or an RFC 3339 string, checked before any request. None on error."""
        read = programs.ListRead(limit, self.policy.timeout)
        view = RecordView(as_of, known_at, include_invalidated)
        return self._run(programs.records(self._scope(user), read, view), "records")

    def export(self, user: str) -> Export | None:
        """Everything stored about the user, every page merged, within the read `timeout`; None on error."""
        return self._run(programs.export(self._scope(user), self.policy.timeout), "export")

    def job(self, job_id: str, *, user: str | None = None) -> Job | None:
        """One ingestion job; None on error (an unknown job included). An agent's client given the
        job's `user` reads it on the agent's route of that user, which serves the jobs of the agent's
        items, its own or shared; otherwise (and on a client without an agent, which ignores `user`)
        on the tenant's route, which needs the tenant's grant (client/README.md "Agent scopes")."""
        return self._run(programs.job(self.tenant, job_id, scope=self._job_scope(user)), "job")

    def wait(
        self,
        jobs: str | Job | Iterable[str | Job],
        timeout: float = WAIT_TIMEOUT_S,
        interval: float = WAIT_INTERVAL_S,
        *,
        user: str | None = None,
    ) -> list[Job] | None:
        """Poll until every job is completed, failed or skipped; the final jobs in the order given.
        A `deferred` job (the tenant's daily token budget is spent) is not final: it is condensed
        after the budget resets at 00:00 UTC. None when some job is not final within `timeout`
        (strict: `WaitTimeoutError`), or on error. An agent's client polls each job on the agent's
        route of `user`, else of a `Job`'s `user_id`, and a plain job id without `user` on the
        tenant's route (as `job`); a client without an agent ignores `user`."""
        program = programs.wait(self.tenant, jobs, timeout, interval, self.agent, user)
        return self._run(program, "wait")

    def usage(self) -> TenantUsage | None:
        """The tenant's LLM calls and tokens of the UTC day against its daily token budget, the
        jobs deferred until it resets, and when it does (docs/api.md "Usage"); None on error."""
        return self._run(programs.usage(self.tenant), "usage")

    # --- writes --------------------------------------------------------------------------------

    def add(
        self,
        user: str,
        content: Content,
        *,
        upsert: bool = True,
        idempotency_key: str | None = None,
        wait: bool | float = False,
        share: bool = False,
        **options: Unpack[ItemOptions],
    ) -> list[Job] | None:
        """Store a turn, a text, chat messages or items (client/README.md, "Methods").

        An agent's client stores them in the agent's own scope; `share=True` sets `"share": true`
        on each item (one that sets it itself keeps its own), which stores it in the user's shared
        memory instead. `share=True` without an agent is refused before any request
        (`InvalidInputError` naming `share`). Returns None at once and sends in the background (`flush()` waits for it). With
        `strict=True` it sends now and returns the jobs, one per item. With `wait=True` (or a
        number of seconds) it sends now, after what earlier `add`s queued, and waits until the
        jobs are final, 30 s at most (or the seconds given): the final jobs, or None."""
        call = self._ingest_call(user, content, options, upsert, idempotency_key, share)
        if call is None:
            return None
        if wait:
            if not self._writer.flush(self.policy.write_timeout):
                # Earlier adds are still queued: this one goes behind them (a user's order is
                # kept), not waited for.
                self._writer.submit(call)
                self._failed(RequestTimeoutError("earlier adds are still queued"), call, "add")
                return None
            return self._run(programs.ingest_and_wait(call, wait), "add")
        if self.strict:
            return self._run(programs.ingest(call), "add")
        self._writer.submit(call)
        return None

    def put(self, user: str, memory: str, expected_version: int) -> Memory | None:
        """Replace the summary, if it is at `expected_version`; the new memory, None on error
        (strict: `VersionConflictError` when another version is current)."""
        return self._run(programs.put(self._scope(user), memory, expected_version), "put")

    def delete(self, user: str) -> bool:
        """Forget the user entirely (an agent's client: the agent's scope of the user only); False
        on error."""
        return self._run(programs.delete(self._scope(user)), "delete") is True

    def forget(self, user: str) -> str | None:
        """Forget the user entirely, as `delete`; the id of the deletion receipt, None on error."""
        return self._run(programs.forget(self._scope(user)), "forget")

    def deletion(self, user: str, receipt_id: str) -> DeletionReceipt | None:
        """A deletion receipt of the user: what a delete erased, in counts; None on error."""
        return self._run(programs.deletion(self._scope(user), receipt_id), "deletion")

    def delete_fact(self, user: str, fact_id: str) -> bool:
        """Delete one fact; False on error (an unknown fact included)."""
        return self._run(programs.delete_fact(self._scope(user), fact_id), "delete_fact") is True

    def delete_record(self, user: str, record_id: str) -> bool:
        """Delete one record; False on error (an unknown record included)."""
        return self._run(programs.delete_record(self._scope(user), record_id), "delete_record") is True

    # --- the background writer and the connections --------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every `add` handed over so far was sent; False if `timeout` passed first."""
        return self._writer.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Flush (within `timeout`, default `exit_timeout`), stop the writer, close the connections."""
        flushed = self._writer.close(self._writer.exit_timeout if timeout is None else timeout)
        self.transport.close()
        return flushed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
