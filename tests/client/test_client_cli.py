"""The `hippocampus` command (client/README.md "CLI") with click's CliRunner against a fake
Hippocampus on 127.0.0.1 (client_cli_fake.py): every command, `--json`, errors, redrive."""

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from client_cli_fake import DEFERRED_READS, FakeHippocampus
from client_test_servers import closed_port, fake_clock, usage_body

from hippocampus_client import cli_redrive
from hippocampus_client.cli import cli


@pytest.fixture
def fake() -> Iterator[FakeHippocampus]:
    with FakeHippocampus() as server:
        yield server


def run(fake: FakeHippocampus, *args: str, input: str | None = None, json_output: bool = False) -> Result:
    """`hippocampus --endpoint <fake> --tenant acme [--json] ARGS`."""
    options = ["--endpoint", fake.url, "--tenant", "acme"] + (["--json"] if json_output else [])
    return CliRunner().invoke(cli, [*options, *args], input=input)


def document(result: Result) -> Any:
    return json.loads(result.stdout)


def seed(fake: FakeHippocampus, memory: str | None = "Alice sells candles.", facts: int = 0) -> None:
    body = fake._memory(("acme", "alice"))
    body |= {"memory": memory, "version": 1 if memory else 0, "word_count": 3}
    body["facts"] = [{"id": f"f{i}", "text": f"Pays suppliers through Stripe {i}."} for i in range(facts)]


# --- reads --------------------------------------------------------------------------------------


def test_get_prints_the_summary_with_the_options_of_the_issue(fake: FakeHippocampus) -> None:
    seed(fake)
    result = CliRunner().invoke(cli, ["--endpoint", fake.url, "--tenant", "acme", "get", "alice"])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "Alice sells candles.\n", "")
    assert fake.requests[-1].path == "/v1/tenants/acme/users/alice/memory"


def test_get_full_and_json(fake: FakeHippocampus) -> None:
    seed(fake, facts=1)
    full = run(fake, "get", "alice", "--full")
    assert full.exit_code == 0 and "version 1, 3 words" in full.stdout
    assert "f0: Pays suppliers through Stripe 0." in full.stdout
    short = document(run(fake, "get", "alice", json_output=True))
    assert short == {
        "tenant_id": "acme",
        "user_id": "alice",
        "memory": "Alice sells candles.",
        "version": 1,
        "updated_at": None,
    }
    assert document(run(fake, "get", "--full", "alice", json_output=True))["facts"][0]["id"] == "f0"


def test_get_before_a_first_version_prints_nothing_on_stdout(fake: FakeHippocampus) -> None:
    result = run(fake, "get", "bob")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "no summary for bob yet" in result.stderr


def test_query_context_and_history(fake: FakeHippocampus) -> None:
    seed(fake, facts=2)
    answer = run(fake, "query", "alice", "stripe", "suppliers", "--top-k", "5", "--types", "fact,episode",
                 "--alpha", "0.2", "--filter", "channel=web", "--filter", "channel=app", "--no-memory")  # fmt: skip
    assert answer.exit_code == 0 and "0.900 fact f0" in answer.stdout
    assert fake.requests[-1].body == {
        "query": "stripe suppliers", "top_k": 5, "types": ["fact", "episode"], "alpha": 0.2,
        "metadata_filters": {"channel": ["web", "app"]}, "include_memory": False,
    }  # fmt: skip
    assert run(fake, "query", "alice", "x", "--types", "note").exit_code == 2
    block = run(fake, "context", "alice", "how", "do", "I", "pay?", "--max-words", "50")
    assert block.stdout == "What you know about this user:\nAlice sells candles.\n"
    assert fake.requests[-1].body == {"max_words": 50, "query": "how do I pay?"}
    assert document(run(fake, "context", "alice", json_output=True))["word_count"] == 9
    assert fake.requests[-1].body == {"max_words": 300}
    history = run(fake, "history", "alice", "--limit", "5")
    assert history.stdout.startswith("version 1 (-, by hand):\n    Alice sells candles.")
    assert fake.requests[-1].query == {"limit": "5"}
    assert document(run(fake, "history", "alice", json_output=True))["versions"][0]["version"] == 1


BERLIN = {
    "id": "rec_berlin", "text": "Caroline moved\nto Berlin.", "category": "location",
    "valid_from": "2023-05-08T00:00:00Z", "valid_to": None, "recorded_at": "2026-12-05T11:02:17Z",
    "invalidated_at": None, "superseded_by": None, "episode_ids": ["D1:3"], "job_id": "job-1", "agent_id": None,
}  # fmt: skip
PARIS = BERLIN | {
    "id": "rec_paris", "text": "Caroline lived in Paris.", "valid_from": "2019-01-01T00:00:00Z",
    "valid_to": "2023-05-08T00:00:00Z", "recorded_at": "2026-12-01T09:00:00Z",
    "invalidated_at": "2026-12-05T11:02:17Z", "superseded_by": "rec_berlin",
}  # fmt: skip
BERLIN_LINE = "2023-05-08 location: Caroline moved to Berlin. [rec_berlin]"
PARIS_LINE = (
    "2019-01-01 location: Caroline lived in Paris. [rec_paris] (until 2023-05-08, superseded by rec_berlin)"
)


def test_records_prints_the_current_ones_or_all_of_them(fake: FakeHippocampus) -> None:
    fake.records["acme", "alice"] = [BERLIN, PARIS]
    current = run(fake, "records", "alice")
    assert (current.exit_code, current.stdout, current.stderr) == (0, BERLIN_LINE + "\n", "")
    assert fake.requests[-1].path == "/v1/tenants/acme/users/alice/memory/records"
    assert fake.requests[-1].query == {"limit": "100"}
    every = run(fake, "records", "alice", "--all")
    assert every.stdout == f"{BERLIN_LINE}\n{PARIS_LINE}\n"
    assert fake.requests[-1].query == {"limit": "100", "include_invalidated": "true"}
    nothing = run(fake, "records", "bob")
    assert (nothing.exit_code, nothing.stdout, nothing.stderr) == (0, "", "no records for bob\n")


def test_records_as_of_and_known_at_a_past_time(fake: FakeHippocampus) -> None:
    fake.records["acme", "alice"] = [BERLIN, PARIS]
    then = run(fake, "records", "alice", "--as-of", "2022-06-01T00:00:00Z")
    assert (then.exit_code, then.stdout) == (0, PARIS_LINE + "\n")  # where she lived in 2022
    assert fake.requests[-1].query == {"limit": "100", "as_of": "2022-06-01T00:00:00Z"}
    held = run(fake, "records", "alice", "--known-at", "2026-12-02T00:00:00Z", "--limit", "5")
    assert held.stdout == PARIS_LINE + "\n"  # what the memory held before it learned of Berlin
    assert fake.requests[-1].query == {"limit": "5", "known_at": "2026-12-02T00:00:00Z"}


def test_records_json_and_every_page(fake: FakeHippocampus) -> None:
    many = [BERLIN | {"id": f"rec_{n:03}", "valid_from": f"2020-01-01T00:{n // 60:02}:{n % 60:02}Z"}
            for n in range(150)]  # fmt: skip
    fake.records["acme", "alice"] = many
    document_ = document(run(fake, "records", "alice", json_output=True))
    assert [r["id"] for r in document_["items"]] == [r["id"] for r in many]
    assert document_["items"][0] == many[0]  # the API's record, every field
    assert [r.query.get("cursor") for r in fake.requests] == [None, "100"]
    limited = run(fake, "records", "alice", "--limit", "3")
    assert [line.split(" [")[1] for line in limited.stdout.splitlines()] == [
        "rec_000]",
        "rec_001]",
        "rec_002]",
    ]


@pytest.mark.parametrize("bad", ["2022-06-01", "2022-06-01T00:00:00", "last year"])
def test_records_refuses_a_time_without_its_offset_before_any_request(
    fake: FakeHippocampus, bad: str
) -> None:
    for option in ("--as-of", "--known-at"):
        result = run(fake, "records", "alice", option, bad)
        assert result.exit_code == 2 and "is not an RFC 3339 timestamp" in result.stderr, result.output
    assert fake.requests == []


def test_export_to_stdout_and_to_a_file(fake: FakeHippocampus, tmp_path: Path) -> None:
    seed(fake)
    assert document(run(fake, "export", "alice"))["memory"]["memory"] == "Alice sells candles."
    target = tmp_path / "alice.json"
    result = run(fake, "export", "alice", "--output", str(target), json_output=True)
    assert result.exit_code == 0 and document(result)["output"] == str(target)
    assert json.loads(target.read_text())["user_id"] == "alice"
    assert [p.name for p in tmp_path.iterdir()] == ["alice.json"]


# --- writes -------------------------------------------------------------------------------------


def test_add_from_arguments_a_file_and_stdin(fake: FakeHippocampus, tmp_path: Path) -> None:
    assert run(fake, "add", "alice", "I", "sell", "candles.").exit_code == 0
    source = tmp_path / "turn.txt"
    source.write_text("User: I moved to Stripe.\nAssistant: Noted!\n")
    assert run(fake, "add", "alice", "--file", str(source), "--id", "turn-2").exit_code == 0
    assert run(fake, "add", "alice", "-", input="From stdin with -\n").exit_code == 0
    assert run(fake, "add", "alice", input="Piped, no argument").exit_code == 0
    bodies = [r.body for r in fake.requests if r.method == "POST"]
    assert [b["items"][0]["text"] for b in bodies] == [
        "I sell candles.", "User: I moved to Stripe.\nAssistant: Noted!", "From stdin with -", "Piped, no argument",
    ]  # fmt: skip
    assert bodies[1]["items"][0]["id"] == "turn-2"
    empty = run(fake, "add", "alice", input="  \n")
    assert empty.exit_code == 2 and "nothing to add" in empty.stderr


def test_add_a_fact_json_input_and_json_output(fake: FakeHippocampus) -> None:
    result = run(fake, "add", "alice", "Prefers", "email.", "--fact", "contact", "--title", "Contact",
                 "--metadata", '{"channel": "web"}', json_output=True)  # fmt: skip
    assert document(result)["jobs"][0].items() >= {"item_id": "contact", "status": "completed"}.items()
    item = fake.requests[-1].body["items"][0]
    assert item == {
        "text": "Prefers email.",
        "id": "contact",
        "infer": False,
        "title": "Contact",
        "metadata": {"channel": "web"},
    }
    messages = [{"role": "user", "content": "Hi, I am Bo."}, {"role": "assistant", "content": "Hello Bo!"}]
    assert run(fake, "add", "bo", "--json-input", input=json.dumps(messages)).exit_code == 0
    assert fake.requests[-1].body["items"] == [
        {"user_assistant_pairs": [{"user": "Hi, I am Bo.", "assistant": "Hello Bo!"}]}
    ]
    assert run(fake, "add", "bo", "--json-input", input="{not json").exit_code == 2
    assert run(fake, "add", "bo", "x", "--metadata", "[1]").exit_code == 2


def test_add_wait_prints_the_final_jobs_and_fails_with_a_failed_job(fake: FakeHippocampus) -> None:
    done = run(fake, "add", "alice", "I sell candles.", "--wait")
    assert done.exit_code == 0 and " completed item=item-0 version=1" in done.stdout
    assert run(fake, "get", "alice").stdout == "I sell candles.\n"
    failed = run(fake, "add", "alice", "FAIL-ME please", "--wait")
    assert (
        failed.exit_code == 1 and " failed " in failed.stdout and "error: job_failed: job-" in failed.stderr
    )


def test_job_and_wait(fake: FakeHippocampus) -> None:
    jobs = document(run(fake, "add", "alice", "one", json_output=True))["jobs"]
    stuck = document(run(fake, "add", "alice", "STAY-QUEUED", json_output=True))["jobs"]
    assert run(fake, "job", jobs[0]["job_id"]).stdout.startswith(f"{jobs[0]['job_id']} completed item=")
    waited = run(fake, "wait", jobs[0]["job_id"], json_output=True)
    assert waited.exit_code == 0 and document(waited)["jobs"][0]["status"] == "completed"
    timed_out = run(
        fake,
        "wait",
        jobs[0]["job_id"],
        stuck[0]["job_id"],
        "--timeout",
        "0.3",
        "--interval",
        "0.1",
        json_output=True,
    )
    assert timed_out.exit_code == 1 and "error: wait_timeout: 1 of 2 jobs not final" in timed_out.stderr
    assert [j["status"] for j in document(timed_out)["jobs"]] == ["completed", "queued"]


def added_job(fake: FakeHippocampus, text: str) -> str:
    """The id of the job of `add alice TEXT`."""
    job_id: str = document(run(fake, "add", "alice", text, json_output=True))["jobs"][0]["job_id"]
    return job_id


def test_wait_keeps_waiting_while_a_job_is_deferred(
    fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fake_clock(monkeypatch)  # the pauses between polls take no time
    first = added_job(fake, "OVER-BUDGET one")
    assert run(fake, "job", first).stdout == (
        f"{first} deferred item=item-0 error=token_budget_exhausted: "
        "the tenant's daily token budget is spent: condensed after it resets (00:00 UTC)\n"
    )
    job_id = added_job(fake, "OVER-BUDGET two")
    waited = run(fake, "wait", job_id, "--interval", "5")  # read once to know it, then polled
    assert (waited.exit_code, waited.stderr) == (0, "")
    assert waited.stdout.startswith(f"{job_id} completed item=item-1 version=1")
    assert fake.job_reads[job_id] == DEFERRED_READS + 1 and clock.slept == [5.0]
    added = run(fake, "add", "alice", "OVER-BUDGET three", "--wait")
    assert added.exit_code == 0 and " completed item=item-2 version=2" in added.stdout
    assert clock.slept == [5.0, 0.25, 0.25]  # deferred twice, a pause after each


def test_a_job_still_deferred_at_the_timeout_is_printed_with_its_error(
    fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fake_clock(monkeypatch)
    job_id = added_job(fake, "OVER-BUDGET STAY-QUEUED")
    result = run(fake, "wait", job_id, "--timeout", "60", "--interval", "5")
    assert result.exit_code == 1 and sum(clock.slept) == 60
    assert result.stdout == (
        f"{job_id} deferred item=item-0 error=token_budget_exhausted: "
        "the tenant's daily token budget is spent: condensed after it resets (00:00 UTC)\n"
    )
    assert result.stderr == (
        "error: wait_timeout: 1 of 1 jobs not final after 60.0 s\n"
        "1 job deferred: the tenant's daily token budget is spent; condensed after it resets at 00:00 UTC "
        "(hippocampus usage)\n"
    )
    as_json = document(run(fake, "add", "alice", "OVER-BUDGET STAY-QUEUED", "--wait", json_output=True))
    assert [(j["status"], j["error"]["code"]) for j in as_json["jobs"]] == [
        ("deferred", "token_budget_exhausted")
    ]
    assert [e["code"] for e in as_json["errors"]] == ["wait_timeout"]


def test_forget_asks_unless_yes(fake: FakeHippocampus) -> None:
    seed(fake, facts=1)
    declined = run(fake, "forget", "alice", input="n\n")
    assert (
        declined.exit_code == 1 and "Delete everything stored about alice (tenant acme)?" in declined.stderr
    )
    assert not any(r.method == "DELETE" for r in fake.requests)
    fact = run(fake, "forget", "alice", "--fact", "f0", input="y\n")
    assert fact.exit_code == 0 and "deleted fact f0 of alice" in fact.stdout
    gone = run(fake, "forget", "alice", "--fact", "f0", "--yes")
    assert (gone.exit_code, gone.stderr) == (1, "error: not_found (404): no such fact\n")
    fake.records["acme", "alice"] = [BERLIN, PARIS]
    record = run(fake, "forget", "alice", "--record", "rec_paris", input="y\n")
    assert record.exit_code == 0 and "Delete record rec_paris of alice (tenant acme)?" in record.stderr
    assert "deleted record rec_paris of alice" in record.stdout and fake.records["acme", "alice"] == [BERLIN]
    assert fake.requests[-1].path == "/v1/tenants/acme/users/alice/memory/records/rec_paris"
    assert document(run(fake, "forget", "alice", "--record", "rec_berlin", "-y", json_output=True)) == {
        "deleted": True, "user_id": "alice", "record_id": "rec_berlin",
    }  # fmt: skip
    unknown = run(fake, "forget", "alice", "--record", "rec_berlin", "--yes")
    assert (unknown.exit_code, unknown.stderr) == (1, "error: not_found (404): no such record\n")
    sent = len(fake.requests)
    both = run(fake, "forget", "alice", "--fact", "f0", "--record", "rec_paris", "--yes")
    assert both.exit_code == 2 and "give --fact or --record, not both" in both.stderr
    assert len(fake.requests) == sent
    forgot = run(fake, "forget", "alice", "-y", json_output=True)
    assert document(forgot) == {
        "deleted": True,
        "user_id": "alice",
        "receipt_id": "del_0123456789abcdef01234567",
    }
    assert fake.requests[-1].method == "DELETE" and fake.requests[-1].path.endswith("/users/alice/memory")


# --- usage --------------------------------------------------------------------------------------


def test_usage_prints_the_day_against_the_budget(fake: FakeHippocampus) -> None:
    counts = {"calls": 12, "prompt_tokens": 40_100, "completion_tokens": 8_110, "deferred_jobs": 3}
    fake.usage["acme"] = usage_body(budget=200_000, **counts)
    result = run(fake, "usage")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "acme on 2026-12-05 (UTC): 12 LLM calls, 48,210 tokens (40,100 prompt + 8,110 completion) of 200,000"
        " — 151,790 left; 3 jobs deferred; resets at 2026-12-06T00:00:00Z\n"
    )
    assert (fake.requests[-1].method, fake.requests[-1].path) == ("GET", "/v1/tenants/acme/usage")
    assert document(run(fake, "usage", json_output=True)) == fake.usage["acme"]


def test_usage_without_a_budget_and_spent(fake: FakeHippocampus) -> None:
    fake.usage["beta"] = usage_body(
        "beta", calls=1, prompt_tokens=1_250_000, completion_tokens=3, deferred_jobs=1
    )
    # `--tenant` after the command, as every command takes the global options
    unlimited = CliRunner().invoke(cli, ["--endpoint", fake.url, "usage", "--tenant", "beta"])
    assert unlimited.stdout == (
        "beta on 2026-12-05 (UTC): 1 LLM call, 1,250,003 tokens (1,250,000 prompt + 3 completion), no budget;"
        " 1 job deferred; resets at 2026-12-06T00:00:00Z\n"
    )
    assert fake.requests[-1].path == "/v1/tenants/beta/usage"
    fake.usage["acme"] = usage_body(budget=1_000, calls=2, prompt_tokens=900, completion_tokens=300)
    spent = run(fake, "usage").stdout
    assert spent.endswith(
        "1,200 tokens (900 prompt + 300 completion) of 1,000 — 0 left; 0 jobs deferred; resets at 2026-12-06T00:00:00Z\n"
    )
    assert document(run(fake, "usage", json_output=True))["remaining"] == 0


def test_usage_errors_are_one_line(fake: FakeHippocampus) -> None:
    dead = CliRunner().invoke(
        cli, ["--endpoint", f"http://127.0.0.1:{closed_port()}", "--tenant", "acme", "usage"]
    )
    assert dead.exit_code == 1 and dead.stderr.startswith("error: connection_error: ")
    no_tenant = CliRunner().invoke(cli, ["--endpoint", fake.url, "usage"], env={"HIPPOCAMPUS_TENANT": ""})
    assert no_tenant.exit_code == 1 and "error: configuration_error: no tenant" in no_tenant.stderr
    assert fake.requests == []


# --- errors ---------------------------------------------------------------------------------------


def test_an_api_error_is_one_line_with_its_code_and_exit_1(fake: FakeHippocampus) -> None:
    result = run(fake, "job", "job-nope")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        "error: not_found (404): no such job\n",
    )
    as_json = run(fake, "job", "job-nope", json_output=True)
    assert (
        document(as_json)["error"].items()
        >= {"code": "not_found", "status": 404, "message": "no such job"}.items()
    )


def test_a_dead_endpoint_and_missing_settings_give_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIPPOCAMPUS_TENANT", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_ENDPOINT", raising=False)
    url = f"http://127.0.0.1:{closed_port()}"
    dead = CliRunner().invoke(cli, ["--endpoint", url, "--tenant", "acme", "get", "alice"])
    assert dead.exit_code == 1 and dead.stderr.startswith("error: connection_error: ")
    assert "Traceback" not in dead.output and isinstance(
        dead.exception, SystemExit
    )  # click's exit, nothing else
    no_tenant = CliRunner().invoke(cli, ["--endpoint", url, "get", "alice"])
    assert (
        "error: configuration_error: no tenant: pass --tenant TENANT or set HIPPOCAMPUS_TENANT"
        in no_tenant.stderr
    )
    monkeypatch.setenv("HIPPOCAMPUS_TENANT", "acme")
    no_endpoint = CliRunner().invoke(cli, ["get", "alice"])
    assert no_endpoint.exit_code == 1 and "error: configuration_error: no endpoint" in no_endpoint.stderr
    both = CliRunner().invoke(cli, ["--local", "--stack", "S", "get", "alice"])
    assert both.exit_code == 2


def test_local_means_the_local_stack_unless_an_endpoint_is_given(
    fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_ENDPOINT", "https://api.example.com/dev/")
    seed(fake)
    on_port = CliRunner().invoke(cli, ["--endpoint", fake.url, "--local", "--tenant", "acme", "get", "alice"])
    assert on_port.stdout == "Alice sells candles.\n"
    monkeypatch.setenv("HIPPOCAMPUS_ENDPOINT", fake.url)
    monkeypatch.setenv("HIPPOCAMPUS_TENANT", "acme")
    assert CliRunner().invoke(cli, ["get", "alice"]).stdout == "Alice sells candles.\n"


# --- redrive --------------------------------------------------------------------------------------


def test_redrive_loops_until_the_dead_letter_queue_is_empty(fake: FakeHippocampus) -> None:
    fake.dead_letters = 250
    result = run(fake, "--local", "redrive")
    assert result.exit_code == 0, result.output
    assert fake.redrive_limits == [100, 100, 100]
    assert "moved 250 messages, requeued 250 jobs in 3 invocations; about 0 left" in result.stdout
    assert "moved 100, jobs requeued 100, remaining 150" in result.stderr
    assert fake.requests[-1].path == "/2015-03-31/functions/hippocampus-dev-condenser/invocations"
    assert fake.requests[-1].body == {"action": "redrive_dead_letters", "limit": 100}


def test_redrive_bounds_and_json(fake: FakeHippocampus) -> None:
    fake.dead_letters = 500
    limited = run(fake, "--local", "redrive", "--batch", "100", "--limit", "150", json_output=True)
    assert document(limited) == {
        "moved": 150,
        "jobs_requeued": 150,
        "remaining": 350,
        "invocations": 2,
        "function": "hippocampus-dev-condenser",
    }
    assert fake.redrive_limits == [100, 50]
    once = run(fake, "--local", "redrive", "--batch", "1000", "--max-batches", "1", "--limit", "20")
    assert once.exit_code == 0 and fake.redrive_limits[-1] == 20 and "messages remain" in once.stderr
    empty = FakeHippocampus()
    with empty:
        nothing = run(empty, "--local", "redrive", json_output=True)
    assert document(nothing)["moved"] == 0 and document(nothing)["invocations"] == 1


def test_redrive_errors(fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = run(fake, "redrive", "--function", "hippocampus-dev-nope")  # plain http: the local Invoke API
    assert unknown.exit_code == 1 and unknown.stderr.startswith("error: ResourceNotFoundException (404)")
    unnamed = CliRunner().invoke(cli, ["--endpoint", "https://api.example.com/dev/", "redrive"])
    assert unnamed.exit_code == 2 and "name the condenser" in unnamed.stderr
    monkeypatch.setattr(
        cli_redrive, "stack_outputs", lambda stack, region: {"CondenserFunctionName": f"{stack}-cond"}
    )
    from hippocampus_client.cli_settings import CliState

    assert cli_redrive.condenser_name(CliState(stack="Hippocampus-dev"), None) == "Hippocampus-dev-cond"
    monkeypatch.setattr(cli_redrive, "stack_outputs", lambda stack, region: {})
    missing = CliRunner().invoke(cli, ["--stack", "S", "redrive"])
    assert (
        missing.exit_code == 1
        and "error: configuration_error: the stack S has no output CondenserFunctionName" in missing.stderr
    )


# --- hostile ids: refused before any request (issue 17) --------------------------------------------

HOSTILE_IDS = [".", "..", "%2e", "a/b", "", "é", "x" * 129, "alice\n"]
# Every id the CLI takes, in every command; `{}` is the hostile id, the name is what the error names.
ID_ARGUMENTS = [
    (["get", "{}"], "'USER'"),
    (["query", "{}", "candles"], "'USER'"),
    (["context", "{}"], "'USER'"),
    (["history", "{}"], "'USER'"),
    (["export", "{}"], "'USER'"),
    (["forget", "{}", "--yes"], "'USER'"),
    (["forget", "alice", "--fact", "{}", "--yes"], "'--fact'"),
    (["forget", "alice", "--record", "{}", "--yes"], "'--record'"),
    (["records", "{}"], "'USER'"),
    (["add", "{}", "I sell candles."], "'USER'"),
    (["add", "alice", "I sell candles.", "--id", "{}"], "'--id'"),
    (["add", "alice", "Prefers email.", "--fact", "{}"], "'--fact'"),
    (["job", "{}"], "'JOB_ID'"),
    (["wait", "job-1", "{}"], "'JOB_ID...'"),
    (["--tenant", "{}", "get", "alice"], "'--tenant'"),
    (["get", "alice", "--tenant", "{}"], "'--tenant'"),
    (["usage", "--tenant", "{}"], "'--tenant'"),
]


@pytest.mark.parametrize("hostile", HOSTILE_IDS, ids=repr)
@pytest.mark.parametrize(
    ("template", "named"), ID_ARGUMENTS, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_id_of_every_command_is_checked_before_any_request(
    fake: FakeHippocampus, template: list[str], named: str, hostile: str
) -> None:
    seed(fake, facts=1)
    before = repr(fake.memories)
    result = run(fake, *[hostile if part == "{}" else part for part in template])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {named}" in result.stderr and "is not an id" in result.stderr
    assert fake.requests == []
    assert repr(fake.memories) == before


def test_forget_a_dot_dot_fact_erases_nothing(fake: FakeHippocampus) -> None:
    seed(fake, facts=1)
    result = run(fake, "forget", "alice", "--fact", "..", "--yes")
    assert result.exit_code == 2 and "deleted" not in result.stdout
    assert fake.requests == [] and fake.memories["acme", "alice"]["memory"] == "Alice sells candles."


def test_a_tenant_variable_that_is_not_an_id_is_named(fake: FakeHippocampus) -> None:
    result = CliRunner().invoke(
        cli, ["--endpoint", fake.url, "get", "alice"], env={"HIPPOCAMPUS_TENANT": ".."}
    )
    assert result.exit_code == 2 and "(env var: 'HIPPOCAMPUS_TENANT')" in result.stderr
    assert fake.requests == []


# --- rough edges (issue 17, item 12) -------------------------------------------------------------


def test_a_local_stack_that_is_down_names_the_endpoint_and_make_dev() -> None:
    for url in (f"http://127.0.0.1:{closed_port()}", f"http://localhost:{closed_port()}"):
        dead = CliRunner().invoke(cli, ["--endpoint", url, "--tenant", "acme", "get", "alice"])
        assert dead.exit_code == 1
        assert dead.stderr.endswith(f"; endpoint {url}: is make dev running?\n"), dead.stderr
        as_json = CliRunner().invoke(cli, ["--endpoint", url, "--tenant", "acme", "--json", "get", "alice"])
        assert document(as_json)["error"]["message"].endswith(f"endpoint {url}: is make dev running?")


def test_the_console_script_says_it_in_one_line() -> None:
    script = Path(sys.executable).with_name("hippocampus")
    url = f"http://127.0.0.1:{closed_port()}"
    dead = subprocess.run(
        [str(script), "--endpoint", url, "--tenant", "acme", "get", "alice"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (dead.returncode, dead.stdout) == (1, "")
    assert dead.stderr == (
        f"error: connection_error: the request failed (ConnectError); endpoint {url}: is make dev running?\n"
    )


def test_an_endpoint_elsewhere_that_does_not_answer_is_named_without_the_local_hint() -> None:
    url = "http://192.0.2.1:9"  # TEST-NET-1: never answers
    result = CliRunner().invoke(
        cli, ["--endpoint", url, "--tenant", "acme", "--timeout", "0.3", "get", "alice"]
    )
    assert result.exit_code == 1 and f"; endpoint {url}" in result.stderr
    assert "make dev" not in result.stderr


def test_global_options_after_the_command(fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIPPOCAMPUS_TENANT", raising=False)
    monkeypatch.setenv("HIPPOCAMPUS_ENDPOINT", "https://api.example.com/dev/")
    seed(fake, facts=1)
    after = ["query", "alice", "stripe", "--json", "--endpoint", fake.url, "--tenant", "acme"]
    answer = CliRunner().invoke(cli, after)
    assert answer.exit_code == 0, answer.output
    assert document(answer)["results"][0]["id"] == "f0"
    # Given after the command, an option wins over the same one before it.
    over = CliRunner().invoke(
        cli, ["--tenant", "beta", "get", "alice", "--endpoint", fake.url, "--tenant", "acme"]
    )
    assert over.stdout == "Alice sells candles.\n"
    assert fake.requests[-1].path == "/v1/tenants/acme/users/alice/memory"
    # --local after the command: the local stack, unless an --endpoint is on the command line.
    local = CliRunner().invoke(cli, ["--endpoint", fake.url, "--tenant", "acme", "get", "alice", "--local"])
    assert local.stdout == "Alice sells candles.\n"
    both = CliRunner().invoke(cli, ["--local", "get", "alice", "--stack", "S", "--tenant", "acme"])
    assert both.exit_code == 2 and "--local and --stack" in both.stderr


def test_a_commands_own_option_keeps_its_meaning(fake: FakeHippocampus) -> None:
    stuck = document(run(fake, "add", "alice", "STAY-QUEUED", json_output=True))["jobs"][0]["job_id"]
    waited = run(fake, "wait", stuck, "--timeout", "0.2", "--interval", "0.1")
    assert waited.exit_code == 1 and "not final after 0.2 s" in waited.stderr


def test_wait_reports_the_known_jobs_and_each_unknown_one(fake: FakeHippocampus) -> None:
    job_id = document(run(fake, "add", "alice", "I sell candles.", json_output=True))["jobs"][0]["job_id"]
    result = run(fake, "wait", job_id, "job-nope", "--interval", "0.1")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{job_id} completed item=")
    assert "error: not_found (404): no such job: job-nope" in result.stderr
    as_json = run(fake, "wait", "job-nope", job_id, json_output=True)
    assert as_json.exit_code == 1
    assert [j["job_id"] for j in document(as_json)["jobs"]] == [job_id]
    assert [e["code"] for e in document(as_json)["errors"]] == ["not_found"]


def test_the_cli_extra_brings_what_redrive_needs() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "client" / "pyproject.toml").read_text())
    assert "hippocampus-client[aws]" in pyproject["project"]["optional-dependencies"]["cli"]


def test_redrive_without_botocore_names_the_extra(
    fake: FakeHippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("botocore", "botocore.session", "botocore.exceptions"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as it would if not installed
    fake.dead_letters = 3
    result = run(fake, "redrive")
    assert result.exit_code == 1 and "error: missing_dependency" in result.stderr
    assert "hippocampus-client[aws]" in result.stderr and fake.dead_letters == 3


def test_redrive_prints_its_result_once(fake: FakeHippocampus) -> None:
    fake.dead_letters = 30
    result = run(fake, "--local", "redrive")
    assert result.exit_code == 0
    assert result.stdout == "moved 30 messages, requeued 30 jobs in 1 invocation; about 0 left in the DLQ\n"
    assert result.stderr == ""
