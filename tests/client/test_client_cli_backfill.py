"""`hippocampus backfill` (client/README.md "CLI") against the fake Hippocampus (client_cli_fake.py):
the line formats, the batching limits, a refused line, throttling, and interrupted runs resumed
without a duplicate (every item reaches the fake exactly once by id, or is recognised by the
Idempotency-Key of its batch)."""

import _thread
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from client_backfill import backfill, posted, summary, write_lines
from client_cli_fake import FakeHippocampus

from hippocampus_client import cli_backfill_state, cli_settings
from hippocampus_client.cli import cli
from hippocampus_client.cli_backfill_lines import item_id
from hippocampus_client.cli_backfill_state import BackfillState


@pytest.fixture
def fake() -> Iterator[FakeHippocampus]:
    with FakeHippocampus() as server:
        yield server


@pytest.fixture
def no_client_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's own retries only, so a refusal costs no client backoff in the test."""
    monkeypatch.setattr(cli_settings, "CLI_MAX_RETRIES", 0)


def many_users(path: Path, users: int, lines_each: int) -> tuple[Path, dict[str, list[str]]]:
    """Interleaved lines of several users, and each user's item ids in file order."""
    lines, expected = [], {}
    for turn in range(lines_each):
        for u in range(users):
            user = f"user{u}"
            lines.append({"user_id": user, "text": f"User: turn {turn} of {user}\nAssistant: ok"})
            expected.setdefault(user, []).append(item_id(user, len(lines), 1, {"text": lines[-1]["text"]}))
    return write_lines(path, lines), expected


def test_every_line_format_becomes_the_documented_items(fake: FakeHippocampus, tmp_path: Path) -> None:
    conversation = [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "I am Bob."},
                    {"role": "assistant", "content": "Hi Bob!"}]  # fmt: skip
    lines = [
        {"user_id": "alice", "text": "User: I sell candles.\nAssistant: Nice!"},
        {"user_id": "bob", "messages": conversation, "user_name": "Bob"},
        "",
        {
            "user_id": "alice",
            "title": "T",
            "items": [{"id": "pref", "text": "Prefers email.", "infer": False}, {"text": "free"}],
        },
        {
            "user_id": "carol",
            "id": "conv",
            "turns": [
                "User: hi\nAssistant: hello",
                {"user": "a", "assistant": "b"},
                [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}],
                {"text": "e", "title": "own"},
            ],
        },
        {"user_id": "dave", "user_assistant_pairs": [{"user": "x", "assistant": "y"}]},
        "{not json",
        {"user": "erin", "text": "no user_id"},
    ]
    path = write_lines(tmp_path / "export.jsonl", lines)
    result = backfill(fake, path)
    report = summary(result)
    assert result.exit_code == 1  # two lines failed
    assert {k: report[k] for k in ("lines", "done", "failed", "skipped", "users", "items")} == {
        "lines": 7, "done": 5, "failed": 2, "skipped": 0, "users": 4, "items": 9,
    }  # fmt: skip
    assert [(f["line"], f["code"]) for f in report["failures"]] == [(7, "invalid_line"), (8, "invalid_line")]
    assert "user_id is missing" in report["failures"][1]["message"]
    first = {"text": "User: I sell candles.\nAssistant: Nice!"}
    assert posted(fake, "alice") == [
        first | {"id": item_id("alice", 1, 1, first)},
        {"id": "pref", "text": "Prefers email.", "infer": False, "title": "T"},
        {"text": "free", "title": "T", "id": item_id("alice", 4, 2, {"text": "free", "title": "T"})},
    ]
    pairs = {"user_assistant_pairs": [{"user": "I am Bob.", "assistant": "Hi Bob!"}], "user_name": "Bob"}
    assert posted(fake, "bob") == [pairs | {"id": item_id("bob", 2, 1, pairs)}]
    assert [(i["id"], "text" in i, i.get("title")) for i in posted(fake, "carol")] == [
        ("conv-1", True, None), ("conv-2", False, None), ("conv-3", False, None), ("conv-4", True, "own"),
    ]  # fmt: skip
    assert posted(fake, "carol")[2]["user_assistant_pairs"] == [{"user": "c", "assistant": "d"}]
    failed = (tmp_path / "export.jsonl.failed.jsonl").read_text().splitlines()
    assert failed == [lines[6], json.dumps(lines[7])]
    # The same file again from scratch: the same ids and the same batches, recognised by the service.
    accepted = {key: list(ids) for key, ids in fake.accepted.items()}
    again = summary(backfill(fake, path, "--restart"))
    assert again["done"] == 5 and fake.accepted == accepted and fake.replays == again["requests"]


def test_batches_stay_within_the_request_limits(fake: FakeHippocampus, tmp_path: Path) -> None:
    big = "x" * 30_000
    lines: list[Any] = [{"user_id": "alice", "text": f"turn {n}"} for n in range(250)]
    lines += [{"user_id": "bob", "text": f"{n} {big}"} for n in range(5)]
    lines += [
        {"user_id": "carol", "items": [{"text": f"item {n}"} for n in range(150)]}
    ]  # one line, two requests
    huge = [{"user": "y" * 20_000, "assistant": "z" * 20_000} for _ in range(50)]
    lines += [{"user_id": "dave", "user_assistant_pairs": huge}]  # over 1 MiB on its own
    path = write_lines(tmp_path / "big.jsonl", lines)
    report = summary(backfill(fake, path, "--batch-bytes", "65536"))
    assert (report["done"], report["failed"]) == (256, 1)
    assert report["failures"][0] | {"message": ""} == {
        "line": 257,
        "code": "payload_too_large",
        "message": "",
    }
    bodies = [r.body for r in fake.requests if r.method == "POST"]
    assert max(len(json.dumps(b, separators=(",", ":")).encode()) for b in bodies) <= 65536
    per_user = {
        u: [len(r.body["items"]) for r in fake.requests if f"/users/{u}/" in r.path + "/"]
        for u in ("alice", "bob", "carol")
    }
    assert per_user == {"alice": [100, 100, 50], "bob": [2, 2, 1], "carol": [100, 50]}
    assert [i["text"] for i in posted(fake, "alice")] == [f"turn {n}" for n in range(250)]
    assert not posted(fake, "dave")


def test_a_refused_line_fails_alone_and_is_written_for_a_rerun(fake: FakeHippocampus, tmp_path: Path) -> None:
    lines = [{"user_id": "alice", "text": f"turn {n}" + (" REFUSE-ME" if n == 2 else "")} for n in range(5)]
    path = write_lines(tmp_path / "a.jsonl", lines)
    report = summary(backfill(fake, path))
    assert (report["done"], report["failed"]) == (4, 1)
    assert report["failures"] == [{"line": 3, "code": "validation_error", "message": "invalid request"}]
    kept = [n for n in range(5) if n != 2]
    assert fake.accepted[("acme", "alice")] == [
        item_id("alice", n + 1, 1, {"text": f"turn {n}"}) for n in kept
    ]
    (record,) = [json.loads(line) for line in (tmp_path / "a.jsonl.failed.jsonl").read_text().splitlines()]
    assert record["items"] == [
        {"text": "turn 2 REFUSE-ME", "id": item_id("alice", 3, 1, {"text": "turn 2 REFUSE-ME"})}
    ]
    assert record["backfill_error"] == {"line": 3, "code": "validation_error", "message": "invalid request"}
    rerun = summary(backfill(fake, tmp_path / "a.jsonl.failed.jsonl"))  # still refused: the same id again
    assert rerun["failures"][0]["code"] == "validation_error"


def test_throttling_past_the_clients_retries_is_retried_by_the_cli(
    fake: FakeHippocampus, tmp_path: Path, no_client_retries: None
) -> None:
    fake.throttle_next = 2
    path = write_lines(tmp_path / "t.jsonl", [{"user_id": "alice", "text": "hello"}])
    report = summary(backfill(fake, path, "--retry-pause", "0.01"))
    assert (report["done"], report["retries"], report["requests"]) == (1, 2, 1)


def test_ctrl_c_stops_after_the_requests_in_flight_and_a_resume_sends_the_rest(
    fake: FakeHippocampus, tmp_path: Path
) -> None:
    path, expected = many_users(tmp_path / "c.jsonl", users=6, lines_each=10)
    fake.after_ingest = lambda count: _thread.interrupt_main() if count == 5 else None
    first = backfill(fake, path, "--batch-items", "2", "--concurrency", "2")
    report = summary(first)
    assert first.exit_code == 130 and report["interrupted"] and 0 < report["done"] < 60
    assert "interrupted: run the same command again to resume" in first.stderr
    fake.after_ingest = None
    resumed = summary(backfill(fake, path, "--batch-items", "2", "--concurrency", "2"))
    assert (resumed["skipped"], resumed["done"]) == (report["done"], 60 - report["done"])
    assert {user: ids for (_, user), ids in fake.accepted.items()} == expected  # each once, in file order


def test_a_kill_between_a_send_and_the_state_write_duplicates_nothing(
    fake: FakeHippocampus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Killed(Exception):
        """The process dies: nothing after it runs, the state file is never written again."""

    real_save, writes = BackfillState.save, []

    def dying_save(self: BackfillState, force: bool = False) -> None:
        if self._dirty:
            if len(writes) >= 3:
                raise Killed
            writes.append(self.done_count)
        real_save(self, force=True)

    monkeypatch.setattr(BackfillState, "save", dying_save)
    path, expected = many_users(tmp_path / "k.jsonl", users=5, lines_each=8)
    killed = backfill(fake, path, "--batch-items", "3", "--concurrency", "2")
    assert isinstance(killed.exception, Killed)
    state = json.loads((tmp_path / "k.jsonl.progress").read_text())
    assert (
        state["tenant"] == "acme"
        and 0
        < BackfillState.load(tmp_path / "k.jsonl.progress", "k.jsonl", fake.url, "acme", False).done_count
        < 40
    )
    monkeypatch.setattr(BackfillState, "save", real_save)
    monkeypatch.setattr(cli_backfill_state, "SAVE_INTERVAL_S", 0.0)
    resumed = summary(backfill(fake, path, "--batch-items", "3", "--concurrency", "2"))
    assert resumed["skipped"] == writes[-1] and resumed["skipped"] + resumed["done"] == 40
    assert fake.replays >= 1  # sent before the kill, unrecorded, sent again: recognised by its key
    assert {user: ids for (_, user), ids in fake.accepted.items()} == expected
    nothing = summary(backfill(fake, path))
    assert (nothing["skipped"], nothing["requests"]) == (40, 0)


def test_a_service_that_starts_refusing_stops_the_run_and_a_resume_finishes(
    fake: FakeHippocampus, tmp_path: Path, no_client_retries: None
) -> None:
    path, expected = many_users(tmp_path / "r.jsonl", users=4, lines_each=6)
    fake.refuse_ingest_after = 3
    first = backfill(fake, path, "--batch-items", "2", "--retries", "1", "--retry-pause", "0.01")
    report = summary(first)
    assert first.exit_code == 1 and report["stopped"]["code"] == "dependency_unavailable"
    assert report["failed"] == 0 and report["failed_file"] is None
    assert "stopped: error: dependency_unavailable (503): the queue is down" in first.stderr
    fake.refuse_ingest_after = None
    resumed = summary(backfill(fake, path, "--batch-items", "2"))
    assert resumed["skipped"] == report["done"] and resumed["done"] == 24 - report["done"]
    assert {user: ids for (_, user), ids in fake.accepted.items()} == expected


def test_the_state_belongs_to_one_tenant_and_deployment(fake: FakeHippocampus, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [{"user_id": "alice", "text": "hello"}])
    assert summary(backfill(fake, path))["done"] == 1
    other = backfill(fake, path, tenant="globex")
    assert other.exit_code == 1 and "is the state of tenant 'acme', not 'globex'" in other.stderr
    assert summary(backfill(fake, path, "--restart", tenant="globex"))["done"] == 1
    separate = backfill(fake, path, "--state", str(tmp_path / "mine.progress"), tenant="initech")
    assert summary(separate)["done"] == 1


def test_the_human_summary(fake: FakeHippocampus, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "h.jsonl", [{"user_id": "alice", "text": "hello"}, "[1]"])
    result = CliRunner().invoke(cli, ["--endpoint", fake.url, "--tenant", "acme", "backfill", str(path)])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"backfill of {path}: 2 lines read, 1 done, 0 skipped (done before), 1 failed; "
        "1 item in 1 request for 1 user, 0 retries",
        f"failed lines (written to {path}.failed.jsonl):",
        "  line 2: invalid_line: a line must be a JSON object",
        f"state: {path}.progress",
    ]


def test_a_line_whose_user_id_is_not_an_id_fails_alone_unsent(fake: FakeHippocampus, tmp_path: Path) -> None:
    hostile = [".", "..", "%2e", "a/b", "", "é", "x" * 129, "alice\n"]
    lines = [{"user_id": user, "text": "User: hi\nAssistant: hello"} for user in [*hostile, "alice"]]
    report = summary(backfill(fake, write_lines(tmp_path / "ids.jsonl", lines)))
    assert (report["done"], report["failed"]) == (1, len(hostile))
    assert {f["code"] for f in report["failures"]} == {"invalid_line"}
    assert [r.path for r in fake.requests if r.method == "POST"] == ["/v1/tenants/acme/users/alice/memory"]
