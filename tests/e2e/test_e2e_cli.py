"""The `hippocampus` command (client/README.md "CLI") against the real local stack: add and wait,
a backfill resumed and restarted without a duplicate, a backfill of dated sessions listed by when
they happened, and a redrive through the local Invoke API."""

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from e2e_support import ASYNC_DEADLINE_S, Api, LocalStackProcess, marker, wait_for

from hippocampus_client.cli import cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def url(local_stack: LocalStackProcess | None) -> str:
    if local_stack is None:
        pytest.skip("drives the local stack (MEMORY_API_URL targets a deployed stack)")
    return local_stack.url


def hippocampus(url: str, tenant: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--endpoint", url, "--local", "--tenant", tenant, *args])


def as_json(result: Result) -> Any:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_add_wait_then_get_shows_the_memory(llm: Any, url: str, tenant: str, user: str) -> None:
    word = marker()
    turn = f"User: I sell handmade candles, reference {word}.\nAssistant: Nice!"
    added = hippocampus(
        url, tenant, "add", user, turn, "--id", "turn-1", "--wait", "--wait-timeout", str(ASYNC_DEADLINE_S)
    )
    assert added.exit_code == 0 and " completed item=turn-1 version=1" in added.stdout, added.output
    got = hippocampus(url, tenant, "get", user)
    assert got.exit_code == 0 and word in got.stdout


def test_a_dot_dot_fact_id_erases_nothing(url: str, tenant: str, user: str) -> None:
    stored = hippocampus(url, tenant, "add", user, "Prefers email.", "--fact", "contact")
    assert stored.exit_code == 0, stored.output
    for hostile in ("..", ".", "%2e", "a/b", ""):
        refused = hippocampus(url, tenant, "forget", user, "--fact", hostile, "--yes")
        assert refused.exit_code == 2 and "is not an id" in refused.stderr, refused.output
    memory = as_json(hippocampus(url, tenant, "--json", "get", user, "--full"))
    assert [fact["id"] for fact in memory["facts"]] == ["contact"]


def test_records_of_a_user_without_any_and_forgetting_one_that_is_not_there(
    url: str, tenant: str, user: str
) -> None:
    listed = hippocampus(
        url, tenant, "--json", "records", user, "--as-of", "2022-06-01T00:00:00+02:00", "--all"
    )
    assert listed.exit_code == 0 and as_json(listed) == {"items": []}, listed.output
    empty = hippocampus(url, tenant, "records", user, "--known-at", "2022-06-01T00:00:00Z")
    assert (empty.exit_code, empty.stdout) == (0, "") and f"no records for {user}" in empty.stderr
    gone = hippocampus(url, tenant, "forget", user, "--record", "rec_none", "--yes")
    assert gone.exit_code == 1 and gone.stderr.startswith("error: not_found (404)"), gone.output


def test_a_backfill_resumed_is_a_no_op_and_restarted_stores_nothing_twice(
    url: str, tenant: str, tmp_path: Path
) -> None:
    lines = [
        {"user_id": "ann", "text": "Ann prefers email.", "infer": False},
        {
            "user_id": "ben",
            "turns": ["User: I ship to Canada.\nAssistant: Noted.", {"user": "Hi", "assistant": "Hello"}],
        },
        {
            "user_id": "ann",
            "messages": [
                {"role": "user", "content": "I sell soap."},
                {"role": "assistant", "content": "Nice!"},
            ],
        },
    ]
    path = tmp_path / "past.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first = as_json(hippocampus(url, tenant, "--json", "backfill", str(path)))
    assert (first["done"], first["failed"], first["items"], first["users"]) == (3, 0, 4, 2)
    again = as_json(hippocampus(url, tenant, "--json", "backfill", str(path)))
    assert (again["skipped"], again["done"], again["requests"]) == (3, 0, 0)
    jobs = {u: as_json(hippocampus(url, tenant, "--json", "export", u))["jobs"] for u in ("ann", "ben")}
    restarted = as_json(hippocampus(url, tenant, "--json", "backfill", str(path), "--restart"))
    assert restarted["done"] == 3
    for user_id, before in jobs.items():
        after = as_json(hippocampus(url, tenant, "--json", "export", user_id))["jobs"]
        assert sorted(j["job_id"] for j in after) == sorted(j["job_id"] for j in before)
    facts = as_json(hippocampus(url, tenant, "--json", "get", "ann", "--full"))["facts"]
    assert [f["text"] for f in facts] == ["Ann prefers email."]


def test_a_backfill_of_dated_sessions_is_listed_by_when_they_happened(
    url: str, tenant: str, tmp_path: Path
) -> None:
    newer_first = {
        "user_id": "cal",
        "sessions": [
            {
                "date_time": "1:56 pm on 8 May, 2024",
                "turns": [{"id": "s2-1", "text": "Cal: I moved to Berlin."}],
            },
            {
                "occurred_at": "2023-01-10T10:00:00Z",
                "turns": [{"id": "s1-1", "text": "Cal: I live in Paris."}, "Cal: I work at a bakery."],
            },
        ],
    }
    path = tmp_path / "sessions.jsonl"
    path.write_text(json.dumps(newer_first) + "\n")
    done = as_json(hippocampus(url, tenant, "--json", "backfill", str(path), "--timezone", "UTC"))
    assert (done["done"], done["failed"], done["items"]) == (1, 0, 3)

    api = Api(url)

    def all_condensed() -> list[dict[str, Any]] | None:
        response = api.request("GET", api.memory_path(tenant, "cal") + "/episodes")
        episodes: list[dict[str, Any]] = response.json()["episodes"] if response.status_code == 200 else []
        return episodes if len(episodes) == 3 else None

    episodes = wait_for(all_condensed, what="three episodes")
    assert [episode["text"] for episode in episodes] == [
        "Cal: I moved to Berlin.",
        "Cal: I work at a bakery.",
        "Cal: I live in Paris.",
    ]
    assert [episode["occurred_at"] for episode in episodes] == [
        "2024-05-08T13:56:00Z",
        "2023-01-10T10:00:00Z",
        "2023-01-10T10:00:00Z",
    ]


def test_redrive_through_the_local_invoke_api(url: str, tenant: str) -> None:
    # The DLQ is the session's: a first pass takes back whatever another test left there.
    drained = hippocampus(url, tenant, "--json", "redrive")
    assert drained.exit_code == 0, drained.output
    empty = as_json(hippocampus(url, tenant, "--json", "redrive"))
    assert empty | {"remaining": 0} == {
        "moved": 0, "jobs_requeued": 0, "remaining": 0, "invocations": 1, "function": "hippocampus-dev-condenser",
    }  # fmt: skip


def test_forget_prints_the_receipt_and_deletion_shows_what_was_erased(
    url: str, tenant: str, user: str
) -> None:
    added = hippocampus(url, tenant, "add", user, "Prefers email.", "--fact", "contact")
    assert added.exit_code == 0, added.output
    forgot = hippocampus(url, tenant, "--json", "forget", user, "--yes")
    receipt_id = as_json(forgot)["receipt_id"]
    receipt = as_json(hippocampus(url, tenant, "deletion", user, receipt_id))
    assert (receipt["receipt_id"], receipt["erased"]["dynamodb"]["facts"]) == (receipt_id, 1)
    unknown = hippocampus(url, tenant, "deletion", user, "del_000000000000000000000000")
    assert unknown.exit_code == 1 and "not_found" in unknown.output
