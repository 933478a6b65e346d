"""`python -m local_stack` (what `make dev` runs): the service on 127.0.0.1 until Ctrl-C."""

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from pydantic import TypeAdapter, ValidationError

from hippocampus.contracts.access import PRINCIPAL_HEADER
from local_stack.apigateway import PRINCIPAL_FORMS
from local_stack.paths import DEFAULT_DATA_DIR, IN_MEMORY
from local_stack.runtime import THROTTLE_WAIT_S, FunctionError
from local_stack.stack import LocalStack, StackOptions

DEFAULT_PORT = 3000
READY_LINE = "Hippocampus local stack ready on {url}"
AUTH_LINE = (
    "Auth: none locally: no signature is checked and any tenant id is accepted (the examples use acme); "
    "the deployed API requires SigV4"
)
PRINCIPALS_AUTH_LINE = (
    f"Auth: principals required (MEMORY_LOCAL_REQUIRE_PRINCIPAL): every request but /v1/health and "
    f"/v1/openapi.json needs {PRINCIPAL_HEADER}: {PRINCIPAL_FORMS}, and may call only that principal's "
    "routes (infra's grant_tenant_access, grant_agent_access); no signature is checked; the deployed API "
    "requires SigV4"
)


def _default_port() -> int:
    raw = os.getenv("MEMORY_LOCAL_PORT", "")
    if not raw.strip():
        return DEFAULT_PORT
    try:
        port = int(raw)
    except ValueError:
        sys.exit(f"MEMORY_LOCAL_PORT must be a port number, got {raw!r}")
    if not 0 <= port <= 65535:
        sys.exit(f"MEMORY_LOCAL_PORT must be between 0 and 65535, got {port}")
    return port


def _default_throttle_wait() -> float:
    raw = os.getenv("MEMORY_LOCAL_THROTTLE_WAIT_S", "")
    if not raw.strip():
        return THROTTLE_WAIT_S
    try:
        return float(raw)
    except ValueError:
        sys.exit(f"MEMORY_LOCAL_THROTTLE_WAIT_S must be a number of seconds, got {raw!r}")


def _require_principal() -> bool:
    """$MEMORY_LOCAL_REQUIRE_PRINCIPAL: a boolean as the service's MEMORY_* booleans are read
    (`true`, `false`, `1`, `0`, …); unset or blank: false."""
    raw = os.getenv("MEMORY_LOCAL_REQUIRE_PRINCIPAL", "")
    if not raw.strip():
        return False
    try:
        return TypeAdapter(bool).validate_python(raw.strip())
    except ValidationError:
        sys.exit(f"MEMORY_LOCAL_REQUIRE_PRINCIPAL must be true or false, got {raw!r}")


def _data_dir(args: argparse.Namespace) -> Path | None:
    """--in-memory, else --data-dir, else $MEMORY_LOCAL_DATA_DIR, else .local-stack/ (None: in memory)."""
    if args.in_memory:
        return None
    raw = args.data_dir if args.data_dir is not None else os.getenv("MEMORY_LOCAL_DATA_DIR", "")
    if not raw.strip():
        return DEFAULT_DATA_DIR
    return None if raw.strip() == IN_MEMORY else Path(raw).expanduser().resolve()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local_stack",
        description="Run Hippocampus on this machine: moto as AWS, the real handlers behind an API Gateway "
        "emulation, and the SQS event source of the condenser.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"API port on 127.0.0.1 (default: $MEMORY_LOCAL_PORT or {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument("--aws-port", type=int, default=0, help="moto's port (default: a free one)")
    parser.add_argument(
        "--stage", default="local", help="API Gateway stage name in the events (default: local)"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="concurrent executions per function, as Lambda instances (default: 4)",
    )
    parser.add_argument(
        "--throttle-wait",
        type=float,
        default=None,
        help="seconds a request waits for a free execution environment before a 429 "
        f"(default: $MEMORY_LOCAL_THROTTLE_WAIT_S or {THROTTLE_WAIT_S:g})",
    )
    state = parser.add_mutually_exclusive_group()
    state.add_argument(
        "--data-dir",
        default=None,
        help="directory that keeps the state across restarts (default: $MEMORY_LOCAL_DATA_DIR or "
        f"{DEFAULT_DATA_DIR.name}/ in the repository; {IN_MEMORY} keeps it in memory)",
    )
    state.add_argument(
        "--in-memory", action="store_true", help="keep the state in memory only: gone when the stack stops"
    )
    parser.add_argument("--quiet", action="store_true", help="no access log")
    args = parser.parse_args(argv)
    args.data_dir = _data_dir(args)
    if args.port is None:
        args.port = _default_port()
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.throttle_wait is None:
        args.throttle_wait = _default_throttle_wait()
    if args.throttle_wait < 0:
        parser.error("--throttle-wait must not be negative")
    args.require_principal = _require_principal()
    return args


def _configure_logging(quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    stack_log = logging.getLogger("local_stack")
    stack_log.addHandler(handler)
    stack_log.setLevel(logging.INFO)
    stack_log.propagate = False
    if quiet:
        logging.getLogger("local_stack.access").setLevel(logging.WARNING)


def _provider_line(stack: LocalStack) -> str:
    settings = stack.settings
    assert settings is not None
    provider = settings.provider
    if provider == "offline":
        return (
            "LLM provider: offline, a rule-based stand-in for a real model (deterministic, no network: it "
            "keeps the plain statements it recognises as records and builds the summary from them; set "
            "OPENAI_API_KEY, optionally OPENAI_BASE_URL, or MEMORY_LLM_PROVIDER to use a real model)"
        )
    if provider == "openai":
        where = settings.openai_base_url or "api.openai.com"
        return f"LLM provider: openai, model {settings.llm_model} at {where}"
    return f"LLM provider: bedrock, model {settings.llm_model} (your AWS credentials, region {stack.resources and stack.resources.region})"


def _embedding_line(stack: LocalStack) -> str:
    settings = stack.settings
    assert settings is not None
    if settings.embedder == "none":
        return "Embeddings: none (recall ranks by words only)"
    line = f"Embeddings: {settings.embedder}, model {settings.embedding_model}, {settings.embedding_dimensions} dimensions"
    about = {
        "offline": "WordLlama's static model, from its installed wheel: meaning without a network",
        "hashed": "feature hashing: word variants, not meanings",
    }
    return f"{line} ({about[settings.embedder]})" if settings.embedder in about else line


def _state_line(stack: LocalStack) -> str:
    directory = stack.options.data_dir
    if directory is None or stack.restored is None:
        return "State: in memory, gone when the stack stops (--data-dir or MEMORY_LOCAL_DATA_DIR keep it)"
    return f"State: {directory} ({stack.restored.summary()}; --in-memory or MEMORY_LOCAL_DATA_DIR={IN_MEMORY} to not keep it)"


def _invoke_lines(stack: LocalStack, url: str) -> tuple[str, str]:
    """The Invoke API's banner line and its `aws lambda invoke` example (docs/api.md "Direct invocation")."""
    assert stack.invoke_api is not None
    names = stack.invoke_api.function_names
    region = stack.resources.region if stack.resources else "us-east-1"
    example = (
        f"  aws lambda invoke --endpoint-url {url} --no-sign-request --region {region} "
        f"--function-name {names[0]} --cli-binary-format raw-in-base64-out \\\n"
        """    --payload '{"action": "get_memory", "tenant_id": "acme", "user_id": "alice"}' /dev/stdout"""
    )
    return f"Lambda Invoke API: {url} (functions {', '.join(names)})", example


def _events_line(stack: LocalStack, url: str) -> str:
    """Where the change events go, and the command that prints them (docs/operations.md "Local stack")."""
    assert stack.resources is not None
    # The CLI's --local is this port's default: on another port, it is told the endpoint.
    where = "" if url == f"http://127.0.0.1:{DEFAULT_PORT}" else f" --endpoint {url}"
    return (
        f"Events: every change on SQS {stack.resources.events_queue_name} "
        f"(hippocampus{where} events --follow)"
    )


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    _configure_logging(args.quiet)
    stop = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(130)  # a second Ctrl-C: stop now
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)

    stack = LocalStack(
        StackOptions(
            port=args.port,
            stage=args.stage,
            concurrency=args.concurrency,
            aws_port=args.aws_port,
            throttle_wait_s=args.throttle_wait,
            data_dir=args.data_dir,
            require_principal=args.require_principal,
        )
    )
    try:
        stack.start()
    except OSError as exc:
        print(
            f"local stack: cannot start: {exc} (is port {args.port} in use? try --port or MEMORY_LOCAL_PORT)",
            file=sys.stderr,
        )
        return 1
    except FunctionError as exc:
        print(f"local stack: a function failed to load: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a configuration error names the variable; no traceback needed
        print(f"local stack: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1

    url = stack.url
    print(READY_LINE.format(url=url), flush=True)
    print(PRINCIPALS_AUTH_LINE if args.require_principal else AUTH_LINE, flush=True)
    print(
        f"AWS endpoint: {stack.aws_endpoint} (moto; any credentials, region {stack.resources and stack.resources.region})",
        flush=True,
    )
    print(_provider_line(stack), flush=True)
    print(_embedding_line(stack), flush=True)
    print(_state_line(stack), flush=True)
    invoke_line, invoke_example = _invoke_lines(stack, url)
    print(invoke_line, flush=True)
    print(_events_line(stack, url), flush=True)
    browser = "the users, summaries, records and a query playground"
    if args.require_principal:
        browser += f"; it sends no {PRINCIPAL_HEADER}, so its calls are refused while principals are required"
    print(f"Memory browser: {url}/ui/?tenant=acme ({browser})", flush=True)
    print("Try it:", flush=True)
    # With principals required, the examples name the tenant they call.
    as_acme = f" -H '{PRINCIPAL_HEADER}: tenant/acme'" if args.require_principal else ""
    print(
        f"  curl -s -X POST {url}/v1/tenants/acme/users/alice/memory{as_acme} -H 'Content-Type: application/json' \\\n"
        """    -d '{"items": [{"text": "My name is Alice and I sell handmade candles on Shopify."}]}'""",
        flush=True,
    )
    print(f"  curl -s {url}/v1/tenants/acme/users/alice/memory{as_acme}", flush=True)
    print(
        f"  curl -s -X POST {url}/v1/tenants/acme/users/alice/memory/query{as_acme} -H 'Content-Type: application/json' \\\n"
        """    -d '{"query": "What does Alice sell?"}'""",
        flush=True,
    )
    print(invoke_example, flush=True)
    print("Press Ctrl-C to stop.", flush=True)

    while not stop.wait(0.5):
        pass
    print("Stopping...", flush=True)
    stack.stop()
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
