"""What `MemoryClient` and `AsyncMemoryClient` share: settings, the transport, the error policy.

The clients differ only in how they run a program (programs.py): blocking or with `await`.
Everything else, from the configuration to what `add` sends and how an error is reported,
is here once.
"""

import logging
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Self, TypedDict
from urllib.parse import urlsplit

from . import calls, spool
from .breaker import CircuitBreaker
from .calls import Call, Scope
from .errors import CircuitOpenError, ConfigurationError, HippocampusError, InvalidInputError
from .http import HttpTransport
from .identifiers import check_agent, check_tenant, loggable_ids
from .invoke import InvokeTarget, InvokeTransport, stack_outputs
from .items import Content, build_items
from .retry import AsyncSender, Policy, SyncSender
from .transport import Transport
from .writer import BackgroundWriter, Unsent, WriterOptions, WriterStats

logger = logging.getLogger("hippocampus_client")
ENDPOINT_VARIABLE, TENANT_VARIABLE = "HIPPOCAMPUS_ENDPOINT", "HIPPOCAMPUS_TENANT"
# Read by the CLI and hippocampus-mcp only: a client is an agent's when made with `agent=`.
AGENT_VARIABLE = "HIPPOCAMPUS_AGENT"


class ItemOptions(TypedDict, total=False):
    """Item fields `add` applies to each item it sends (docs/api.md "Ingest").

    `occurred_at`: when the turn or fact happened, a timezone-aware `datetime` or an RFC 3339
    string with `Z` or an offset; anything else is refused before any request (timestamps.py).
    """

    id: str
    infer: bool
    user_name: str
    custom_instructions: str
    metadata: dict[str, Any]
    additional_metadata: dict[str, Any]
    title: str
    is_markdown: bool
    occurred_at: datetime | str


ResultKind = Literal["fact", "episode", "record"]

# When what a query looks for happened: `from` and `to`, RFC 3339 with an offset, either open
# (docs/api.md "Query"). A functional TypedDict: `from` is a Python keyword.
TimeRange = TypedDict("TimeRange", {"from": str, "to": str}, total=False)


class QueryOptions(TypedDict, total=False):
    """The optional fields of `POST …/memory/query` (docs/api.md "Query"); unset: the service's default."""

    top_k: int
    types: list[ResultKind]
    alpha: float
    recency_bias: float
    metadata_filters: dict[str, Any]
    include_memory: bool
    time_range: TimeRange
    min_score: float


def make_transport(
    endpoint: str | None,
    *,
    region: str | None = None,
    sign: bool | None = None,
    invoke: InvokeTarget | None = None,
    lambda_endpoint_url: str | None = None,
) -> Transport:
    """The transport for these settings: invoke when given a target, else HTTP, signed for https://."""
    if invoke is not None:
        return InvokeTransport(invoke, region=region, endpoint_url=lambda_endpoint_url)
    endpoint = endpoint or os.environ.get(ENDPOINT_VARIABLE)
    if not endpoint:
        raise ConfigurationError(f"no endpoint: pass endpoint=... or set {ENDPOINT_VARIABLE}")
    scheme = urlsplit(endpoint).scheme
    if scheme not in ("http", "https"):
        raise ConfigurationError("the endpoint must be an http:// or https:// URL")
    if sign if sign is not None else scheme == "https":
        from .sigv4 import SigV4Transport

        return SigV4Transport(endpoint, region=region)
    return HttpTransport(endpoint)


class ClientBase:
    """Settings shared by both clients.

    - `endpoint`, `tenant`: default to HIPPOCAMPUS_ENDPOINT and HIPPOCAMPUS_TENANT.
    - `agent`: every per-user call goes to that agent's scope of the user's memory, the routes
      under `…/users/{user}/agents/{agent}/` (client/README.md, "Agent scopes"); an id, checked
      like the tenant. No variable stands in for it.
    - An `https://` endpoint is signed with SigV4 (the `[aws]` extra; `region` from the host
      name or the environment); `http://` is not. `sign` overrides that choice.
    - `invoke=InvokeTarget(...)` (with `lambda_endpoint_url` for a local Invoke API) calls the
      functions with `lambda:Invoke` instead; `transport=` takes any ready transport.
    - `timeout`: seconds per read, retries included (3); `write_timeout`: per write (10);
      `max_retries`: retries of a 429 or 503 (2).
    - `max_queue`: items `add` may hold before dropping the newest (10,000); `exit_timeout`:
      how long the interpreter's exit waits for them (10 s); `writer_threads`: users whose
      requests are sent at once (4); `spool_path` (default HIPPOCAMPUS_SPOOL, none): a file
      where what is still unsent at close is kept, sent by the next client of the same tenant
      and agent (or none) made with it; `on_unsent(list of Unsent(user_id, item_ids))`, each
      with its `agent_id`: called at close with what is left
      (client/README.md, "The background writer").
    - `breaker_cooldown`: seconds every request is skipped after one timed out or could not
      connect (30; 0: never skipped), then one trial goes (client/README.md, "Circuit breaker").
    - `strict=True`: raise `HippocampusError` subclasses instead of returning None, and make
      `add` synchronous.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        tenant: str | None = None,
        *,
        agent: str | None = None,
        strict: bool = False,
        timeout: float = 3.0,
        write_timeout: float = 10.0,
        max_retries: int = 2,
        max_queue: int = 10_000,
        exit_timeout: float = 10.0,
        writer_threads: int = 4,
        spool_path: str | os.PathLike[str] | None = None,
        on_unsent: Callable[[list[Unsent]], object] | None = None,
        breaker_cooldown: float = 30.0,
        region: str | None = None,
        sign: bool | None = None,
        invoke: InvokeTarget | None = None,
        lambda_endpoint_url: str | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.tenant = tenant or os.environ.get(TENANT_VARIABLE) or ""
        if not self.tenant:
            raise ConfigurationError(f"no tenant: pass tenant=... or set {TENANT_VARIABLE}")
        check_tenant(self.tenant)
        self.agent = None if agent is None else check_agent(agent)
        self.strict = strict
        self.transport: Transport = transport or make_transport(
            endpoint, region=region, sign=sign, invoke=invoke, lambda_endpoint_url=lambda_endpoint_url
        )
        self.policy = Policy(timeout=timeout, write_timeout=write_timeout, max_retries=max_retries)
        # One breaker for every call of this client, reads, writes and the background writer's.
        self.breaker = CircuitBreaker(breaker_cooldown)
        self._sync_sender = SyncSender(self.transport, self.policy, self.breaker)
        self._async_sender = AsyncSender(self.transport, self.policy, self.breaker)
        spool_file = spool_path or os.environ.get(spool.SPOOL_VARIABLE) or None
        options = WriterOptions(
            max_queue=max_queue,
            exit_timeout=exit_timeout,
            threads=writer_threads,
            spool_path=Path(spool_file) if spool_file else None,
            on_unsent=on_unsent,
        )
        # Both clients write in the background from threads, with the blocking sender (writer.py).
        self._writer = BackgroundWriter(self._sync_sender.send, options, self.breaker)
        if options.spool_path is not None:
            # Its own scope's lines only: another scope's may be refused to this client's caller (spool.py).
            self._writer.resume(spool.claim(options.spool_path, self.tenant, self.agent))

    @classmethod
    def from_stack(
        cls,
        stack_name: str,
        tenant: str | None = None,
        *,
        via: Literal["invoke", "api"] = "invoke",
        region: str | None = None,
        session: Any = None,
        lambda_endpoint_url: str | None = None,
        **options: Any,
    ) -> Self:
        """A client of a deployed stack, from its CloudFormation outputs: the functions' names
        (`via="invoke"`, direct `lambda:Invoke`) or `ApiUrl` (`via="api"`, HTTPS signed).
        Reads the outputs now: raises `ConfigurationError` if it cannot."""
        outputs = stack_outputs(stack_name, region=region, session=session)
        transport: Transport
        if via == "invoke":
            target = InvokeTarget.from_outputs(outputs)
            transport = InvokeTransport(
                target, region=region, endpoint_url=lambda_endpoint_url, session=session
            )
        else:
            from .sigv4 import SigV4Transport

            if not outputs.get("ApiUrl"):
                raise ConfigurationError(f"the stack {stack_name} has no output ApiUrl")
            transport = SigV4Transport(outputs["ApiUrl"], region=region, session=session)
        return cls(tenant=tenant, transport=transport, **options)

    def __repr__(self) -> str:
        agent = f", agent={self.agent!r}" if self.agent is not None else ""
        return (
            f"{type(self).__name__}(tenant={self.tenant!r}{agent}, transport={self.transport!r}, "
            f"strict={self.strict})"
        )

    def writer_stats(self) -> WriterStats:
        """Counts of items of the background writer: queued, in flight, sent, failed, dropped,
        unsent (left at close), and the requests that carried them."""
        return self._writer.stats()

    # --- shared by both clients' methods -------------------------------------------------------

    def _scope(self, user: str) -> Scope:
        """Whose memory a per-user call reads or writes: the user's, or this client's agent's scope."""
        return Scope(self.tenant, user, self.agent)

    def _job_scope(self, user: str | None) -> Scope | None:
        """Where `job` reads a job: an agent's client given its `user`, on the agent's route of that
        user (`get_agent_job`); else (None) on the tenant's route."""
        return self._scope(user) if user is not None and self.agent is not None else None

    def _failed(self, error: BaseException, step: object, what: str) -> None:
        """Strict: raise. Otherwise log the failure (ids, status and code, never content)."""
        if self.strict:
            raise error
        ids = step.log_ids() if isinstance(step, Call) else str(step or "")
        if isinstance(error, HippocampusError):  # the fields it names: an id refused, a 422's
            fields = [f"field={d['field']}" for d in error.details if isinstance(d.get("field"), str)]
            ids = " ".join([ids, *fields]).strip()
        if isinstance(error, CircuitOpenError):  # the opening was logged once (breaker.py)
            logger.debug("hippocampus %s skipped: circuit open %s", what, ids)
        elif isinstance(error, HippocampusError):
            logger.warning(
                "hippocampus %s failed: code=%s status=%s request_id=%s %s",
                what, error.code, error.status, error.request_id, ids,
            )  # fmt: skip
        else:
            logger.warning("hippocampus %s failed: %s %s", what, type(error).__name__, ids)

    def _ingest_call(
        self,
        user: str,
        content: Content,
        options: Mapping[str, Any],
        upsert: bool,
        idempotency_key: str | None,
        share: bool = False,
    ) -> Call | None:
        """The ingest request of an `add`; None (logged) when there is nothing valid to send.
        `share`: each item goes to the user's shared memory rather than the agent's own."""
        try:
            if share is not False:
                self._check_share(share)
                options = {**options, "share": True}
            items = build_items(content, options)
            return calls.ingest(self._scope(user), items, upsert, idempotency_key)
        except Exception as error:  # e.g. a number for `content`, None for `user`: never raised by default
            problem = (
                error if isinstance(error, HippocampusError) else InvalidInputError(type(error).__name__)
            )
            self._failed(problem, loggable_ids(**self._scope(user).ids), "add")
            return None

    def _check_share(self, share: object) -> None:
        """`share=True` is an agent's only: a user's routes write the shared memory already, and
        refuse the field (docs/api.md "Agent scopes")."""
        if share is not True:
            message = "share must be True or False"
        elif self.agent is None:
            message = "share=True needs a client of an agent (agent=...): a user's memory is shared already"
        else:
            return
        raise InvalidInputError(message, details=[{"field": "share", "message": message, "type": "share"}])

    @staticmethod
    def _query_request(text: str, options: QueryOptions) -> dict[str, Any]:
        return {"query": text} | {name: value for name, value in options.items() if value is not None}

    @staticmethod
    def _context_request(query: str | None, max_words: int) -> dict[str, Any]:
        return {"max_words": max_words} | ({"query": query} if query is not None else {})
