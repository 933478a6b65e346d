"""`occurred_at`, when a turn or fact happened (client/README.md "Methods", "CLI", "backfill"):
checked before any request in `add`, `hippocampus add --occurred-at` and `hippocampus backfill`,
sent as RFC 3339, and dated per line, per session (LoCoMo's "1:56 pm on 8 May, 2023" included)
and per turn. LoCoMo-shaped input is made up here; the one test of the real dataset reads it at
run time from ../shared/datasets/locomo and skips without it."""

import asyncio
import json
import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx2
import pytest
from click.testing import CliRunner, Result
from client_backfill import backfill, posted, summary, write_lines
from client_cli_fake import FakeHippocampus
from client_test_servers import job_body, mocked, mocked_async

from hippocampus_client import InvalidInputError
from hippocampus_client.cli import cli
from hippocampus_client.cli_backfill_lines import item_id, parse_line

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "client" / "README.md"
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"
BAD_TIMESTAMPS = [
    "2023-05-08",  # a date alone
    "2023-05-08T13:56:00",  # no offset: whose 13:56?
    "2023-05-08T13:56Z",  # no seconds
    "2023-05-08T13:56:00.1234567Z",  # finer than the API's microseconds
    "2023-02-30T10:00:00Z",  # no such day
    "2023-05-08T13:56:00+24:00",
    "1:56 pm on 8 May, 2023",  # LoCoMo's form: only a backfill session's date_time
    "1683554160",
    "",
]


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[Any] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        return httpx2.Response(202, json={"jobs": [job_body(f"job-{n}") for n in range(len(body["items"]))]})

    def items(self) -> list[dict[str, Any]]:
        return [item for body in self.bodies for item in body["items"]]


# --- the library -------------------------------------------------------------------------------


def test_a_datetime_is_sent_as_rfc_3339_and_a_string_as_given() -> None:
    recorder = Recorder()
    memory = mocked(recorder, strict=True)
    memory.add("alice", "Moved to Lyon.", occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
    memory.add(
        "alice", "Adopted a cat.", occurred_at=datetime(2023, 6, 1, 9, 0, tzinfo=ZoneInfo("Europe/Paris"))
    )
    memory.add(
        "alice", "Late.", occurred_at=datetime(2023, 6, 1, 9, 0, 0, 500, tzinfo=timezone(timedelta(hours=-5)))
    )
    memory.add("alice", "Given.", occurred_at="2023-05-08T15:56:00.5+02:00")
    assert [item["occurred_at"] for item in recorder.items()] == [
        "2023-05-08T13:56:00+00:00",
        "2023-06-01T09:00:00+02:00",
        "2023-06-01T09:00:00.000500-05:00",
        "2023-05-08T15:56:00.5+02:00",
    ]


def test_an_items_own_date_wins_and_a_datetime_in_an_item_is_written_too() -> None:
    recorder = Recorder()
    items = [
        {"text": "Own date.", "occurred_at": datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC)},
        {"text": "Own string.", "occurred_at": "2022-01-02T03:04:05Z"},
        {"text": "The option's."},
    ]
    mocked(recorder, strict=True).add("alice", items, occurred_at="2023-05-08T13:56:00Z")
    assert [item["occurred_at"] for item in recorder.items()] == [
        "2022-01-02T03:04:05+00:00", "2022-01-02T03:04:05Z", "2023-05-08T13:56:00Z",
    ]  # fmt: skip


def test_a_naive_datetime_is_refused_before_any_request(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    with pytest.raises(InvalidInputError) as refused:
        mocked(recorder, strict=True).add("alice", "Moved.", occurred_at=datetime(2023, 5, 8, 13, 56))
    assert refused.value.details[0]["field"] == "occurred_at" and "naive" in refused.value.message
    with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
        assert mocked(recorder).add("alice", "Moved.", occurred_at=datetime(2023, 5, 8)) is None
    assert "code=invalid_input" in caplog.text and "field=occurred_at" in caplog.text
    assert recorder.bodies == []


@pytest.mark.parametrize("bad", [*BAD_TIMESTAMPS, 1683554160, datetime(2023, 5, 8).date()])
def test_a_string_the_api_would_refuse_is_refused_before_any_request(bad: Any) -> None:
    recorder = Recorder()
    memory = mocked(recorder, strict=True)
    with pytest.raises(InvalidInputError) as option:
        memory.add("alice", "Moved.", occurred_at=bad)
    assert option.value.details[0]["field"] == "occurred_at"
    with pytest.raises(InvalidInputError) as own:
        memory.add(
            "alice",
            [{"text": "ok", "occurred_at": "2023-05-08T13:56:00Z"}, {"text": "x", "occurred_at": bad}],
        )
    assert own.value.details[0]["field"] == "items[1].occurred_at"
    assert recorder.bodies == []


def test_the_forms_rfc_3339_allows_are_taken() -> None:
    recorder = Recorder()
    memory = mocked(recorder, strict=True)
    given = [
        "2023-05-08T13:56:00Z",
        "2023-05-08t13:56:00z",
        "2023-05-08 13:56:00-07:30",
        "2023-05-08T13:56:00.123456+02:00",
    ]
    for value in given:
        memory.add("alice", "turn", occurred_at=value)
    assert [item["occurred_at"] for item in recorder.items()] == given


def test_the_async_client_checks_and_sends_it_the_same_way() -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with mocked_async(recorder, strict=True) as memory:
            await memory.add("alice", "Moved.", occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
            with pytest.raises(InvalidInputError):
                await memory.add("alice", "Moved.", occurred_at="2023-05-08T13:56:00")

    asyncio.run(scenario())
    assert [item["occurred_at"] for item in recorder.items()] == ["2023-05-08T13:56:00+00:00"]


# --- hippocampus add -----------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeHippocampus]:
    with FakeHippocampus() as server:
        yield server


def cli_run(fake: FakeHippocampus, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--endpoint", fake.url, "--tenant", "acme", *args])


def test_add_occurred_at_is_sent_and_a_bad_one_is_a_usage_error_before_any_request(
    fake: FakeHippocampus,
) -> None:
    assert (
        cli_run(
            fake, "add", "alice", "Moved to Lyon.", "--occurred-at", "2023-05-08T15:56:00+02:00"
        ).exit_code
        == 0
    )
    assert fake.requests[-1].body["items"] == [
        {"text": "Moved to Lyon.", "occurred_at": "2023-05-08T15:56:00+02:00"}
    ]
    sent = len(fake.requests)
    for bad in ("2023-05-08", "2023-05-08T13:56:00", "yesterday"):
        refused = cli_run(fake, "add", "alice", "Moved.", "--occurred-at", bad)
        assert refused.exit_code == 2 and "Invalid value for '--occurred-at'" in refused.stderr
        assert "RFC 3339" in refused.stderr
    assert len(fake.requests) == sent


# --- hippocampus backfill ------------------------------------------------------------------------


def dates(fake: FakeHippocampus, user: str) -> list[str | None]:
    return [item.get("occurred_at") for item in posted(fake, user)]


def test_line_session_and_turn_dates_reach_the_requests(fake: FakeHippocampus, tmp_path: Path) -> None:
    lines = [
        {"user_id": "alice", "text": "User: I sell candles.\nAssistant: Nice!", "occurred_at": "2023-01-01T10:00:00Z"},
        {
            "user_id": "bob",
            "occurred_at": "2023-02-01T10:00:00Z",
            "turns": [
                "User: hi\nAssistant: hello",
                {"user": "Moved to Lyon.", "assistant": "OK.", "occurred_at": "2023-02-02T08:00:00+01:00"},
                {"text": "An item.", "occurred_at": "2023-02-03T00:00:00Z"},
                [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}],
            ],
        },
        {
            "user_id": "carol",
            "occurred_at": "2020-01-01T00:00:00Z",  # the line's: for a session without a date
            "sessions": [
                {"occurred_at": "2023-03-01T09:00:00+02:00", "turns": ["User: one\nAssistant: a", {"user": "two", "assistant": "b"}]},
                {"date_time": "7:55 pm on 9 June, 2023", "turns": ["User: three\nAssistant: c", {"user": "four", "assistant": "d", "occurred_at": "2023-06-10T08:00:00Z"}]},
                {"turns": ["User: five\nAssistant: e"]},
            ],
        },
        {"user_id": "dave", "items": [{"text": "Own date.", "occurred_at": "2021-07-04T12:00:00-04:00"}, {"text": "None."}]},
        {"user_id": "frank", "occurred_at": "2019-01-01T00:00:00Z", "sessions": [  # null: not given
            {"occurred_at": None, "date_time": None, "turns": [{"text": "Null.", "occurred_at": None}]},
        ]},
        {"user_id": "gus", "occurred_at": None, "text": "Undated."},
    ]  # fmt: skip
    report = summary(backfill(fake, write_lines(tmp_path / "dated.jsonl", lines)))
    assert (report["done"], report["failed"], report["items"]) == (6, 0, 14)
    assert dates(fake, "alice") == ["2023-01-01T10:00:00Z"]
    assert dates(fake, "bob") == [
        "2023-02-01T10:00:00Z", "2023-02-02T08:00:00+01:00", "2023-02-03T00:00:00Z", "2023-02-01T10:00:00Z",
    ]  # fmt: skip
    assert posted(fake, "bob")[1]["user_assistant_pairs"] == [{"user": "Moved to Lyon.", "assistant": "OK."}]
    assert dates(fake, "carol") == [
        "2023-03-01T09:00:00+02:00", "2023-03-01T09:00:00+02:00",
        "2023-06-09T19:55:00+00:00", "2023-06-10T08:00:00Z",
        "2020-01-01T00:00:00Z",
    ]  # fmt: skip
    assert [i.get("text") or i["user_assistant_pairs"][0]["user"] for i in posted(fake, "carol")] == [
        "User: one\nAssistant: a", "two", "User: three\nAssistant: c", "four", "User: five\nAssistant: e",
    ]  # fmt: skip
    assert dates(fake, "dave") == ["2021-07-04T12:00:00-04:00", None]
    assert posted(fake, "frank")[0]["occurred_at"] == "2019-01-01T00:00:00Z"
    assert "occurred_at" not in posted(fake, "gus")[0]


def test_a_session_date_time_is_read_in_the_timezone_given(fake: FakeHippocampus, tmp_path: Path) -> None:
    lines = [
        {"user_id": "erin", "sessions": [
            {"date_time": "1:56 pm on 8 May, 2023", "turns": ["Ann: one"]},
            {"date_time": "12:09 am on 13 January, 2024", "turns": ["Ann: two"]},
        ]},
    ]  # fmt: skip
    summary(backfill(fake, write_lines(tmp_path / "z.jsonl", lines), "--timezone", "Europe/Paris"))
    assert dates(fake, "erin") == ["2023-05-08T13:56:00+02:00", "2024-01-13T00:09:00+01:00"]
    refused = CliRunner().invoke(
        cli,
        [
            "--endpoint",
            fake.url,
            "--tenant",
            "acme",
            "backfill",
            str(tmp_path / "z.jsonl"),
            "--timezone",
            "Mars/Olympus",
        ],
    )
    assert refused.exit_code == 2 and "Invalid value for '--timezone'" in refused.stderr


def test_a_bad_date_fails_its_line_alone_before_it_is_sent(fake: FakeHippocampus, tmp_path: Path) -> None:
    lines = [
        {"user_id": "u1", "text": "x", "occurred_at": "2023-05-08"},
        {"user_id": "u2", "turns": [{"user": "a", "assistant": "b", "occurred_at": "2023-05-08T13:56:00"}]},
        {"user_id": "u3", "sessions": [{"date_time": "yesterday", "turns": ["x"]}]},
        {"user_id": "u4", "sessions": [{"occurred_at": "1:56 pm on 8 May, 2023", "turns": ["x"]}]},
        {"user_id": "u5", "sessions": [{"occurred_at": "2023-05-08T13:56:00Z", "date_time": "1:56 pm on 8 May, 2023", "turns": ["x"]}]},
        {"user_id": "u6", "sessions": [{"occurred_at": "2023-05-08T13:56:00Z", "turns": []}]},
        {"user_id": "u7", "sessions": [{"when": "2023-05-08T13:56:00Z", "turns": ["x"]}]},
        {"user_id": "u8", "items": [{"text": "x", "occurred_at": 1683554160}]},
        {"user_id": "ok", "sessions": [{"occurred_at": "2023-05-08T13:56:00Z", "turns": ["fine"]}]},
    ]  # fmt: skip
    report = summary(backfill(fake, write_lines(tmp_path / "bad.jsonl", lines)))
    assert (report["done"], report["failed"]) == (1, 8)
    assert {f["code"] for f in report["failures"]} == {"invalid_line"}
    messages = [f["message"] for f in report["failures"]]
    for where, message in zip(
        ["occurred_at", "turns[0].occurred_at", "sessions[0].date_time", "sessions[0].occurred_at",
         "sessions[0]: give occurred_at or date_time", "sessions[0].turns must be", "sessions[0]: unknown field when",
         "items[0].occurred_at"],
        messages,
        strict=True,
    ):  # fmt: skip
        assert message.startswith(where), message
    assert [r.path for r in fake.requests if r.method == "POST"] == ["/v1/tenants/acme/users/ok/memory"]


def test_dated_lines_keep_their_ids_on_a_rerun_and_in_the_failed_file(
    fake: FakeHippocampus, tmp_path: Path
) -> None:
    lines = [
        {"user_id": "alice", "sessions": [
            {"date_time": "1:56 pm on 8 May, 2023", "turns": ["User: one\nAssistant: a", {"user": "two", "assistant": "b"}]},
            {"occurred_at": "2023-06-01T09:00:00Z", "turns": ["User: three REFUSE-ME\nAssistant: c"]},
        ]},
        {"user_id": "alice", "occurred_at": "2023-07-01T09:00:00Z", "turns": ["User: four\nAssistant: d"]},
    ]  # fmt: skip
    path = write_lines(tmp_path / "r.jsonl", lines)
    first = summary(backfill(fake, path, "--timezone", "Asia/Tokyo"))
    assert (first["done"], first["failed"]) == (1, 1)
    accepted = {key: list(ids) for key, ids in fake.accepted.items()}
    four = {"text": "User: four\nAssistant: d", "occurred_at": "2023-07-01T09:00:00Z"}
    assert accepted[("acme", "alice")] == [item_id("alice", 2, 1, four)]
    # The same file from scratch: the same ids, the same batches, nothing new for the service.
    again = summary(backfill(fake, path, "--restart", "--timezone", "Asia/Tokyo"))
    assert (again["done"], again["failed"]) == (1, 1)
    assert fake.accepted == accepted and fake.replays == 1  # line 2's batch, recognised by its key
    # The failed line, written with its items' dates and ids, needs no --timezone to be sent again.
    (record,) = [json.loads(line) for line in (tmp_path / "r.jsonl.failed.jsonl").read_text().splitlines()]
    assert [item["occurred_at"] for item in record["items"]] == [
        "2023-05-08T13:56:00+09:00", "2023-05-08T13:56:00+09:00", "2023-06-01T09:00:00Z",
    ]  # fmt: skip
    retried = parse_line(1, (tmp_path / "r.jsonl.failed.jsonl").read_bytes())
    refused = [item for item in posted(fake, "alice") if "REFUSE-ME" in json.dumps(item)]
    assert retried is not None and list(retried.items) == record["items"] and refused[0] == record["items"][2]


# --- LoCoMo --------------------------------------------------------------------------------------


def locomo_program() -> str:
    """The jq program client/README.md documents for LoCoMo, so the test runs what users copy."""
    match = re.search(r"^jq -c '(.+)' locomo10\.json > locomo\.jsonl$", README.read_text(), re.MULTILINE)
    assert match, "client/README.md no longer shows the LoCoMo jq command"
    return match.group(1)


def convert(source: Path, target: Path) -> Path:
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    converted = subprocess.run(
        [jq, "-c", locomo_program(), str(source)], capture_output=True, check=True, text=True
    )
    target.write_text(converted.stdout)
    return target


def made_up_locomo() -> list[dict[str, Any]]:
    """Two conversations of LoCoMo's shape, invented: sessions out of order in the object, a
    session 10 after 9, a date without a session, a photo, speaker_b opening a session."""
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Ben",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back from Oslo."},
                      {"speaker": "Ann", "dia_id": "D2:2", "text": "How was it?"}],
        "session_2_date_time": "9:30 am on 10 March, 2022",
        "session_1_date_time": "1:05 pm on 3 March, 2022",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "Look at mine!", "img_url": ["https://example.test/x.jpg"],
                       "blip_caption": "a photo of a grey cat on a sofa"}],
        **{f"session_{n}": [{"speaker": "Ann", "dia_id": f"D{n}:1", "text": f"Week {n}."}] for n in range(3, 11)},
        **{f"session_{n}_date_time": f"12:0{n % 10} am on {n} April, 2022" for n in range(3, 11)},
        "session_11_date_time": "4:00 pm on 1 May, 2022",  # LoCoMo lists dates of sessions it does not have
    }  # fmt: skip
    other = {"speaker_a": "Cy", "speaker_b": "Di", "session_1_date_time": "11:59 pm on 31 December, 2021",
             "session_1": [{"speaker": "Cy", "dia_id": "D1:1", "text": "Happy new year soon."}]}  # fmt: skip
    return [
        {"sample_id": "conv-1", "conversation": conversation, "qa": [], "event_summary": {}},
        {"sample_id": "conv-2", "conversation": other, "qa": []},
    ]


def test_a_locomo_conversation_becomes_dated_readable_turns(fake: FakeHippocampus, tmp_path: Path) -> None:
    source = tmp_path / "locomo10.json"
    source.write_text(json.dumps(made_up_locomo()))
    lines = convert(source, tmp_path / "locomo.jsonl")
    report = summary(backfill(fake, lines, "--timezone", "America/New_York"))
    assert (report["lines"], report["done"], report["failed"], report["items"]) == (2, 2, 0, 13)
    sent = posted(fake, "conv-1")
    assert [(item["id"], item["text"], item["occurred_at"]) for item in sent[:5]] == [
        ("D1:1", "Ann: I adopted a cat.", "2022-03-03T13:05:00-05:00"),
        ("D1:2", "Ben: Look at mine! [shares a photo of a grey cat on a sofa]", "2022-03-03T13:05:00-05:00"),
        ("D2:1", "Ben: Back from Oslo.", "2022-03-10T09:30:00-05:00"),
        ("D2:2", "Ann: How was it?", "2022-03-10T09:30:00-05:00"),
        ("D3:1", "Ann: Week 3.", "2022-04-03T00:03:00-04:00"),
    ]
    assert [item["id"] for item in sent[5:]] == [f"D{n}:1" for n in range(4, 11)]  # 10 after 9
    assert posted(fake, "conv-2") == [
        {"id": "D1:1", "text": "Cy: Happy new year soon.", "occurred_at": "2021-12-31T23:59:00-05:00"}
    ]
    again = summary(backfill(fake, lines, "--restart", "--timezone", "America/New_York"))
    assert again["items"] == 13 and fake.replays == again["requests"]


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo dataset is not in ../shared/datasets/locomo")
def test_the_real_locomo_file_converts_to_lines_backfill_reads(tmp_path: Path) -> None:
    lines = convert(LOCOMO, tmp_path / "locomo.jsonl").read_bytes().splitlines()
    samples = json.loads(LOCOMO.read_text())
    assert len(lines) == len(samples)
    for number, (raw, sample) in enumerate(zip(lines, samples, strict=True), start=1):
        line = parse_line(number, raw)
        assert line is not None and line.user == sample["sample_id"]
        sessions = sample["conversation"]
        turns = [t for key, value in sessions.items() if re.fullmatch(r"session_\d+", key) for t in value]
        assert sorted(item["id"] for item in line.items) == sorted(t["dia_id"] for t in turns)
        moments = [datetime.fromisoformat(item["occurred_at"]) for item in line.items]
        assert moments == sorted(moments)  # sessions in number order, dated as LoCoMo dates them
