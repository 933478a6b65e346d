"""Cost per turn, measured: a workload replayed on the local stack, counted as AWS and the LLM bill it.

`--users` users, each with `--history` turns behind it (sent first, not measured: the condenser
reads a user's newest jobs, up to 100, on every condensation), send `--facts` facts (one request),
then `--turns` turns (one request each) in bursts of `--burst` sent back to back, reading their
memory `--reads` times before each turn; a burst goes `--think-ms` after the previous one's jobs
are final (`bench/cost_workload.py`). The stub LLM answers after `--llm-latency-ms`. The stack
runs in this process, so that its counters can be read:
- LLM calls: the requests the stub received; tokens: the characters of every message it received,
  and of its answers, / 4 (OpenAI's rule of thumb; the stub's own `usage` counts words).
- API Gateway: the requests this benchmark sent. DynamoDB RRU/WRU, S3 and SQS: every request moto
  served, metered as AWS bills it (`bench/metering.py`: units from item sizes, SQS in 64 KB
  chunks); the event source's empty long polls are left out (they follow wall-clock time, not turns).
- Lambda: the local runtime's invocations and billed duration (each invocation rounded up to 1 ms,
  init excluded), at the memory sizes of `infra/specs.py`.
- CloudWatch Logs: the bytes of the functions' JSON log lines, EMF metrics included (Lambda's own
  START/END/REPORT lines are not written locally). X-Ray: one trace per API request and per
  condenser invocation (an upper bound; `tracing` is on by default).
- Embedding tokens: the characters of every text the stub was asked to embed / 4.
- Storage: what the measured turns left in moto, kept for the retention periods of cdk.json (and
  `max_episodes` episodes a user).
A first request on each environment is sent before measuring (some imports are lazy, as in Lambda).
Prices and the arithmetic: `bench/prices.py`. Figures and assumptions:
docs/operations.md "Cost per turn, measured". Figures only, no assertions; load goes to 127.0.0.1
only, bounded by the options and --max-seconds.
"""

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench import metering
from bench import prices as cost
from bench.cost_workload import Observer, Replay, SummaryReply, Tally, Workload
from local_stack import defaults
from local_stack.stack import LocalStack, StackOptions
from tests.e2e.e2e_support import stub_stack_environment
from tests.support.openai_stub import OpenAIStub


@dataclass(frozen=True)
class Measured:
    work: Workload
    seconds: float
    tally: Tally
    reading: metering.Reading
    functions: dict[str, tuple[int, int, int]]  # name -> invocations, billed ms, memory MB
    cold_starts: int
    log_bytes: int
    llm_prompt_chars: list[int]  # one per LLM call
    llm_answer_chars: int
    embedding_chars: int  # of every text the condenser had embedded
    stored: Counter[str]  # bytes the measured turns added, by kind
    kept: Counter[str]  # bytes (and items) stored at the end, by kind

    @property
    def turns(self) -> int:
        return self.work.users * self.work.turns


def prepare(stack: LocalStack, stub: OpenAIStub, args: argparse.Namespace) -> tuple[Observer, Replay]:
    """A first request on each environment, then the users' history: none of it is measured."""
    assert stack.settings is not None
    observer, max_words = Observer(stack), stack.settings.max_words
    stub.set_reply(SummaryReply(max_words))  # the memories are near the budget when measuring starts
    stub.delay_s = 0.0  # nothing to measure: no need to wait for the LLM
    Replay(
        stack.url, observer, Workload(args.clients, 1, 1, 1, 1, 0, 0), args.clients, args.max_seconds
    ).turns()
    work = Workload(args.users, args.turns, args.burst, args.facts, args.reads, args.history, args.think_ms)
    replay = Replay(stack.url, observer, work, args.clients, args.max_seconds)
    replay.history()
    return observer, replay


def counters(stack: LocalStack, log: Path) -> tuple[dict[str, tuple[int, int, int]], int, int]:
    """Per function (invocations, billed ms, memory MB), cold starts, and the log's size."""
    functions = {name: (f.invocations, f.billed_ms, f.spec.memory_mb) for name, f in stack.functions.items()}
    return functions, sum(f.cold_starts for f in stack.functions.values()), log.stat().st_size


def json_log_bytes(log: Path, start: int, end: int) -> int:
    """Bytes of the functions' JSON log lines between two offsets of the log."""
    with log.open("rb") as file:
        file.seek(start)
        return sum(len(line) + 1 for line in file.read(end - start).splitlines() if line.startswith(b"{"))


def measure(
    stack: LocalStack, stub: OpenAIStub, meter: metering.AwsRequestMeter, args: argparse.Namespace, log: Path
) -> Measured:
    observer, replay = prepare(stack, stub, args)
    assert stack.settings is not None
    stored_before, reply = observer.stored_bytes(replay.tenant), SummaryReply(stack.settings.max_words)
    stub.reset()
    stub.set_reply(reply)
    stub.delay_s = args.llm_latency_ms / 1000
    meter.reset()
    (before, cold_before, log_start), started = counters(stack, log), time.monotonic()
    tally = replay.turns()
    seconds, (after, cold_after, log_end) = time.monotonic() - started, counters(stack, log)
    stored = observer.stored_bytes(replay.tenant)
    return Measured(
        work=replay.work,
        seconds=seconds,
        tally=tally,
        reading=meter.reading(),
        functions={
            name: (n - before[name][0], ms - before[name][1], mb) for name, (n, ms, mb) in after.items()
        },
        cold_starts=cold_after - cold_before,
        log_bytes=json_log_bytes(log, log_start, log_end),
        llm_prompt_chars=[sum(len(str(m.get("content", ""))) for m in r.messages) for r in stub.requests],
        llm_answer_chars=reply.chars,
        embedding_chars=sum(len(text) for request in stub.embedding_requests for text in request.inputs),
        stored=stored - stored_before,
        kept=stored,
    )


def per_turn(measured: Measured) -> cost.PerTurn:
    n, reading, functions = measured.turns, measured.reading, measured.functions
    s3 = {op.removeprefix("s3:"): count for op, count in reading.requests.items() if op.startswith("s3:")}
    return cost.PerTurn(
        llm_calls=len(measured.llm_prompt_chars) / n,
        prompt_tokens=sum(measured.llm_prompt_chars) / 4 / n,
        completion_tokens=measured.llm_answer_chars / 4 / n,
        embedding_tokens=measured.embedding_chars / 4 / n,
        api_requests=measured.tally.api_requests / n,
        read_units=sum(reading.read_units.values()) / n,
        write_units=sum(reading.write_units.values()) / n,
        s3_put_class=sum(count for op, count in s3.items() if op in cost.S3_PUT_CLASS) / n,
        s3_get_class=sum(count for op, count in s3.items() if op not in cost.S3_PUT_CLASS | cost.S3_FREE) / n,
        sqs_requests=reading.sqs_billed / n,
        lambda_requests=sum(count for count, _, _ in functions.values()) / n,
        lambda_gb_seconds=sum(ms / 1000 * mb / 1024 for _, ms, mb in functions.values()) / n,
        log_bytes=measured.log_bytes / n,
        traces=(measured.tally.api_requests + functions["condenser"][0]) / n,
        events_published=reading.requests["events:request"] / n,  # one PutEvents a change
    )


def usage(measured: Measured, args: argparse.Namespace) -> cost.Usage:
    """`--active-users` users of `--turns-per-month` turns, once their oldest records went: jobs
    expire with `raw/`, `history/` later, and a user keeps its newest `max_episodes` episodes."""
    config, stored, n, month = defaults.load().config, measured.stored, measured.turns, args.turns_per_month
    raw, history = config.raw_retention_days, config.history_retention_days
    kept = measured.kept
    # At the steady state a user keeps `max_episodes` of them, the size of the ones stored now.
    episode = kept["episodes"] / max(1, kept["episodes (count)"])
    per_user = kept["user items"] / measured.work.users + episode * config.max_episodes
    dynamodb = cost.kept_bytes(per_user, [(stored["job items"] / n, raw)], month)
    s3 = cost.kept_bytes(0, [(stored["raw/"] / n, raw), (stored["history/"] / n, history)], month)
    return cost.Usage(args.active_users * month, args.active_users * dynamodb, args.active_users * s3)


def report(measured: Measured, args: argparse.Namespace) -> None:
    tally, turn, month = measured.tally, per_turn(measured), usage(measured, args)
    done = sum(status == "completed" for status in tally.statuses)
    print(
        f"{measured.work}; stub LLM answering in {args.llm_latency_ms} ms; --concurrency {args.concurrency}"
    )
    print(
        f"  measured: {measured.turns} turns in {measured.seconds:.0f} s; jobs {done} completed, "
        f"{len(tally.statuses) - done} not; {tally.failed_requests} failed API requests; "
        f"{measured.cold_starts} cold starts"
    )
    print_per_turn(measured, turn)
    per_user = month.dynamodb_bytes / args.active_users / 1e6, month.s3_bytes / args.active_users / 1e6
    print(f"kept per active user (steady state): DynamoDB {per_user[0]:.3f} MB, S3 {per_user[1]:.3f} MB")
    print(
        f"monthly cost per {args.active_users:,} active users, {args.turns_per_month} turns each "
        f"({month.turns:,.0f} turns), USD at the prices of bench/prices.py:"
    )
    costs = cost.infrastructure_costs(turn, month)
    for service, amount in [*costs.items(), ("infrastructure", sum(costs.values()))]:
        print(f"  {service:<38}{amount:>10.2f}")
    for name, price in (("openai", cost.PRICES.openai), ("bedrock", cost.PRICES.bedrock), ("offline", None)):
        llm = cost.llm_cost(turn, month.turns, price) if price else 0.0
        label = f"LLM {name} {price.model}" if price else "LLM offline (infrastructure only)"
        print(f"  {label:<38}{llm:>10.2f}  -> total {sum(costs.values()) + llm:.2f}")


def print_per_turn(measured: Measured, turn: cost.PerTurn) -> None:
    n, reading, functions = measured.turns, measured.reading, measured.functions

    def split(counter: Counter[str], prefix: str = "") -> str:
        return ", ".join(
            f"{k.removeprefix(prefix)} {v / n:.2f}" for k, v in counter.most_common() if k.startswith(prefix)
        )

    def each(index: int) -> str:
        return ", ".join(f"{name} {values[index] / n:.2f}" for name, values in functions.items())

    dynamodb_requests = sum(v for k, v in reading.requests.items() if k.startswith("dynamodb:"))
    sqs = split(reading.requests, "sqs:") + f"; {reading.sqs_empty_receives} empty receives left out"
    print("per ingested turn (observed):")
    for label, value, detail in (
        ("LLM calls", turn.llm_calls, ""),
        ("prompt tokens", turn.prompt_tokens, "characters / 4"),
        ("completion tokens", turn.completion_tokens, "characters / 4"),
        ("embedding tokens", turn.embedding_tokens, "characters / 4"),
        ("API Gateway requests", turn.api_requests, ""),
        ("DynamoDB requests", dynamodb_requests / n, split(reading.requests, "dynamodb:")),
        ("DynamoDB RRU", turn.read_units, split(reading.read_units)),
        ("DynamoDB WRU", turn.write_units, split(reading.write_units) + " (transactional: x2)"),
        ("S3 requests", turn.s3_put_class + turn.s3_get_class, split(reading.requests, "s3:")),
        ("SQS requests", turn.sqs_requests, sqs),
        ("Lambda invocations", turn.lambda_requests, each(0)),
        ("Lambda billed ms", sum(values[1] for values in functions.values()) / n, each(1)),
        (
            "Lambda GB-seconds",
            turn.lambda_gb_seconds,
            ", ".join(f"{f} {v[2]} MB" for f, v in functions.items()),
        ),
        ("log bytes", turn.log_bytes, "the functions' JSON lines, EMF metrics included"),
        ("X-Ray traces", turn.traces, "API requests + condenser invocations (upper bound)"),
        ("EventBridge events", turn.events_published, "PutEvents by the events function, one a change"),
    ):
        print(f"  {label:<22}{value:>10.2f}  {detail}".rstrip())


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr into `log`: the functions' workers inherit them and write
    their logs there (as Lambda's go to CloudWatch Logs), to be measured."""
    sys.stdout.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("ab") as file:
        for fd in (1, 2):
            os.dup2(file.fileno(), fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        for fd, original in zip((1, 2), saved, strict=True):
            os.dup2(original, fd)
            os.close(original)


def start_stack(stub: OpenAIStub, meter: metering.AwsRequestMeter, concurrency: int) -> LocalStack:
    # The functions' workers inherit this process's environment, as under `python -m local_stack`.
    environment = stub_stack_environment(stub.base_url, POWERTOOLS_METRICS_DISABLED="false")
    os.environ.clear()  # noqa: TID251 - the stack reads the user's configuration from here
    os.environ.update(environment)  # noqa: TID251
    metering.install(meter)
    # The dead-letter pass is a fixed cost per deployment (every 5 minutes in AWS): not run here.
    stack = LocalStack(StackOptions(port=0, concurrency=concurrency, dead_letter_pass_s=86_400.0))
    stack.start()
    return stack


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_cost", description=__doc__.split("\n")[0])
    for name, default, meaning in (
        ("users", 6, "users of the workload"),
        ("turns", 8, "turns per user"),
        ("burst", 1, "turns sent back to back before waiting for their jobs"),
        ("think-ms", 500, "pause after a burst's jobs are final, before the next burst"),
        ("facts", 5, "facts per user, in one request before its turns"),
        ("history", 100, "turns each user already has, not measured (the condenser reads up to 100 jobs)"),
        ("reads", 1, "memory reads before each turn (also the monthly assumption)"),
        ("clients", 4, "concurrent clients"),
        ("concurrency", 4, "execution environments per function"),
        ("llm-latency-ms", 1000, "the stub LLM's answer time"),
        ("turns-per-month", 300, "turns of an active user a month"),
        ("active-users", 1000, "active users priced"),
        ("max-seconds", 60, "bound of each phase: warm-up, history, measured turns"),
    ):
        parser.add_argument(f"--{name}", type=int, default=default, help=f"{meaning} (default {default})")
    args = parser.parse_args(argv)
    if min(args.users, args.turns, args.burst, args.clients, args.concurrency, args.max_seconds) < 1:
        parser.error(
            "--users, --turns, --burst, --clients, --concurrency and --max-seconds must be at least 1"
        )
    return args


def main(argv: list[str] | None = None) -> None:
    args, meter = parse(argv), metering.AwsRequestMeter()
    with OpenAIStub(delay_s=args.llm_latency_ms / 1000) as stub, tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "stack.log"
        print("replaying the workload on a local stack (this process; the functions' logs are measured) ...")
        with output_to(log):
            stack = start_stack(stub, meter, args.concurrency)
            try:
                measured = measure(stack, stub, meter, args, log)
            finally:
                stack.stop()
        report(measured, args)


if __name__ == "__main__":
    main()
