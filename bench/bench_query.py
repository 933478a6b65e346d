"""Query latency: the recall function for a user with 200 facts and 2,000 episodes, against a
plain memory read of the same user in the same run.

One process, one moto server (its own process on 127.0.0.1). The user's facts are ingested
through the ingest handler; the episodes are written as the condenser writes them, and every
document gets its vector from the offline embedder (the default without a key). Interleaved:
- baseline: the get_memory handler answering `GET …/memory` (summary and facts);
- query: the recall handler answering `POST …/memory/query` (top 10, both types), in a function
  that has ranked this user before (it reads the memory, the facts and the episodes since);
- context: the same for `POST …/memory/context` (300 words, with a query);
- query after a new turn: a conversation's pattern, an episode condensed and indexed (not timed)
  before each query;
- first query in a function: the function's copy of the user's episodes dropped before each
  query, as after a cold start or when the user's query lands on a function that has not ranked
  them (adapters/episode_cache.py): it starts from the copy the condenser stored in S3
  (adapters/episode_snapshots.py) and reads only what is newer;
- the same without a stored copy (none kept yet, or one a forget or a re-index made stale): the
  whole partition is read (2,200 items).

Prints p50 and p95 of each and their ratio to the baseline (target <= 3x, README "Performance"),
then the client CPU of reading the whole partition through botocore's parser and with the items
taken from the JSON (adapters/dynamodb_wire.py), the second as a ratio to the first.
Figures only, no assertions: `make bench` runs it.
"""

import gc
import os
import statistics
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.moto_server import function_environment, moto_process, percentile, quiet_stdout

ROOT = Path(__file__).resolve().parent.parent
TENANT, USER = "acme", "long-time-user"
FACTS, EPISODES = 200, 2_000
ROUNDS, WARMUP = 40, 5
BASELINE = "baseline: GET …/memory (200 facts)"
QUESTIONS = ("which payment provider do we use?", "where do the candles ship?", "what did we plan for Lyon?")


def seed(call: Callable[..., Any]) -> None:
    """The memory and 200 facts through the API; 2,000 episodes as the condenser writes them."""
    from hippocampus import wiring
    from hippocampus.contracts.models import Episode
    from hippocampus.domain.recall.indexing import ALL_EPISODES
    from tests.support.lambda_harness import api_event

    base = f"/v1/tenants/{TENANT}/users/{USER}/memory"
    assert (
        call("ingest", api_event("PUT", base, {"memory": "Runs a candle shop.", "expected_version": 0}))[
            "statusCode"
        ]
        == 200
    )
    for start in range(0, FACTS, 100):
        items = [
            {
                "id": f"fact_{n}",
                "text": f"Fact {n}: supplier {n % 17} ships wax and wicks weekly.",
                "infer": False,
            }
            for n in range(start, start + 100)
        ]
        assert call("ingest", api_event("POST", base, {"items": items}))["statusCode"] == 202
    accepted = datetime(2026, 1, 1, tzinfo=UTC)
    episodes = [
        Episode(
            id=f"turn_{n}",
            job_id=f"job-{n:06d}",
            text=f"User: Turn {n}, about order {n % 97} and the store in city {n % 13}.\nAssistant: Noted, turn {n}.",
            created_at=accepted + timedelta(minutes=n),
        )
        for n in range(EPISODES)
    ]
    write_episodes(episodes)
    wiring.indexer().index_user(TENANT, USER, ALL_EPISODES)


def new_turn(n: int) -> None:
    """One more episode, written and indexed as the condenser does after a turn."""
    from hippocampus import wiring
    from hippocampus.contracts.models import Episode

    episode = Episode(
        id=f"new_turn_{n}",
        job_id=f"job-new-{n:06d}",
        text=f"User: New turn {n} about the Lyon store.\nAssistant: Noted.",
        created_at=datetime.now(UTC),
    )
    write_episodes([episode])
    wiring.indexer().index_user(TENANT, USER)


def write_episodes(episodes: list[Any]) -> None:
    """The items the condenser writes (the episodes, counted on the memory), 99 per transaction:
    a transaction holds 100 items."""
    from hippocampus import wiring
    from hippocampus.adapters import aws_clients
    from hippocampus.adapters.dynamodb_table import Table

    table = Table(os.environ["MEMORY_TABLE_NAME"], lambda: aws_clients.client("dynamodb"))  # noqa: TID251
    for start in range(0, len(episodes), 99):
        table.transact(wiring.episode_store().counted_puts(TENANT, USER, 0, episodes[start : start + 99]))


def forget_the_user() -> None:
    """As in a function that has not ranked this user yet (its imports and clients warm)."""
    from hippocampus import wiring

    wiring.recall_service.cache_clear()
    wiring.recall_store.cache_clear()


def drop_the_stored_copy() -> None:
    """As for a user whose episodes have no stored copy: the first query reads them whole."""
    from hippocampus.adapters import aws_clients
    from hippocampus.adapters.episode_snapshots import snapshot_key

    forget_the_user()
    aws_clients.client("s3").delete_object(
        Bucket=os.environ["MEMORY_BUCKET_NAME"],  # noqa: TID251
        Key=snapshot_key(TENANT, USER),
    )


def measure() -> dict[str, list[float]]:
    from local_stack.lambda_context import LambdaContext
    from tests.support.lambda_harness import api_event, load_handler

    handlers = {name: load_handler(name) for name in ("get_memory", "ingest", "recall")}

    def call(function: str, event: dict[str, Any]) -> Any:
        return handlers[function].lambda_handler(event, LambdaContext())

    with quiet_stdout():
        seed(call)
    base = f"/v1/tenants/{TENANT}/users/{USER}/memory"

    def query(n: int) -> Any:
        return call("recall", api_event("POST", base + "/query", {"query": QUESTIONS[n % 3]}))

    cases: dict[str, tuple[Callable[[int], Any], Callable[[int], None] | None]] = {
        BASELINE: (lambda _: call("get_memory", api_event("GET", base)), None),
        "POST …/memory/query (top 10)": (query, None),
        "POST …/memory/context (300 words)": (
            lambda n: call(
                "recall", api_event("POST", base + "/context", {"query": QUESTIONS[n % 3], "max_words": 300})
            ),
            None,
        ),
        "query after a new turn": (query, new_turn),
        "first query in a function": (query, lambda _: forget_the_user()),
        "first query, no stored copy": (query, lambda _: drop_the_stored_copy()),
    }
    timings: dict[str, list[float]] = {label: [] for label in cases}
    warnings.simplefilter("ignore")
    with quiet_stdout():
        for round_ in range(WARMUP + ROUNDS):
            for label, (run, before) in cases.items():
                if before is not None:
                    before(round_)
                # The functions share this process here, not on Lambda: what the untimed steps left
                # (a condensation, the copy it stores) is collected before the clock starts, so the
                # timed call pays for its own garbage only.
                gc.collect()
                started = time.perf_counter()
                answer = run(round_)
                if answer["statusCode"] != 200:
                    raise RuntimeError(f"{label}: {answer}")
                if round_ >= WARMUP:
                    timings[label].append((time.perf_counter() - started) * 1000)
    return timings


def partition_read_cpu(rounds: int = 7) -> dict[str, float]:
    """Client CPU (p50, ms) of reading the user's whole partition, the first query's read: through
    botocore's parser, and with the pages' items taken from the JSON (adapters/dynamodb_wire.py)."""
    import boto3

    from hippocampus.adapters import aws_clients
    from hippocampus.adapters.dynamodb_table import Table, user_pk

    cpu: dict[str, float] = {}
    for label, client in (
        ("botocore's parser", boto3.client("dynamodb")),
        ("items from the JSON", aws_clients.client("dynamodb")),
    ):
        table = Table(os.environ["MEMORY_TABLE_NAME"], lambda client=client: client)  # noqa: TID251
        times = []
        for _ in range(rounds + 1):
            started = time.process_time()
            read = len(list(table.query_partition(user_pk(TENANT, USER))))
            times.append((time.process_time() - started) * 1000)
        cpu[f"{label} ({read} items)"] = statistics.median(times[1:])
    return cpu


def main() -> None:
    with moto_process() as endpoint:
        # This process is the functions' execution environment: Lambda's variables, metrics on.
        os.environ.update(function_environment(endpoint, ROOT), POWERTOOLS_METRICS_DISABLED="false")  # noqa: TID251
        timings = measure()
        read_cpu = partition_read_cpu()
    base = timings[BASELINE]
    base_p50, base_p95 = statistics.median(base), percentile(base, 0.95)
    print(f"query latency, {ROUNDS} rounds interleaved, one user with {FACTS} facts and {EPISODES} episodes")
    print("(256-dimension offline vectors), moto on 127.0.0.1; target <= 3x a memory read")
    print(f"{'':40s} {'p50':>9s} {'p95':>9s}   ratio p50 / p95")
    for label, values in timings.items():
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        print(f"{label:40s} {p50:7.1f}ms {p95:7.1f}ms   {p50 / base_p50:5.2f}x / {p95 / base_p95:5.2f}x")
    baseline_cpu = next(iter(read_cpu.values()))
    print("reading the whole partition (a first query's read), client CPU p50:")
    for label, value in read_cpu.items():
        print(f"  {label:38s} {value:7.1f}ms   {value / baseline_cpu:5.2f}x")


if __name__ == "__main__":
    main()
