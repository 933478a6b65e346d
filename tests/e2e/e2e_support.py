"""Helpers of the end-to-end suite: the local stack as a subprocess, an HTTP client, polling.

The suite drives the service only over HTTP. Locally it starts `python -m local_stack --port 0`
(the entry point of `make dev`) with the OpenAI stub as its LLM; with `MEMORY_API_URL` set it
targets that deployed API instead and signs each request with SigV4.
"""

import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from tests.support.waiting import ASYNC_DEADLINE_S, wait_for

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"Hippocampus local stack ready on (http://\S+)")
AWS_ENDPOINT = re.compile(r"AWS endpoint: (http://\S+)")
MARKER = re.compile(r"\bzq[0-9a-f]{8}\b")
TERMINAL = frozenset({"completed", "failed", "skipped"})
# Starting a stack (moto, then one environment per function) takes ~5 s idle, a minute or more loaded.
START_DEADLINE_S = 180.0
STOP_DEADLINE_S = 60.0


def marker() -> str:
    """A word no LLM prompt contains by chance; the stub keeps every marker it is shown."""
    return "zq" + secrets.token_hex(4)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def stub_stack_environment(stub_url: str, **settings: str) -> dict[str, str]:
    """A local stack's environment with the OpenAI-compatible stub at `stub_url` as its LLM: this
    process's environment without the developer's own MEMORY_, OPENAI_, AWS_ and POWERTOOLS_
    variables (the child still inherits PATH, HOME, ...), plus `settings`; state in memory unless
    `settings` names a data directory (never the repository's `.local-stack/`)."""
    environment = {
        name: value
        for name, value in os.environ.items()  # noqa: TID251 - the child inherits PATH, HOME, ...
        if not name.startswith(("MEMORY_", "OPENAI_", "AWS_", "POWERTOOLS_"))
    }
    environment |= {"MEMORY_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": stub_url, "OPENAI_API_KEY": "test"}
    environment |= {"MEMORY_LOCAL_DATA_DIR": ":memory:", **settings}
    return environment


class LocalStackProcess:
    """`python -m local_stack --port 0` in its own process group, its output in a log file."""

    def __init__(self, log_path: Path, environment: dict[str, str], concurrency: int = 3) -> None:
        self.log_path = log_path
        self.environment = environment
        self.concurrency = concurrency
        self.url = ""
        self.aws_endpoint = ""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The stack's own process (its workers are its children)."""
        assert self._process is not None, "start() first"
        return self._process.pid

    def start(self, timeout_s: float = START_DEADLINE_S) -> "LocalStackProcess":
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "local_stack", "--port", "0", "--concurrency", str(self.concurrency)],
                cwd=ROOT,
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            ready, endpoint = READY.search(text), AWS_ENDPOINT.search(text)
            if ready and endpoint:
                self.url, self.aws_endpoint = ready.group(1), endpoint.group(1)
                return self
            if self._process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the local stack did not start:\n{self.log_tail(60)}")

    def stop(self) -> int | None:
        """SIGTERM (what Ctrl-C does), then wait; the exit code, or None if it had to be killed."""
        process = self._process
        if process is None or process.poll() is not None:
            return process.returncode if process else None
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            return None

    def kill(self) -> None:
        """SIGKILL to the whole process group (the stack and its workers), as a crash would."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


class SigV4(requests.auth.AuthBase):
    """SigV4 for execute-api with botocore, from the environment's credentials (refreshed as needed)."""

    def __init__(self, region: str) -> None:
        import boto3

        credentials = boto3.session.Session().get_credentials()
        if credentials is None:
            raise RuntimeError("MEMORY_API_URL is set but no AWS credentials are configured")
        self.credentials = credentials
        self.region = region

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        signed = AWSRequest(
            method=request.method,
            url=request.url,
            data=request.body,
            headers={k: v for k, v in request.headers.items() if k.lower() in {"content-type", "host"}},
        )
        SigV4Auth(self.credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(signed)
        request.headers.update(dict(signed.headers.items()))
        return request


def sigv4_auth(base_url: str) -> SigV4:
    """SigV4 for the API at `base_url`; the region comes from its host name, else the environment."""
    host = urlsplit(base_url).netloc
    match = re.search(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", host)
    region = (
        match.group(1) if match else os.getenv("AWS_REGION") or os.getenv("AWS_DEFAULT_REGION") or "us-east-1"
    )
    return SigV4(region)


# 429 (throttled) and 503 (a dependency failed) ask a client to send the request again; a loaded
# machine gets them at any time. Sent again after Retry-After, else a jittered backoff, for this long.
RETRIED_STATUSES = frozenset({429, 503})
RETRY_DEADLINE_S = 60.0
MAX_RETRY_PAUSE_S = 2.0


def retry_pause(response: requests.Response, attempt: int) -> float:
    """Retry-After (seconds) when the answer has one, else full jitter over 0.1 s doubling per attempt."""
    after = response.headers.get("Retry-After", "")
    if after.isdigit():
        return min(float(after), MAX_RETRY_PAUSE_S * 5)
    return random.uniform(0, min(0.1 * 2**attempt, MAX_RETRY_PAUSE_S))


class Api:
    """A small client of the HTTP API: responses as they come, plus helpers for the common calls.

    Every request is sent again on 429 or 503 as a client would (`RETRIED_STATUSES`), unless a
    test asks for the first answer itself (`raw=True`: a test of throttling)."""

    def __init__(self, base_url: str, auth: Any = None, diagnostics: Callable[[], str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.diagnostics = diagnostics
        self.session = requests.Session()

    @property
    def remote(self) -> bool:
        return self.auth is not None

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        raw: bool = False,
        exact_headers: bool = False,
    ) -> requests.Response:
        """`path` below the base URL. `exact_headers`: send `headers` alone (no JSON Accept and
        Content-Type added); `raw`: the first answer, even a 429 or 503."""
        all_headers = dict(headers or {})
        if not exact_headers:
            all_headers = {"Accept": "application/json", **all_headers}
            if json is not None or data is not None:
                all_headers.setdefault("Content-Type", "application/json")
        deadline = time.monotonic() + RETRY_DEADLINE_S
        attempt = 0
        while True:
            response = self.session.request(
                method,
                self.base_url + path,
                json=json,
                data=data,
                headers=all_headers,
                params=params,
                auth=self.auth,
                timeout=60,
            )
            if raw or response.status_code not in RETRIED_STATUSES or time.monotonic() > deadline:
                return response
            time.sleep(retry_pause(response, attempt))
            attempt += 1

    # --- paths ---------------------------------------------------------------------------------

    @staticmethod
    def memory_path(tenant: str, user: str) -> str:
        return f"/v1/tenants/{tenant}/users/{user}/memory"

    # --- calls ---------------------------------------------------------------------------------

    def ingest(
        self, tenant: str, user: str, items: list[dict[str, Any]], headers: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        response = self.request(
            "POST", self.memory_path(tenant, user), json={"items": items}, headers=headers
        )
        assert response.status_code == 202, response.text
        jobs: list[dict[str, Any]] = response.json()["jobs"]
        assert len(jobs) == len(items)
        return jobs

    def memory(self, tenant: str, user: str) -> dict[str, Any]:
        response = self.request("GET", self.memory_path(tenant, user))
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        etag, version = response.headers.get("ETag", ""), body["version"]
        # `"3"`, or `"3-<digest>"` once the user has facts or was deleted (docs/api.md "Headers").
        assert etag.startswith(f'"{version}-') or (etag == f'"{version}"' and not body["facts"]), etag
        return body

    def job(self, tenant: str, job_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/v1/tenants/{tenant}/jobs/{job_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def history(self, tenant: str, user: str, limit: int | None = None) -> list[dict[str, Any]]:
        params = {"limit": limit} if limit is not None else None
        response = self.request("GET", self.memory_path(tenant, user) + "/history", params=params)
        assert response.status_code == 200, response.text
        versions: list[dict[str, Any]] = response.json()["versions"]
        return versions

    def wait_job(
        self,
        tenant: str,
        job_id: str,
        statuses: frozenset[str] = TERMINAL,
        timeout_s: float = ASYNC_DEADLINE_S,
    ) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            response = self.request("GET", f"/v1/tenants/{tenant}/jobs/{job_id}")
            assert response.status_code == 200, response.text
            job: dict[str, Any] = response.json()
            return job if job["status"] in statuses else None

        return wait_for(
            probe, timeout_s, what=f"job {job_id} to be {sorted(statuses)}", diagnostics=self.diagnostics
        )

    def wait_completed(self, tenant: str, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        done = [self.wait_job(tenant, job["job_id"]) for job in jobs]
        for job in done:
            assert job["status"] == "completed", job
        return done


def assert_envelope(response: requests.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """The error envelope (docs/api.md), with the HTTP status repeated inside."""
    assert response.status_code == status, f"{response.status_code}: {response.text}"
    assert response.headers.get("Content-Type", "").startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert error["status"] == status, body
    assert re.fullmatch(r"[a-z][a-z0-9_]*", error["code"]), body
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["details"], list), body
    if code is not None:
        assert error["code"] == code, body
    return error


def stub_reply(body: dict[str, Any]) -> str:
    """The stub LLM's answer: every marker of the prompt (old memory and new content), in order.

    A condensation therefore keeps all markers it was shown, which makes lost updates, lost
    items and cross-user leaks visible in the stored memory. `LONGANSWER` in the content asks
    for an answer far over the word budget.
    """
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
    if "LONGANSWER" in prompt:
        return "This answer ignores the word budget. " + " ".join(["filler"] * 300) + "."
    markers = list(dict.fromkeys(MARKER.findall(prompt)))
    return ("Remembered: " + " ".join(markers) + ".") if markers else "Nothing worth keeping."


def stub_calls_with(stub: Any, *words: str) -> int:
    """How many LLM requests the stub received that mention any of `words`."""
    count = 0
    for request in stub.requests:
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        if any(word in text for word in words):
            count += 1
    return count


# A model that answers the built-in prompt with records (test_e2e_records.py, the memory browser's test).
_PARIS = re.compile(r"(rec_[0-9a-f]+) \| location \| [^|]+\| \S+ lives in Paris\.")


def structured_reply(body: dict[str, Any], moved: str = "{who} lives in Berlin.") -> str:
    """What a model following the built-in prompt answers: asked with a JSON schema, the summary and
    the record operations; the move invalidates the Paris record the prompt lists, with the record
    `moved` (`{who}`: the user's name)."""
    assert body["response_format"]["type"] == "json_schema", "the condenser asks for structured outputs"
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"] if m.get("role") == "user")
    keys = ("op", "record_id", "text", "category", "valid_from", "source_items")
    name = re.search(r"<<<USER_NAME>>>\n(\w+)", prompt)
    who = name.group(1) if name else "The user"
    paris = _PARIS.search(prompt)
    if "moved to Berlin" in prompt and paris:
        move = ("invalidate", paris.group(1), moved.format(who=who), "location", None, ["t2"])
        answer = {"summary": f"{who} lives in Berlin.", "operations": [dict(zip(keys, move, strict=True))]}
    else:
        add = ("add", None, f"{who} lives in Paris.", "location", None, ["t1"])
        answer = {"summary": f"{who} lives in Paris.", "operations": [dict(zip(keys, add, strict=True))]}
    return json.dumps(answer)
