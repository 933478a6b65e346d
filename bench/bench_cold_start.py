"""Cold start, honestly measured: import + the first request answered, in fresh processes.

A moto server on 127.0.0.1 holds the deployed resources and one user's memory. Each case is a
fresh `python -c ...` process that times itself from its first statement to its answer, in
wall-clock and in CPU time (steadier on a shared machine), each the best of RUNS (the least
disturbed run of a 2-core machine), the cases taking turns. Each process has the environment
the CDK app gives the function (infra/specs.py, through the local stack's defaults). The
processes run what Lambda runs: the project's modules (core layer, functions) from a copy
compiled to bytecode beforehand, as the deployed layers ship them (hash-based, never re-checked),
and third-party packages from their installed bytecode (checked: a module compiled at import
would be reported). Without that, this environment's PYTHONDONTWRITEBYTECODE makes every fresh
process compile the project again, a cost no deployed cold start pays; that development figure
is printed too, for get_memory.
- baseline: `import boto3`, one DynamoDB client, one `GetItem` of that memory item — what any
  Lambda that reads DynamoDB pays at a cold start;
- get_memory: import its handler module (Lambda's init phase), answer one GET of the memory;
- ingest: import its handler module, answer one POST of one turn (202, a new user each run).

Then what each piece of get_memory's cold start costs, in the order it is paid (best of RUNS per
piece, so the pieces add up to less than the whole): the libraries it stands on, the service's
own modules, building the handler, the first memory read (answered by the fast lane, without
pydantic or the resolver), and what the first request of another route pays after it.

Targets (README "Performance"): get_memory <= 1.3x, ingest <= 2x the baseline.
Figures only, no assertions: `make bench` runs it.
"""

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from moto.server import ThreadedMotoServer

from bench.moto_server import free_port, function_environment
from hippocampus.adapters.dynamodb_table import MEMORY_SK, user_pk
from hippocampus.contracts.names import TABLE_PARTITION_KEY, TABLE_SORT_KEY
from local_stack.defaults import load as load_defaults

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
CORE_SOURCES = ROOT / "layers" / "core" / "src"
RUNS = 9
TENANT, USER = "acme", "alice"  # the user of events/api_get_memory.json and api_put_memory.json

# A Lambda context with what Powertools reads, defined in the child so it imports nothing more.
_CONTEXT = (
    "class C:\n"
    "    function_name = 'bench'; memory_limit_in_mb = 1024; aws_request_id = 'r'\n"
    "    invoked_function_arn = 'arn:aws:lambda:us-east-1:123456789012:function:bench'\n"
    "    def get_remaining_time_in_millis(self): return 10_000\n"
)


def _timed(body: str) -> str:
    """`body` in a child that prints the milliseconds from its first statement to its end: wall
    clock, then CPU time (the process's own, which other jobs on the machine disturb less)."""
    return (
        "import time; _t = time.perf_counter(); _c = time.process_time()\n"
        f"{body}\n"
        "print((time.perf_counter() - _t) * 1000, (time.process_time() - _c) * 1000)\n"
    )


def baseline(table: str) -> str:
    item_key = {TABLE_PARTITION_KEY: {"S": user_pk(TENANT, USER)}, TABLE_SORT_KEY: {"S": MEMORY_SK}}
    return _timed(
        "import boto3\n"
        "client = boto3.session.Session().client('dynamodb')\n"
        f"assert 'Item' in client.get_item(TableName={table!r}, Key={item_key!r})"
    )


def deployed_layout(scratch: Path) -> Path:
    """The project's modules as a deployment ships them, under `scratch`: the core layer's package
    in `python/` (where a layer's modules are found) and the functions' code in `functions/`, each
    compiled as the asset build compiles them (hash-based .pyc that are never checked against the
    source). Returns the folder that holds `python/` and `functions/`."""
    shutil.copytree(CORE_SOURCES / "hippocampus", scratch / "python" / "hippocampus")
    shutil.copytree(ROOT / "functions", scratch / "functions")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            str(scratch),
        ],
        check=True,
    )
    return scratch


# Run in a child after its handler is imported: the modules it loaded without bytecode to read
# (compiled from source at import, which no deployed cold start does).
_UNCOMPILED = (
    "import importlib.util as iu, os, sys\n"
    "print(json.dumps(sorted(n for n, m in list(sys.modules.items())\n"
    "    if (getattr(m, '__file__', None) or '').endswith('.py')\n"
    "    and not os.path.exists(iu.cache_from_source(m.__file__)))))"
)


def handler_request(
    function: str, event_file: Path, status: int, code_root: Path = ROOT, check: str = ""
) -> str:
    """Import `function`'s handler (under `code_root`) and answer the event in `event_file` with `status`."""
    path = code_root / "functions" / function / "handler.py"
    return _timed(
        "import importlib.util as u, json\n"
        f"s = u.spec_from_file_location('handler', {str(path)!r}); m = u.module_from_spec(s)\n"
        "s.loader.exec_module(m)\n"
        f"{_CONTEXT}"
        f"event = json.loads(open({str(event_file)!r}).read())\n"
        "answer = m.lambda_handler(event, C())\n"
        f"assert answer['statusCode'] == {status}, answer\n{check}"
    )


# get_memory's cold start, piece by piece: (label, statement) run in order in one child. The memory
# read is the fast lane's (docs/architecture.md "The memory read's fast lane"); the last piece is
# what the first request of another route pays in the same process: the resolver and its models.
PIECES = (
    ("import boto3", "import boto3"),
    ("Powertools Logger, Metrics", "import aws_lambda_powertools"),
    ("the service's modules (hippocampus.wiring)", "import hippocampus.wiring"),
    ("building the handler", "handler = hippocampus.wiring.get_memory_handler()"),
    ("first GET memory: DynamoDB client + Query + answer", "handler(event, C())"),
    ("then a first GET history: the resolver built + S3", "handler(history, C())"),
)


def pieces_code() -> str:
    lines = [
        "import json, time",
        _CONTEXT,
        f"event = json.loads(open({str(EVENTS / 'api_get_memory.json')!r}).read())",
        f"history = json.loads(open({str(EVENTS / 'api_get_history.json')!r}).read())",
        "costs = []",
    ]
    for _, statement in PIECES:
        lines += ["_t = time.perf_counter()", statement, "costs.append((time.perf_counter() - _t) * 1000)"]
    return "\n".join([*lines, "print(json.dumps(costs))"])


def print_pieces(environment: dict[str, str], base_ms: float) -> None:
    runs = []
    for _ in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-c", pieces_code()], env=environment, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("get_memory's cold start, piece by piece (best of each):")
    for index, (label, _) in enumerate(PIECES):
        ms = min(run[index] for run in runs)
        print(f"  {label:56s} {ms:7.1f} ms   {ms / base_ms:5.2f}x of the baseline")


def one_turn_event(user: str) -> dict[str, Any]:
    """events/api_post_memory.json for `user`, one turn, without its Idempotency-Key (no replay)."""
    event: dict[str, Any] = json.loads((EVENTS / "api_post_memory.json").read_text())
    for headers in (event["headers"], event["multiValueHeaders"]):
        headers.pop("Idempotency-Key")
    event["path"] = event["path"].replace(f"/users/{USER}/", f"/users/{user}/")
    event["pathParameters"]["user_id"] = user
    event["body"] = json.dumps({"items": [{"text": "User: I sell candles.\nAssistant: Nice!"}]})
    return event


def run_ms(code: str, environment: dict[str, str]) -> tuple[float, float]:
    """The wall-clock and CPU milliseconds a `_timed` child reports."""
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


Case = tuple[list[str], dict[str, str]]  # the code of each run, and its environment


def best_of_interleaved(cases: dict[str, Case]) -> dict[str, tuple[float, float]]:
    """The best run of each case (wall clock and CPU time, each its own best), the cases taking
    turns (one run of each, RUNS rounds): a burst of load on a shared machine slows every case a
    little, not one case all the way."""
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
    for index in range(RUNS):
        for label, (codes, environment) in cases.items():
            runs[label].append(run_ms(codes[index], environment))
    return {
        label: (min(wall for wall, _ in times), min(cpu for _, cpu in times)) for label, times in runs.items()
    }


def check_bytecode(code_root: Path, environment: dict[str, str]) -> None:
    """Fail when get_memory's cold start would compile a module: the figures would not be Lambda's."""
    code = handler_request("get_memory", EVENTS / "api_get_memory.json", 200, code_root, _UNCOMPILED)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    uncompiled = [name for name in json.loads(done.stdout.strip().splitlines()[-2]) if name != "__main__"]
    if uncompiled:
        raise RuntimeError(f"modules without bytecode (compile them first): {', '.join(uncompiled)}")


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines between the figures
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            # The variables the CDK app gives the functions (log level, Powertools' names...), and
            # the resources on moto.
            sources = {
                **load_defaults().function_environment,
                **function_environment(f"http://127.0.0.1:{port}", ROOT),
                "PYTHONPATH": f"{CORE_SOURCES}{os.pathsep}{ROOT}",
            }
            deployed = deployed_layout(Path(scratch) / "deployed")
            # The compiled copy is found first: ahead of the editable install of the core layer.
            environment = {**sources, "PYTHONPATH": str(deployed / "python")}
            check_bytecode(deployed, environment)
            run_ms(handler_request("ingest", EVENTS / "api_put_memory.json", 200, deployed), environment)
            posts = []
            for run in range(RUNS):
                event_file = Path(scratch) / f"post-{run}.json"
                event_file.write_text(json.dumps(one_turn_event(f"cold-{uuid.uuid4().hex[:8]}")))
                posts.append(handler_request("ingest", event_file, 202, deployed))
            base_label = "baseline: import boto3 + client + one GetItem"
            cases: dict[str, Case] = {
                base_label: ([baseline(environment["MEMORY_TABLE_NAME"])] * RUNS, environment),
                "get_memory: import + first GET memory (target <= 1.3x)": (
                    [handler_request("get_memory", EVENTS / "api_get_memory.json", 200, deployed)] * RUNS,
                    environment,
                ),
                "ingest: import + first POST of one turn (target <= 2x)": (posts, environment),
                "recall: import + first POST query (target <= 2x)": (
                    [handler_request("recall", EVENTS / "api_post_query.json", 200, deployed)] * RUNS,
                    environment,
                ),
                "get_memory from sources (compiled at every start, dev)": (
                    [handler_request("get_memory", EVENTS / "api_get_memory.json", 200)] * RUNS,
                    sources,
                ),
            }
            print(
                f"cold start, best of {RUNS} fresh processes (python {sys.version.split()[0]}), moto on 127.0.0.1,"
                " the project compiled to bytecode as deployed"
            )
            best = best_of_interleaved(cases)
            base_wall, base_cpu = best[base_label]
            print(f"{'':58s} {'wall clock':>17s}   {'CPU time':>17s}")
            for label, (wall, cpu) in best.items():
                print(
                    f"{label:58s} {wall:7.1f} ms {wall / base_wall:5.2f}x   {cpu:7.1f} ms {cpu / base_cpu:5.2f}x"
                )
            print_pieces(environment, base_wall)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
