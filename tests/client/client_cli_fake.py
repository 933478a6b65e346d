"""A fake Hippocampus for the CLI's tests: a threaded 127.0.0.1 HTTP server that answers the routes
of docs/api.md like the service (envelopes, 202 with jobs, the 1 MiB and 100-item limits, the
Idempotency-Key replay, job ids deterministic in user, item id and content, jobs `deferred` by the
token budget, the tenant's usage) and the condenser's `redrive_dead_letters` through Lambda's
Invoke API path, recording what it was sent."""

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from client_test_servers import BUDGET_SPENT, usage_body

Answer = tuple[int, dict[str, str], Any]
MAX_BODY = 1_048_576
# Marks in an item's text: refused with 422 (as a bad field is), its job failed, its job never final.
INVALID_MARK, FAIL_MARK, STUCK_MARK = "REFUSE-ME", "FAIL-ME", "STAY-QUEUED"
# Its job `deferred` (the tenant's token budget spent) on its first DEFERRED_READS reads, then
# condensed; with STUCK_MARK too, deferred for good.
DEFER_MARK, DEFERRED_READS = "OVER-BUDGET", 2


def envelope(code: str, status: int, message: str = "refused", details: list[Any] | None = None) -> Answer:
    return (
        status,
        {},
        {"error": {"code": code, "message": message, "status": status, "details": details or []}},
    )


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: dict[str, str]


@dataclass
class FakeHippocampus:
    requests: list[Request] = field(default_factory=list)
    memories: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    records: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # newest first
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    accepted: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # new item ids, in order
    replays: int = 0  # requests answered from an Idempotency-Key record
    ingests: int = 0  # ingest requests accepted (replays included)
    refuse_ingest_after: int | None = None  # then 503 to every ingest
    throttle_next: int = 0  # answer this many ingests with 429 first
    after_ingest: Callable[[int], None] | None = None  # called with `ingests` after each accepted
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)  # by tenant; else none used, no budget
    job_reads: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0
    redrive_limits: list[int] = field(default_factory=list)
    _keys: dict[tuple[str, str, str], tuple[str, Answer]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, extra, body = fake.answer(self.command, self.path, headers, raw)
                content = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in ({"Content-Type": "application/json"} | extra).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeHippocampus":
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- routing -------------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        if len(raw) > MAX_BODY:
            return envelope("payload_too_large", 413)
        body = json.loads(raw) if raw else None
        split = urlsplit(target)
        parts = [unquote(p) for p in split.path.strip("/").split("/")]
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        with self._lock:
            self.requests.append(Request(method, split.path, headers, body, query))
            if parts[:2] == ["2015-03-31", "functions"]:
                return self._invoke(parts[2], body)
            if parts[:2] != ["v1", "tenants"] or len(parts) < 4:
                return envelope("not_found", 404)
            tenant = parts[2]
            if parts[3:] == ["usage"] and method == "GET":
                return 200, {}, self.usage.get(tenant) or usage_body(tenant)
            if parts[3] == "jobs":
                return self._job(tenant, parts[4])
            user, rest = parts[4], parts[6:]
            return self._memory_route(method, tenant, user, rest, headers, body, query)

    def _memory_route(
        self,
        method: str,
        tenant: str,
        user: str,
        rest: list[str],
        headers: dict[str, str],
        body: Any,
        query: dict[str, str],
    ) -> Answer:
        key = (tenant, user)
        if not rest and method == "GET":
            memory = self._memory(key)
            return 200, {"ETag": f'"{memory["version"]}"'}, memory
        if not rest and method == "POST":
            return self._ingest(key, headers.get("idempotency-key"), body)
        if not rest and method == "DELETE":
            self.memories.pop(key, None)
            return 204, {"Deletion-Receipt": "del_0123456789abcdef01234567"}, None
        if rest[:1] == ["facts"] and method == "DELETE":
            facts = self._memory(key)["facts"]
            if not any(f["id"] == rest[1] for f in facts):
                return envelope("not_found", 404, "no such fact")
            facts[:] = [f for f in facts if f["id"] != rest[1]]
            return 204, {}, None
        if rest == ["records"] and method == "GET":
            return self._records(key, query)
        if rest[:1] == ["records"] and method == "DELETE":
            records = self.records.get(key, [])
            if not any(r["id"] == rest[1] for r in records):
                return envelope("not_found", 404, "no such record")
            records[:] = [r for r in records if r["id"] != rest[1]]
            return 204, {}, None
        if rest == ["history"]:
            memory = self._memory(key)
            versions = [{"version": memory["version"], "memory": memory["memory"], "job_ids": []}]
            return 200, {}, {"versions": versions[: int(query.get("limit", 20))] if memory["version"] else []}
        if rest == ["export"]:
            jobs = [job for job in self.jobs.values() if (job["tenant_id"], job["user_id"]) == key]
            return 200, {}, {"tenant_id": tenant, "user_id": user, "memory": self._memory(key), "jobs": jobs}
        if rest == ["query"]:
            words = set(body["query"].lower().split())
            hits = [
                f for f in self._memory(key)["facts"] if words & set(f["text"].lower().rstrip(".").split())
            ]
            results = [{"type": "fact", "id": f["id"], "text": f["text"], "score": 0.9} for f in hits]
            return 200, {}, {"memory": self._memory(key)["memory"], "version": 1, "results": results}
        if rest == ["context"]:
            text = f"What you know about this user:\n{self._memory(key)['memory']}"
            return (
                200,
                {},
                {"context": text, "word_count": len(text.split()), "sources": [{"type": "memory"}]},
            )
        return envelope("method_not_allowed", 405)

    def _records(self, key: tuple[str, str], query: dict[str, str]) -> Answer:
        """`GET …/memory/records` (docs/api.md "Records"); times compared as the UTC `Z` strings
        the tests give, the cursor an offset."""
        found = self.records.get(key, [])
        as_of, known_at = query.get("as_of"), query.get("known_at")
        if as_of:
            found = [r for r in found if r["valid_from"] <= as_of and not (r["valid_to"] or "~") <= as_of]
        if known_at:
            found = [
                r
                for r in found
                if r["recorded_at"] <= known_at and not (r["invalidated_at"] or "~") <= known_at
            ]
        if not (as_of or known_at or query.get("include_invalidated") == "true"):
            found = [r for r in found if r["invalidated_at"] is None]
        start, limit = int(query.get("cursor") or 0), int(query.get("limit", 20))
        end = start + limit
        return 200, {}, {"items": found[start:end], "next_cursor": str(end) if end < len(found) else None}

    # --- memory and jobs -----------------------------------------------------------------------

    def _memory(self, key: tuple[str, str]) -> dict[str, Any]:
        return self.memories.setdefault(
            key, {"tenant_id": key[0], "user_id": key[1], "memory": None, "version": 0, "facts": []}
        )

    def _ingest(self, key: tuple[str, str], idempotency_key: str | None, body: Any) -> Answer:
        if self.refuse_ingest_after is not None and self.ingests >= self.refuse_ingest_after:
            return envelope("dependency_unavailable", 503, "the queue is down")
        if self.throttle_next > 0:
            self.throttle_next -= 1
            return envelope("throttled", 429, "slow down")
        items = body.get("items") or []
        if not 1 <= len(items) <= 100:
            return envelope("validation_error", 422, "1 to 100 items", [{"field": "items"}])
        bad = [i for i, item in enumerate(items) if INVALID_MARK in str(item.get("text", ""))]
        if bad:
            return envelope("validation_error", 422, "invalid request", [{"field": f"items[{bad[0]}].text"}])
        canonical = json.dumps(body, sort_keys=True)
        if idempotency_key:
            record = self._keys.get((*key, idempotency_key))
            if record is not None:
                if record[0] != canonical:
                    return envelope("idempotency_conflict", 409)
                self.replays += 1
                return record[1]
        answer: Answer = (202, {}, {"jobs": [self._job_for(key, item) for item in items]})
        if idempotency_key:
            self._keys[(*key, idempotency_key)] = (canonical, answer)
        self.ingests += 1
        if self.after_ingest is not None:
            self.after_ingest(self.ingests)
        return answer

    def _job_for(self, key: tuple[str, str], item: dict[str, Any]) -> dict[str, Any]:
        item_id = item.get("id") or f"item-{len(self.jobs)}"
        content = json.dumps({k: v for k, v in item.items() if k != "id"}, sort_keys=True)
        job_id = "job-" + hashlib.sha256(f"{key}{item_id}{content}".encode()).hexdigest()[:16]
        if job_id in self.jobs:  # the same item again: the existing job, nothing queued (docs/api.md)
            return self.jobs[job_id]
        self.accepted.setdefault(key, []).append(item_id)
        fact = item.get("infer") is False
        if fact:
            self._memory(key)["facts"].append({"id": item_id, "text": item["text"]})
        job = {"job_id": job_id, "tenant_id": key[0], "user_id": key[1], "item_id": item_id}
        job |= {"status": "completed" if fact else "queued", "text": item.get("text", "")}
        self.jobs[job_id] = job
        return job

    def _job(self, tenant: str, job_id: str) -> Answer:
        job = self.jobs.get(job_id)
        if job is None or job["tenant_id"] != tenant:
            return envelope("not_found", 404, "no such job")
        if DEFER_MARK in job["text"] and job["status"] in ("queued", "deferred"):
            self.job_reads[job_id] = self.job_reads.get(job_id, 0) + 1
            if STUCK_MARK in job["text"] or self.job_reads[job_id] <= DEFERRED_READS:
                job |= {"status": "deferred", "error": BUDGET_SPENT}
                return 200, {}, job
            job |= {"status": "queued", "error": None}
        if job["status"] == "queued" and STUCK_MARK not in job["text"]:  # condensed on its first read
            memory = self._memory((tenant, job["user_id"]))
            memory["version"] += 1
            memory["memory"] = " ".join(filter(None, [memory["memory"], job["text"]]))
            job |= {"status": "failed" if FAIL_MARK in job["text"] else "completed"}
            job["memory_version"] = memory["version"]
        return 200, {}, job

    # --- the Invoke API ------------------------------------------------------------------------

    def _invoke(self, function: str, payload: Any) -> Answer:
        if function != "hippocampus-dev-condenser":
            message = f"Function not found: {function}"
            return (
                404,
                {"x-amzn-ErrorType": "ResourceNotFoundException"},
                {"Type": "User", "message": message},
            )
        if set(payload) != {"action", "limit"} or payload["action"] != "redrive_dead_letters":
            return 200, {}, envelope("validation_error", 422, "bad payload")[2]  # a result, not a status
        moved = min(payload["limit"], self.dead_letters)
        self.dead_letters -= moved
        self.redrive_limits.append(payload["limit"])
        return 200, {}, {"moved": moved, "jobs_requeued": moved, "remaining": self.dead_letters}
