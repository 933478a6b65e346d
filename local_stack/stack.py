"""Start and stop the whole local stack: moto, the functions, API Gateway, the event sources."""

import json
import logging
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocampus.settings import Settings, load_settings
from local_stack import defaults
from local_stack.apigateway import ApiGateway
from local_stack.aws import Resources, aws_client, provision, seed_secret
from local_stack.durable import Restored
from local_stack.environment import aws_region, runtime_environment
from local_stack.event_source import SqsEventSource
from local_stack.foreground import Foreground
from local_stack.http_server import ApiServer
from local_stack.lambda_invoke import LambdaInvokeApi, deployed_function_name
from local_stack.moto_endpoint import MotoEndpoint
from local_stack.paths import FUNCTIONS_DIR, LOOPBACK
from local_stack.runtime import THROTTLE_WAIT_S, LocalFunction, LocalFunctionSpec
from local_stack.schedule import DEAD_LETTER_PASS_LOCAL_S, Schedule
from local_stack.sqs_proxy import SqsProxy
from local_stack.stream_source import STOP_DRAIN_S, StreamEventSource, event_item

log = logging.getLogger("local_stack")

FUNCTIONS = ("get_memory", "ingest", "recall", "condenser", "events")
QUEUE_CONSUMER = "condenser"
STREAM_CONSUMER = "events"  # the table's stream to the bus


@dataclass
class StackOptions:
    port: int = 3000
    aws_port: int = 0
    stage: str = "local"
    concurrency: int = 4
    throttle_wait_s: float = THROTTLE_WAIT_S
    dead_letter_pass_s: float = DEAD_LETTER_PASS_LOCAL_S
    functions_dir: Path = FUNCTIONS_DIR
    # Where the state is kept across restarts; None: in memory only (docs/operations.md "Local stack").
    data_dir: Path | None = None
    # Every request but health and the OpenAPI document must name a principal (MEMORY_LOCAL_REQUIRE_PRINCIPAL,
    # docs/operations.md "Principals").
    require_principal: bool = False
    # The user's environment; None: this process's environment.
    environment: Mapping[str, str] | None = None
    extra_environment: dict[str, str] = field(default_factory=dict)


class LocalStack:
    """The service on one machine. `start()` returns once `GET /v1/health` can be served."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.moto = MotoEndpoint(options.aws_port, options.data_dir)
        self.functions: dict[str, LocalFunction] = {}
        self.resources: Resources | None = None
        self.restored: Restored | None = None
        self.settings: Settings | None = None
        self._api: ApiServer | None = None
        self.invoke_api: LambdaInvokeApi | None = None
        self._event_source: SqsEventSource | None = None
        self._stream_source: StreamEventSource | None = None
        self._schedule: Schedule | None = None
        # What API Gateway and the Invoke API are serving, which the condenser's batches let go first.
        self.foreground = Foreground()

    @property
    def url(self) -> str:
        assert self._api is not None, "start() first"
        return f"http://{LOOPBACK}:{self._api.port}"

    @property
    def aws_endpoint(self) -> str:
        return self.moto.url

    def start(self) -> None:
        user_env = dict(self.options.environment if self.options.environment is not None else os.environ)  # noqa: TID251 - the entry point reads the user's environment
        user_env.update(self.options.extra_environment)
        deployment = defaults.load()
        region = aws_region(user_env)
        # Bind the API port first: a port in use fails at once, before anything else starts. The same
        # port serves Lambda's Invoke API over `self.functions`, filled before it serves anything.
        self.invoke_api = LambdaInvokeApi(self.functions, region)
        gateway = ApiGateway(
            self._invoke_http, self.options.stage, require_principal=self.options.require_principal
        )
        # SQS's API too, forwarded to moto: the CLI follows the events queue on this port.
        sqs = SqsProxy(lambda: self.moto.url, region)
        self._api = ApiServer(gateway, LOOPBACK, self.options.port, self.invoke_api, sqs)
        try:
            self._start(user_env, deployment, region)
        except BaseException:
            self.stop()
            raise

    def _start(self, user_env: dict[str, str], deployment: defaults.Deployment, region: str) -> None:
        started = time.monotonic()
        log.info("starting moto and provisioning the resources of cdk.json")
        endpoint = self.moto.start()
        # moto starts empty: the resources are provisioned from cdk.json as on a first start, then
        # the data directory's items, objects and messages are put back, before anything is served.
        self.resources = provision(endpoint, region, deployment.config)
        self.restored = self.moto.restore()
        runtime = runtime_environment(user_env, self.resources, endpoint, deployment.function_environment)
        # The functions read their configuration from the process environment, as in Lambda.
        for name in runtime.unset:
            os.environ.pop(name, None)  # noqa: TID251 - the local "Lambda runtime" sets the functions' environment
        os.environ.update(runtime.set)  # noqa: TID251
        self.settings = load_settings()  # fails fast, naming a bad variable, before anything is served

        secret_name = user_env.get("MEMORY_LLM_API_KEY_SECRET")
        api_key = user_env.get("OPENAI_API_KEY")
        if secret_name and api_key:
            seed_secret(endpoint, region, secret_name, api_key)
        elif secret_name:
            log.warning(
                "MEMORY_LLM_API_KEY_SECRET=%s is not in the local Secrets Manager: set OPENAI_API_KEY too, "
                "and the local stack stores it there",
                secret_name,
            )

        for name in FUNCTIONS:
            function = deployment.functions[name]
            spec = LocalFunctionSpec(
                name=name,
                handler_path=self.options.functions_dir / name / "handler.py",
                timeout_s=function.timeout_s,
                memory_mb=function.memory_mb,
                region=region,
                deployed_name=deployed_function_name(deployment.config.name_prefix, name),
            )
            self.functions[name] = LocalFunction(
                spec,
                self.options.concurrency,
                self.options.throttle_wait_s,
                foreground=None if name in (QUEUE_CONSUMER, STREAM_CONSUMER) else self.foreground,
            )
        # One environment of each function now, in parallel: a broken handler fails at start-up with
        # its traceback, and the first requests find warm environments.
        log.info(
            "moto ready in %.1f s; starting one environment of each function (%s): each imports its handler",
            time.monotonic() - started,
            ", ".join(self.functions),
        )
        warming = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(self.functions)) as pool:
            inits = dict(
                zip(self.functions, pool.map(LocalFunction.warm_up, self.functions.values()), strict=True)
            )
        log.info(
            "functions ready in %.1f s (init %s)",
            time.monotonic() - warming,
            ", ".join(f"{name} {init_ms / 1000:.1f} s" for name, init_ms in inits.items()),
        )

        self._event_source = SqsEventSource(
            aws_client("sqs", endpoint, region),
            queue_url=self.resources.queue_url,
            queue_arn=self.resources.queue_arn,
            region=region,
            invoke=self.functions[QUEUE_CONSUMER].invoke,
            concurrency=self.options.concurrency,
            foreground=self.foreground,
        )
        self._event_source.start()
        # From the stream's start: the restored state was put back without stream records.
        sqs = aws_client("sqs", endpoint, region)
        events_dlq_url = self.resources.events_dlq_url
        self._stream_source = StreamEventSource(
            aws_client("dynamodb", endpoint, region),
            aws_client("dynamodbstreams", endpoint, region),
            table_name=self.resources.table_name,
            region=region,
            invoke=self.functions[STREAM_CONSUMER].invoke,
            wanted=event_item,
            dead_letter=lambda failed: sqs.send_message(
                QueueUrl=events_dlq_url, MessageBody=json.dumps(failed)
            ),
            function_arn=self.functions[STREAM_CONSUMER].arn,
        )
        self._stream_source.start()
        self._schedule = Schedule(self.functions["condenser"].invoke, region, self.options.dead_letter_pass_s)
        self._schedule.start()
        assert self._api is not None
        self._api.start()

    def _invoke_http(self, function: str, event: dict[str, Any]) -> Any:
        return self.functions[function].invoke(event)

    def stop(self) -> None:
        """Stop accepting requests and batches, stop the functions (busy ones after a short grace), stop moto.

        Nothing is drained but the table's stream: with a data directory, everything moto acknowledged
        is on disk already and a message still in flight is delivered again at the next start; in
        memory, it all goes. The stream is kept in memory only, so once the other functions stopped
        writing, what it holds is handed to the events function (`STOP_DRAIN_S` at most) before that
        function stops (docs/operations.md "Local stack").
        """
        if self._api is not None:
            self._api.stop()
            self._api = None
        if self.invoke_api is not None:
            self.invoke_api.stop()
        if self._schedule is not None:
            self._schedule.stop()
            self._schedule = None
        if self._event_source is not None:
            self._event_source.stop_polling()
        for name, function in self.functions.items():
            if name != STREAM_CONSUMER:
                function.stop()
        if self._event_source is not None:
            self._event_source.wait()
            self._event_source = None
        if self._stream_source is not None:
            self._stream_source.stop(drain_s=STOP_DRAIN_S)
        if STREAM_CONSUMER in self.functions:
            self.functions[STREAM_CONSUMER].stop()
        if self._stream_source is not None:
            self._stream_source.wait()
            self._stream_source = None
        self.moto.stop()
