"""What a backfill of LoCoMo keeps: records, summary words, answer coverage, LLM calls per turn.

Replays the LoCoMo conversations (Maharana et al., ACL 2024; CC BY-NC 4.0, licence beside the
data), read at run time from ../shared/datasets/locomo/locomo10.json (nothing of them is copied
into the repository; without the file it says so and exits 0), through a local stack on
127.0.0.1, one conversation after the other, session by session, as `hippocampus backfill` sends
them: the lines of client/README.md's LoCoMo `jq` one-liner (one item per utterance, id = its
`dia_id`, text "Speaker: text" plus " [shares <blip_caption>]", every turn of a session dated by
its `session_N_date_time` read in UTC), one session per run of the client's own backfill runner
(`hippocampus_client.cli_backfill_run.Runner`, its line parsing and batching), then every job of
the session polled until final. The user is the conversation's `sample_id`, the tenant unique to
the run. After each session the user's records are read (current and invalidated); after the
last, the summary (`GET .../memory`) and the records (`GET .../memory/records`, every page).

Printed per conversation and overall (questions pooled):
- records kept, current / invalidated, and the summary's words;
- answer coverage: the share of the QA items of categories 1-4 (5 is adversarial: its answer is
  not in the conversation) whose answer's content words are found in a text, for the summary
  alone (the baseline, measured in the same run), the current records alone, and the summary
  plus the current records; the ratio (summary + records) / summary;
- LLM calls per turn (target <= 0.2 for a backfill), counted from the condenser's own usage
  lines: observability.record_tenant_usage prints one EMF line per condensation with
  `TenantLlmCalls` (every attempt of that condensation, a schema retry included, and a call
  whose answer changed nothing, which writes no version) and the tenant; the stack this command
  starts has EMF on (POWERTOOLS_METRICS_DISABLED=false) and its log is read for this run's tenant
  at the end of each conversation (the last one's after the stack stopped). The memory versions
  written (distinct `memory_version` of the completed jobs) are printed beside them: a lower
  bound, and all there is with --endpoint, whose stack's log is not read;
- records per 100 turns: records (current, and all) after the last session / turns x 100, and
  checkpoints after sessions 1, 5, 10, 20 and 30, summed over the conversations that reached them.

Normalisation (`content_words`), the same for answers and for the texts they are looked for in:
Unicode folded to ASCII, lowercase; ISO dates (2023-05-07) written as "7 may 2023"; a possessive
's dropped; words are runs of letters and digits (every other character separates them); month
abbreviations become the month (aug -> august, sept -> september); number words one to twelve
become digits; ordinals lose their suffix (7th -> 7) and numbers their leading zeros; a small
list of function words (STOPWORDS: articles, pronouns, auxiliaries, prepositions, conjunctions)
is dropped; then a light suffix stemming of words of letters over 3 characters: ies -> i, sses -> ss, a
plural s dropped (not after s, u or i), then ied -> i, ing and ed dropped when 3 letters remain
(a doubled final consonant then undoubled, except l, s and z), then a final y after a consonant
written i and a final e dropped (painting, paints, painted -> paint; hiking, hike -> hik;
stories, story -> stori; movies, movie -> movi); month names are not stemmed. "7 May 2023" and
"May 7th, 2023" both become {7, may, 2023}. An answer's content words are its distinct words
left; an answer with none is not counted (the number is printed). Integer answers are str()-ed.

Rule: a question is covered by a text when at least 80% of its answer's content words are among
the text's words (COVERED_SHARE; with 4 words or fewer that is all of them); the strict rule,
every word, is printed too. An answer's words found in different places of the text still count:
this is an upper bound on what a reader could answer, not a judgement of correctness.

With the `offline` stand-in (the default: deterministic, no network) the summary + records
coverage is expected to be at least 3x the summary's. With OPENAI_API_KEY set (and optionally
OPENAI_BASE_URL, MEMORY_LLM_MODEL) the same command runs the stack with the `openai` provider and
measures a real model (it costs tokens; not run in CI). Embeddings are `offline` either way.
Sessions are sent one at a time and waited for (to read the records after each), so the calls
per turn are those of a backfill whose sessions arrive apart; a whole file sent at once may
coalesce more.

Run: .venv/bin/python -m bench.bench_memory_coverage [--conversations 2] [--max-words 200]
     [--endpoint http://127.0.0.1:3000] [--dataset PATH] [--max-seconds 2400]
Figures only, no assertions: `make bench` runs it. The last line is, for scripts:
coverage summary+records=<x> summary=<y> ratio=<r> calls_per_turn=<c> conversations=<n>
(nan for what could not be measured, e.g. x and r when the service has no records route, which
is reported and not an error; inf for a ratio over a summary that covers nothing).
"""

import argparse
import json
import math
import os
import re
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from hippocampus_client import MemoryClient
from hippocampus_client.cli_backfill_run import Options, Runner, Summary
from hippocampus_client.cli_backfill_state import BackfillState, FailedLines
from hippocampus_client.errors import HippocampusError
from hippocampus_client.models import Job
from tests.e2e.e2e_support import Api, LocalStackProcess, unique

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared/datasets/locomo/locomo10.json"
CATEGORIES = (1, 2, 3, 4)
COVERED_SHARE = 0.8
CHECKPOINTS = (1, 5, 10, 20, 30)
CONCURRENCY = 4  # executions of each function, as `make dev` runs them
RECORDS_PAGE = 100
MAX_RECORD_PAGES = 1000  # 100,000 records: far beyond MEMORY_MAX_RECORDS, a bound on a broken cursor
WAIT_INTERVAL_S = 0.1

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ALIASES = {month[:3]: month for month in MONTHS} | {"sept": "september"}
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        (
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        )
    )
}
STOPWORDS = frozenset(
    """a an the and or but nor so yet if than then as of to in on at by for with from into onto upon
    about over under between through during before after since until while up down out off
    is are was were be been being am do does did doing done has have had having will would shall
    should can could might must it its this that these those there here
    i me my mine we us our ours you your yours he him his she her hers they them their theirs
    who whom whose which what when where why how
    some any all both each every other such own same very just also too""".split()  # noqa: SIM905
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_POSSESSIVE = re.compile(r"'s\b")
_WORD = re.compile(r"[a-z0-9]+")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_SESSION = re.compile(r"session_(\d+)")
_KEEP_DOUBLE = frozenset("lsz")
_VOWELS = frozenset("aeiou")
EMF_LLM_CALLS = "TenantLlmCalls"
EMF_TENANT = "tenant"  # observability.TENANT_DIMENSION


# --- normalisation and coverage (pure) ---------------------------------------------------------


def stem(word: str) -> str:
    """The light suffix stemming of the module docstring; digits, months and short words as they are."""
    if len(word) <= 3 or not word.isalpha() or word in MONTHS:
        return word
    if (word.endswith("ies") and len(word) > 4) or word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-2]
    else:
        for suffix in ("ing", "ed"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                last = word[-1]
                if word[-2] == last and last not in _VOWELS and last not in _KEEP_DOUBLE:
                    word = word[:-1]
                break
    if word.endswith("y") and len(word) > 3 and word[-2] not in _VOWELS:
        word = word[:-1] + "i"
    elif word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _iso_as_spoken(match: re.Match[str]) -> str:
    year, month, day = (int(part) for part in match.groups())
    if not 1 <= month <= 12:
        return match.group(0)
    return f"{day} {MONTHS[month - 1]} {year}"


def _word(token: str) -> str:
    token = _MONTH_ALIASES.get(token, token)
    token = _NUMBER_WORDS.get(token, token)
    if ordinal := _ORDINAL.match(token):
        token = ordinal.group(1)
    if token.isdigit():
        return str(int(token))
    return stem(token)


def content_words(text: str) -> list[str]:
    """The distinct content words of `text`, in order (the normalisation of the module docstring)."""
    folded = (
        unicodedata.normalize("NFKD", text.replace("\u2019", "'")).encode("ascii", "ignore").decode("ascii")
    )
    folded = _ISO_DATE.sub(_iso_as_spoken, folded.lower())
    folded = _POSSESSIVE.sub("", folded)
    words = (_word(token) for token in _WORD.findall(folded) if token not in STOPWORDS)
    return list(dict.fromkeys(word for word in words if word and word not in STOPWORDS))


def covered(answer: Sequence[str], text: set[str], share: float = COVERED_SHARE) -> bool:
    """At least `share` of the answer's content words are in `text` (an empty answer never is)."""
    if not answer:
        return False
    found = sum(1 for word in answer if word in text)
    return found >= share * len(answer) - 1e-9


def coverage(answers: Sequence[Sequence[str]], text: set[str], share: float = COVERED_SHARE) -> float:
    """The share of `answers` (each a list of content words, none empty) covered by `text`."""
    if not answers:
        return math.nan
    return sum(1 for answer in answers if covered(answer, text, share)) / len(answers)


def ratio(numerator: float, denominator: float) -> float:
    if math.isnan(numerator) or math.isnan(denominator):
        return math.nan
    if denominator == 0:
        return math.inf if numerator > 0 else math.nan
    return numerator / denominator


def per_100_turns(count: int, turns: int) -> float:
    return 100 * count / turns if turns else math.nan


def emf_llm_calls(lines: Iterable[str], tenant: str) -> int:
    """The LLM calls of `tenant` in the condenser's EMF lines (one per condensation), other lines ignored."""
    calls = 0.0
    for line in lines:
        if EMF_LLM_CALLS not in line or "{" not in line:
            continue
        try:
            document = json.loads(line[line.index("{") :])
        except ValueError:
            continue
        if not isinstance(document, dict) or document.get(EMF_TENANT) != tenant:
            continue
        value = document.get(EMF_LLM_CALLS, 0)
        calls += sum(value) if isinstance(value, list) else float(value)
    return round(calls)


def error_messages(lines: Iterable[str]) -> list[str]:
    """The distinct messages of the functions' ERROR log lines (Powertools JSON), first seen first."""
    messages: dict[str, None] = {}
    for line in lines:
        if '"ERROR"' not in line or "{" not in line:
            continue
        try:
            document = json.loads(line[line.index("{") :])
        except ValueError:
            continue
        if isinstance(document, dict) and document.get("level") == "ERROR":
            detail = document.get("exception_name") or document.get("error_type") or ""
            messages[f"{document.get('message')} {detail}".strip()] = None
    return list(messages)


# --- the dataset -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    number: int
    date_time: str  # as LoCoMo writes it: "1:56 pm on 8 May, 2023"
    turns: list[dict[str, str]]  # {"id": dia_id, "text": "Speaker: text"}


@dataclass(frozen=True)
class Question:
    category: int
    words: list[str]  # the answer's content words, not empty


@dataclass(frozen=True)
class Sample:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]
    no_words: int  # category 1-4 questions whose answer has no content word: not counted

    @property
    def turns(self) -> int:
        return sum(len(session.turns) for session in self.sessions)


def turn_text(turn: dict[str, Any]) -> str:
    """As the jq one-liner writes it: jq's `if .blip_caption` is false for null (or absent) only."""
    caption = turn.get("blip_caption")
    shares = f" [shares {caption}]" if caption is not None and caption is not False else ""
    return f"{turn['speaker']}: {turn['text']}{shares}"


def sample_of(raw: dict[str, Any]) -> Sample:
    conversation = raw["conversation"]
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.fullmatch(key)))
    sessions = [
        Session(
            number,
            conversation[f"session_{number}_date_time"],
            [{"id": turn["dia_id"], "text": turn_text(turn)} for turn in conversation[f"session_{number}"]],
        )
        for number in numbers
    ]
    questions, no_words = [], 0
    for item in raw["qa"]:
        if item.get("category") not in CATEGORIES or "answer" not in item:
            continue
        words = content_words(str(item["answer"]))
        if words:
            questions.append(Question(int(item["category"]), words))
        else:
            no_words += 1
    return Sample(str(raw["sample_id"]), sessions, questions, no_words)


def backfill_line(user: str, session: Session) -> dict[str, Any]:
    """One session of the jq one-liner's line of the conversation (client/README.md "LoCoMo")."""
    return {"user_id": user, "sessions": [{"date_time": session.date_time, "turns": session.turns}]}


# --- the run -----------------------------------------------------------------------------------


class RecordingClient(MemoryClient):
    """The CLI's strict client, keeping the jobs the service answered (to wait for them)."""

    def __init__(self, endpoint: str, tenant: str) -> None:
        # As `hippocampus` builds it (cli_settings.CliState.client), with longer timeouts.
        super().__init__(
            endpoint,
            tenant,
            strict=True,
            timeout=10.0,
            write_timeout=30.0,
            max_retries=4,
            breaker_cooldown=0.0,
        )
        self.jobs: list[Job] = []

    def add(self, user: str, content: Any, **options: Any) -> list[Job] | None:
        jobs = super().add(user, content, **options)
        self.jobs += jobs or []
        return jobs


class _NoProgress:
    def update(self, n: int = 1) -> object:
        return None


class RecordsUnavailable(Exception):
    """The records route answered 404: not in this version of the service."""


@dataclass
class SampleResult:
    sample_id: str
    sessions: int
    turns: int
    questions: list[Question]
    no_words: int
    summary: str
    summary_words: int
    records: list[dict[str, Any]] | None  # every record, invalidated included; None: no route
    llm_calls: int | None
    versions: int
    not_completed: int  # jobs failed, skipped or not final in time
    seconds: float
    growth: list[tuple[int, int, int, int]] = field(default_factory=list)  # session, turns, current, all

    @property
    def current_texts(self) -> list[str]:
        return [str(r.get("text") or "") for r in self.records or [] if r.get("invalidated_at") is None]

    @property
    def invalidated(self) -> int:
        return sum(1 for r in self.records or [] if r.get("invalidated_at") is not None)


class LogTail:
    """The stack's log read as it grows: complete lines only."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.offset = 0

    def new_lines(self) -> list[str]:
        if self.path is None or not self.path.exists():
            return []
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode("utf-8", errors="replace").splitlines()


def read_records(api: Api, tenant: str, user: str) -> list[dict[str, Any]]:
    """Every record of the user, invalidated included, every page; `RecordsUnavailable` on 404."""
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_RECORD_PAGES):
        params: dict[str, Any] = {"limit": RECORDS_PAGE, "include_invalidated": "true"}
        if cursor:
            params["cursor"] = cursor
        response = api.request("GET", api.memory_path(tenant, user) + "/records", params=params)
        if response.status_code == 404:
            raise RecordsUnavailable(response.text[:200])
        if response.status_code != 200:
            raise RuntimeError(f"GET records: {response.status_code} {response.text[:300]}")
        body = response.json()
        records += body.get("items") or []
        cursor = body.get("next_cursor")
        if not cursor:
            return records
    raise RuntimeError(f"the records of {user} did not end after {MAX_RECORD_PAGES} pages")


def read_memory(api: Api, tenant: str, user: str) -> dict[str, Any]:
    response = api.request("GET", api.memory_path(tenant, user))
    if response.status_code != 200:
        raise RuntimeError(f"GET memory: {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body


def send_session(client: RecordingClient, workdir: Path, target: str, line: dict[str, Any]) -> list[Job]:
    """One session through the backfill runner, as `hippocampus backfill FILE --timezone UTC` sends it."""
    path = workdir / "session.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    state = BackfillState.load(
        path.with_name(path.name + ".progress"), path.name, target, client.tenant, True
    )
    failed = FailedLines(path.with_name(path.name + ".failed.jsonl"))
    first = len(client.jobs)
    summary: Summary = Runner(client, state, failed, Options(timezone=UTC), _NoProgress()).run(path)
    if summary.stopped is not None or summary.failed:
        raise RuntimeError(f"backfill of {line['user_id']} failed: {summary.stopped or summary.failures}")
    return client.jobs[first:]


class Replay:
    def __init__(self, url: str, tenant: str, workdir: Path, log: LogTail, args: argparse.Namespace) -> None:
        self.api = Api(url)
        self.url, self.tenant, self.workdir, self.log, self.args = url, tenant, workdir, log, args
        self.records_available = True
        self.deadline: float = time.monotonic() + float(args.max_seconds)

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def records_or_none(self, user: str) -> list[dict[str, Any]] | None:
        if not self.records_available:
            return None
        try:
            return read_records(self.api, self.tenant, user)
        except RecordsUnavailable as error:
            self.records_available = False
            print(f"records route not available (404: {error}); records figures left out")
            return None

    def run(self, sample: Sample) -> SampleResult | None:
        """The sample replayed session by session; None when the run's time ran out before its end."""
        started = time.monotonic()
        user, turns, versions, not_completed = sample.sample_id, 0, set(), 0
        outcomes: Counter[str] = Counter()  # jobs that carry an error: status and code
        growth: list[tuple[int, int, int, int]] = []
        with RecordingClient(self.url, self.tenant) as client:
            for index, session in enumerate(sample.sessions, start=1):
                if self.out_of_time():
                    return None
                jobs = send_session(client, self.workdir, self.url, backfill_line(user, session))
                left = min(self.args.session_timeout, max(1.0, self.deadline - time.monotonic()))
                try:
                    final = client.wait(jobs, timeout=left, interval=WAIT_INTERVAL_S) or []
                except HippocampusError as error:  # not final in time
                    print(f"{user} session {session.number}: {error}")
                    return None
                versions |= {job.memory_version for job in final if job.status == "completed"}
                not_completed += sum(1 for job in final if job.status != "completed")
                outcomes.update(f"{job.status} {job.error.code}" for job in final if job.error is not None)
                turns += len(session.turns)
                records = self.records_or_none(user)
                if records is not None:
                    current = sum(1 for r in records if r.get("invalidated_at") is None)
                    growth.append((index, turns, current, len(records)))
        if outcomes:
            print(f"{user}: jobs with an error: {dict(outcomes)}")
        memory = read_memory(self.api, self.tenant, user)
        lines = self.log.new_lines()
        calls = None if self.log.path is None else emf_llm_calls(lines, self.tenant)
        if not_completed:
            for message in error_messages(lines)[:3]:
                print(f"  the stack logged: {message}")
        return SampleResult(
            sample_id=user,
            sessions=len(sample.sessions),
            turns=turns,
            questions=sample.questions,
            no_words=sample.no_words,
            summary=memory.get("memory") or "",
            summary_words=int(memory.get("word_count") or 0),
            records=self.records_or_none(user),
            llm_calls=calls,
            versions=len(versions - {None}),
            not_completed=not_completed,
            seconds=time.monotonic() - started,
            growth=growth,
        )


def stack_environment(max_words: int | None, api_key: str | None) -> dict[str, str]:
    """This process's environment without the developer's MEMORY_, OPENAI_, AWS_ and POWERTOOLS_
    variables; state in memory; EMF metrics on (the LLM calls are read from them); the `offline`
    LLM, or `openai` with the key (and OPENAI_BASE_URL, MEMORY_LLM_MODEL when set); offline embeddings."""
    source = os.environ  # noqa: TID251 - the child inherits PATH, HOME, ...; the LLM's key is passed on
    environment = {
        name: value
        for name, value in source.items()
        if not name.startswith(("MEMORY_", "OPENAI_", "AWS_", "POWERTOOLS_"))
    }
    environment |= {
        "MEMORY_LOCAL_DATA_DIR": ":memory:",
        "POWERTOOLS_METRICS_DISABLED": "false",
        "MEMORY_EMBEDDING_PROVIDER": "offline",
        "MEMORY_LLM_PROVIDER": "openai" if api_key else "offline",
    }
    if api_key:
        environment["OPENAI_API_KEY"] = api_key
        for name in ("OPENAI_BASE_URL", "MEMORY_LLM_MODEL"):
            if source.get(name):
                environment[name] = source[name]
    if max_words is not None:
        environment["MEMORY_MAX_WORDS"] = str(max_words)
    return environment


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverages:
    summary: float
    records: float
    both: float
    strict_both: float
    questions: int

    @property
    def ratio(self) -> float:
        return ratio(self.both, self.summary)


def coverages(results: Sequence[SampleResult]) -> Coverages:
    """Pooled over the questions of `results`; records NaN when the route is not there."""
    summary_hits = records_hits = both_hits = strict_hits = questions = 0
    have_records = all(result.records is not None for result in results)
    for result in results:
        summary = set(content_words(result.summary))
        records = set(content_words("\n".join(result.current_texts)))
        for question in result.questions:
            questions += 1
            summary_hits += covered(question.words, summary)
            records_hits += covered(question.words, records)
            both_hits += covered(question.words, summary | records)
            strict_hits += covered(question.words, summary | records, 1.0)
    if not questions:
        return Coverages(math.nan, math.nan, math.nan, math.nan, 0)

    def share(hits: int) -> float:
        return hits / questions if have_records else math.nan

    return Coverages(
        summary_hits / questions, share(records_hits), share(both_hits), share(strict_hits), questions
    )


def by_category(results: Sequence[SampleResult]) -> str:
    """Coverage of the summary + current records per question category, pooled."""
    texts = {r.sample_id: set(content_words(r.summary + "\n" + "\n".join(r.current_texts))) for r in results}
    parts = []
    for category in CATEGORIES:
        hits = [
            covered(q.words, texts[r.sample_id])
            for r in results
            for q in r.questions
            if q.category == category
        ]
        parts.append(f"{category}: {fmt(sum(hits) / len(hits) if hits else math.nan)} of {len(hits)}")
    return ", ".join(parts)


def fmt(value: float, digits: int = 3) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def print_table(results: Sequence[SampleResult]) -> None:
    header = (
        f"{'conversation':<13}{'sessions':>9}{'turns':>7}{'records cur/inv':>17}{'summary words':>15}"
        f"{'cov summary':>13}{'cov records':>13}{'cov sum+rec':>13}{'ratio':>8}{'LLM calls':>11}"
        f"{'calls/turn':>12}{'rec/100 turns cur/all':>23}{'seconds':>9}"
    )
    print(header)
    for result in results:
        cov = coverages([result])
        records = (
            f"{len(result.records) - result.invalidated}/{result.invalidated}"
            if result.records is not None
            else "n/a"
        )
        calls = result.llm_calls if result.llm_calls is not None else result.versions
        growth = (
            f"{fmt(per_100_turns(len(result.records) - result.invalidated, result.turns), 1)}/"
            f"{fmt(per_100_turns(len(result.records), result.turns), 1)}"
            if result.records is not None
            else "n/a"
        )
        print(
            f"{result.sample_id:<13}{result.sessions:>9}{result.turns:>7}{records:>17}"
            f"{result.summary_words:>15}"
            f"{fmt(cov.summary):>13}{fmt(cov.records):>13}{fmt(cov.both):>13}{fmt(cov.ratio, 2):>8}"
            f"{calls:>11}{fmt(calls / result.turns):>12}{growth:>23}{result.seconds:>9.1f}"
        )


def print_growth(results: Sequence[SampleResult]) -> None:
    if not all(result.growth for result in results):
        return
    parts = []
    for checkpoint in CHECKPOINTS:
        reached = [point for r in results for point in r.growth if point[0] == checkpoint]
        if reached:
            turns = sum(point[1] for point in reached)
            current, every = sum(point[2] for point in reached), sum(point[3] for point in reached)
            parts.append(
                f"after session {checkpoint} ({len(reached)} conv., {turns} turns) "
                f"{per_100_turns(current, turns):.1f}/{per_100_turns(every, turns):.1f}"
            )
    print("records per 100 turns, current/all, at checkpoints: " + "; ".join(parts))


def report(results: Sequence[SampleResult], llm_label: str, from_log: bool) -> None:
    print_table(results)
    turns = sum(r.turns for r in results)
    no_words = sum(r.no_words for r in results)
    cov = coverages(results)
    print(
        f"overall: {len(results)} conversations, {turns} turns, {cov.questions} questions of categories "
        f"1-4 (not counted: {no_words} whose answer has no content word); LLM {llm_label}"
    )
    print(
        f"rule: a question is covered when >= {COVERED_SHARE:.0%} of its answer's content words (lowercase, "
        "no punctuation or stopwords, light stemming, dates and numbers normalised) are in the text"
    )
    print(
        f"answer coverage: summary alone {fmt(cov.summary)} (baseline), current records alone "
        f"{fmt(cov.records)}, summary + current records {fmt(cov.both)} = {fmt(cov.ratio, 2)}x the summary "
        f"(target >= 3x with the offline stand-in); strict rule (every word) {fmt(cov.strict_both)}"
    )
    print(f"summary + current records by category: {by_category(results)}")
    words = [r.summary_words for r in results]
    versions = sum(r.versions for r in results)
    if results and all(r.records is not None for r in results):
        records = sum(len(r.records or []) for r in results)
        invalidated = sum(r.invalidated for r in results)
        print(
            f"records: {records - invalidated} current, {invalidated} invalidated; per 100 turns "
            f"{fmt(per_100_turns(records - invalidated, turns), 1)} current, "
            f"{fmt(per_100_turns(records, turns), 1)} "
            f"in all; summary words {sum(words)} in all, {max(words)} at most"
        )
        print_growth(results)
    else:
        print(f"records: n/a (route not available); summary words {sum(words)} in all")
    calls = sum(r.llm_calls or 0 for r in results) if from_log else versions
    source = (
        "TenantLlmCalls EMF lines of the condenser, this run's tenant"
        if from_log
        else "lower bound: memory versions written, the stack's log is not read with --endpoint"
    )
    per_turn = calls / turns if turns else math.nan
    print(
        f"LLM calls: {calls} ({source}) = {fmt(per_turn)} per turn "
        "(target <= 0.2; one call per turn = 1.000); "
        f"memory versions written {versions} ({fmt(versions / turns if turns else math.nan)} per turn); "
        f"jobs not completed {sum(r.not_completed for r in results)}"
    )
    print(
        f"coverage summary+records={fmt(cov.both)} summary={fmt(cov.summary)} ratio={fmt(cov.ratio, 2)} "
        f"calls_per_turn={fmt(per_turn)} conversations={len(results)}".replace("n/a", "nan")
    )


# --- main --------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_memory_coverage", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--dataset", type=Path, default=DATASET, help="locomo10.json")
    parser.add_argument(
        "--conversations", type=int, default=10, help="the first N conversations (default 10)"
    )
    parser.add_argument(
        "--max-words", type=int, default=None, help="MEMORY_MAX_WORDS (default: the service's)"
    )
    parser.add_argument(
        "--endpoint", default=None, help="an already running stack, e.g. http://127.0.0.1:3000"
    )
    parser.add_argument("--max-seconds", type=float, default=2400.0, help="bound of the whole replay")
    parser.add_argument("--session-timeout", type=float, default=300.0, help="bound of one session's jobs")
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.max_seconds <= 0 or args.session_timeout <= 0:
        parser.error("--conversations, --max-seconds and --session-timeout must be positive")
    if args.max_words is not None and args.endpoint:
        parser.error("--max-words sets the stack this command starts: not with --endpoint")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if not args.dataset.exists():
        print(f"LoCoMo not found at {args.dataset}: nothing to measure")
        return
    samples = [sample_of(raw) for raw in json.loads(args.dataset.read_text())][: args.conversations]
    api_key = os.environ.get("OPENAI_API_KEY") or None  # noqa: TID251 - whether to measure a real model
    llm = "openai (OPENAI_API_KEY set)" if api_key else "offline stand-in"
    if args.endpoint:
        llm = "of the stack at " + args.endpoint
    print(
        f"replaying {len(samples)} LoCoMo conversations ({sum(s.turns for s in samples)} turns), session by "
        f"session, through the backfill runner; LLM {llm}; max words {args.max_words or 'default'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        stack: LocalStackProcess | None = None
        if args.endpoint:
            url, log = args.endpoint, LogTail(None)
        else:
            environment = stack_environment(args.max_words, api_key)
            stack = LocalStackProcess(workdir / "stack.log", environment, concurrency=CONCURRENCY).start()
            url, log = stack.url, LogTail(stack.log_path)
        tenant = unique("coverage")
        results: list[SampleResult] = []
        try:
            replay = Replay(url, tenant, workdir, log, args)
            for sample in samples:
                result = replay.run(sample)
                if result is None:
                    print(
                        f"stopped before the end of {sample.sample_id}: out of time (--max-seconds "
                        f"{args.max_seconds:.0f}) or a session not final (--session-timeout); "
                        "reported without it"
                    )
                    break
                results.append(result)
                print(
                    f"{result.sample_id}: {result.turns} turns in {result.seconds:.1f} s, "
                    f"{result.summary_words} summary words"
                )
        finally:
            if stack is not None:
                stack.stop()
        if stack is not None and results:
            # What the last conversation's condensations printed after its jobs were read final.
            late = emf_llm_calls(log.new_lines(), tenant)
            last = results[-1]
            last.llm_calls = (last.llm_calls or 0) + late
        report(results, llm, from_log=stack is not None)


if __name__ == "__main__":
    main()
