"""What `hippocampus` prints (client/README.md "CLI").

With `--json` every command prints exactly one JSON document on stdout, an error included (as
the API's envelope, `{"error": {...}}`, docs/api.md "Errors"); otherwise short lines for people.
Either way an error also goes to stderr as one line naming its code and status, and the exit
code is 1: a script can rely on the code, a person reads the line, nobody sees a traceback.
"""

import json
from collections.abc import Iterable
from typing import Any, NoReturn, TypeVar

import click
from pydantic import BaseModel

from .errors import HippocampusError
from .models import Job, MemoryRecord, TenantUsage

T = TypeVar("T")  # not PEP 695: the client supports Python 3.11 (client/pyproject.toml)
EXIT_ERROR = 1
MAX_DETAILS = 3  # a validation error may name many fields; the line stays one line


def plain(value: Any) -> Any:
    """`value` as JSON-ready data: models dumped as the API sends them, lists and dicts walked."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: plain(entry) for key, entry in value.items()}
    if isinstance(value, list | tuple):
        return [plain(entry) for entry in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(plain(value), indent=2, ensure_ascii=False)


def emit_json(value: Any) -> None:
    click.echo(dumps(value))


def note(text: str) -> None:
    """A remark for people (progress, "nothing yet"): on stderr, so stdout stays the data."""
    click.echo(text, err=True)


def error_line(error: HippocampusError, hint: str | None = None) -> str:
    """`error: not_found (404): no such fact [request id …]`: the code first, for grep and people."""
    status = f" ({error.status})" if error.status is not None else ""
    message = " ".join(_message(error, hint).split())  # one line, whatever the server sent
    fields = [f"{d.get('field')}: {d.get('message')}" for d in error.details[:MAX_DETAILS]]
    if fields:
        message += " (" + "; ".join(fields) + ")"
    request = f" [request id {error.request_id}]" if error.request_id else ""
    return f"error: {error.code}{status}: {message}{request}"


def error_document(error: HippocampusError, hint: str | None = None) -> dict[str, Any]:
    """The envelope of docs/api.md "Errors", also for the client's own errors (status null)."""
    return {
        "error": {
            "code": error.code,
            "message": _message(error, hint),
            "status": error.status,
            "details": error.details,
            "request_id": error.request_id,
        }
    }


def _message(error: HippocampusError, hint: str | None) -> str:
    """The error's message, and what the CLI knows beside it (the endpoint that did not answer)."""
    message = error.message or str(error)
    return f"{message}; {hint}" if hint else message


def fail(error: HippocampusError, as_json: bool, hint: str | None = None) -> NoReturn:
    if as_json:
        emit_json(error_document(error, hint))
    note(error_line(error, hint))
    raise click.exceptions.Exit(EXIT_ERROR)


def job_line(job: Job) -> str:
    """`job-… completed item=turn-1 version=3`, plus the error of a failed, skipped or deferred job
    (`deferred … error=token_budget_exhausted: …`: waiting for the tenant's token budget)."""
    parts = [job.job_id, job.status]
    if job.item_id:
        parts.append(f"item={job.item_id}")
    if job.memory_version is not None:
        parts.append(f"version={job.memory_version}")
    if job.error is not None:
        parts.append(f"error={job.error.code}: {job.error.message}".rstrip(": "))
    return " ".join(parts)


def usage_line(usage: TenantUsage) -> str:
    """`acme on 2026-12-05 (UTC): 12 LLM calls, 48,210 tokens (40,100 prompt + 8,110 completion) of
    200,000 — 151,790 left; 3 jobs deferred; resets at 2026-12-06T00:00:00Z`; `no budget` without one."""
    tokens = (
        f"{usage.tokens:,} tokens ({usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion)"
    )
    if usage.budget is None:
        against = f"{tokens}, no budget"
    else:
        left = usage.remaining if usage.remaining is not None else max(0, usage.budget - usage.tokens)
        against = f"{tokens} of {usage.budget:,} — {left:,} left"
    deferred = f"{_grouped(usage.deferred_jobs, 'job')} deferred"
    return (
        f"{usage.tenant_id} on {usage.day} (UTC): {_grouped(usage.calls, 'LLM call')}, {against}; "
        f"{deferred}; resets at {usage.resets_at or '-'}"
    )


def _grouped(number: int, noun: str) -> str:
    """`1 job`, `12,500 LLM calls`: `count` with thousands separated."""
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def record_line(record: MemoryRecord) -> str:
    """`2023-05-08 location: Moved to Berlin. [rec_…]`: when it became true, its category, its text
    on one line and its id; a replaced one adds `(until 2024-02-01, superseded by rec_…)`."""
    text = " ".join(record.text.split())
    line = f"{_day(record.valid_from)} {record.category or '-'}: {text} [{record.id}]"
    ended = [f"until {_day(record.valid_to)}"] if record.valid_to else []
    if not ended and record.invalidated_at:
        ended = [f"invalidated {_day(record.invalidated_at)}"]
    if record.superseded_by:
        ended.append(f"superseded by {record.superseded_by}")
    return f"{line} ({', '.join(ended)})" if ended else line


def _day(timestamp: str | None) -> str:
    """The date of an RFC 3339 timestamp, as written (its own offset): `2023-05-08`."""
    return timestamp[:10] if timestamp else "-"


def count(number: int, noun: str) -> str:
    """`1 job`, `2 jobs`."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def indented(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def echo_lines(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(line)


def required(value: T | None) -> T:  # noqa: UP047 - Python 3.11
    """The result of a strict call: strict mode raises instead of returning None, so None here
    would be a broken promise of the client, not an answer."""
    assert value is not None, "the strict client returned None"
    return value
