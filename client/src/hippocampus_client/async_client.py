"""`AsyncMemoryClient`: the asyncio twin of `MemoryClient`, same methods, same semantics.

Each method runs the same program (programs.py) as its blocking twin, awaiting the transport
instead of blocking; see `MemoryClient` for what each returns. `add` hands its request to the
same background thread (writer.py), so nothing is lost when the event loop ends before it is sent.
"""

import asyncio
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


class AsyncMemoryClient(ClientBase):
    """`AsyncMemoryClient(endpoint="http://127.0.0.1:3000", tenant="acme")`; `await memory.get("alice")`.

    The constructor's parameters are `ClientBase`'s (base.py).
    """

    async def _run(self, program: Program[T], what: str) -> T | None:
        step: Call | Sleep | None = None
        try:
            step = next(program)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = program.send(None)
                else:
                    step = program.send(await self._async_sender.send(step))
        except StopIteration as stop:
            value: T = stop.value
            return value
        except Exception as error:
            self._failed(error, step, what)
            return None
        finally:
            program.close()

    # --- reads: None on any error --------------------------------------------------------------

    async def get(self, user: str) -> str | None:
        return await self._run(programs.get(self._scope(user)), "get")

    async def get_full(self, user: str) -> Memory | None:
        return await self._run(programs.get_full(self._scope(user)), "get_full")

    async def get_scopes(self, user: str) -> AgentMemory | None:
        return await self._run(programs.get_scopes(self._scope(user)), "get_scopes")

    async def query(self, user: str, text: str, **options: Unpack[QueryOptions]) -> QueryAnswer | None:
        request = self._query_request(text, options)
        return await self._run(programs.query(self._scope(user), request), "query")

    async def context(self, user: str, query: str | None = None, max_words: int = 300) -> Context | None:
        request = self._context_request(query, max_words)
        return await self._run(programs.context(self._scope(user), request), "context")

    async def history(self, user: str, limit: int = 20) -> list[MemoryVersion] | None:
        return await self._run(programs.history(self._scope(user), limit), "history")

    async def facts(self, user: str, limit: int | None = None) -> list[Fact] | None:
        read = programs.ListRead(limit, self.policy.timeout)
        return await self._run(programs.facts(self._scope(user), read), "facts")

    async def episodes(self, user: str, limit: int | None = None) -> list[Episode] | None:
        read = programs.ListRead(limit, self.policy.timeout)
        return await self._run(programs.episodes(self._scope(user), read), "episodes")

    async def records(
        self,
        user: str,
        *,
        as_of: datetime | str | None = None,
        known_at: datetime | str | None = None,
        include_invalidated: bool = False,
        limit: int | None = None,
    ) -> list[MemoryRecord] | None:
        read = programs.ListRead(limit, self.policy.timeout)
        view = RecordView(as_of, known_at, include_invalidated)
        return await self._run(programs.records(self._scope(user), read, view), "records")

    async def export(self, user: str) -> Export | None:
        return await self._run(programs.export(self._scope(user), self.policy.timeout), "export")

    async def job(self, job_id: str, *, user: str | None = None) -> Job | None:
        return await self._run(programs.job(self.tenant, job_id, scope=self._job_scope(user)), "job")

    async def wait(
        self,
        jobs: str | Job | Iterable[str | Job],
        timeout: float = WAIT_TIMEOUT_S,
        interval: float = WAIT_INTERVAL_S,
        *,
        user: str | None = None,
    ) -> list[Job] | None:
        program = programs.wait(self.tenant, jobs, timeout, interval, self.agent, user)
        return await self._run(program, "wait")

    async def usage(self) -> TenantUsage | None:
        return await self._run(programs.usage(self.tenant), "usage")

    # --- writes --------------------------------------------------------------------------------

    async def add(
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
        """None at once (sent in the background); with `strict=True`, sent now: the jobs; with
        `wait=True` (or seconds), sent now and waited for: the final jobs, or None. `share=True`:
        to the user's shared memory (an agent's client only)."""
        call = self._ingest_call(user, content, options, upsert, idempotency_key, share)
        if call is None:
            return None
        if wait:
            if not await asyncio.to_thread(self._writer.flush, self.policy.write_timeout):
                # Earlier adds are still queued: this one goes behind them (a user's order is
                # kept), not waited for.
                self._writer.submit(call)
                self._failed(RequestTimeoutError("earlier adds are still queued"), call, "add")
                return None
            return await self._run(programs.ingest_and_wait(call, wait), "add")
        if self.strict:
            return await self._run(programs.ingest(call), "add")
        self._writer.submit(call)
        return None

    async def put(self, user: str, memory: str, expected_version: int) -> Memory | None:
        return await self._run(programs.put(self._scope(user), memory, expected_version), "put")

    async def delete(self, user: str) -> bool:
        return await self._run(programs.delete(self._scope(user)), "delete") is True

    async def forget(self, user: str) -> str | None:
        return await self._run(programs.forget(self._scope(user)), "forget")

    async def deletion(self, user: str, receipt_id: str) -> DeletionReceipt | None:
        return await self._run(programs.deletion(self._scope(user), receipt_id), "deletion")

    async def delete_fact(self, user: str, fact_id: str) -> bool:
        return await self._run(programs.delete_fact(self._scope(user), fact_id), "delete_fact") is True

    async def delete_record(self, user: str, record_id: str) -> bool:
        return await self._run(programs.delete_record(self._scope(user), record_id), "delete_record") is True

    # --- the background writer and the connections --------------------------------------------

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait (without blocking the loop) until every `add` handed over so far was sent."""
        return await asyncio.to_thread(self._writer.flush, timeout)

    async def aclose(self, timeout: float | None = None) -> bool:
        """Flush (within `timeout`, default `exit_timeout`), stop the writer, close the connections."""
        wait = self._writer.exit_timeout if timeout is None else timeout
        flushed = await asyncio.to_thread(self._writer.close, wait)
        await self.transport.aclose()
        return flushed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
