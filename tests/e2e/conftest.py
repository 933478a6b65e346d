"""Fixtures of the end-to-end suite.

One local stack (and one OpenAI stub as its LLM) per test session, i.e. per xdist worker:
tests use their own tenants and users, and the tests that change the stub's behaviour
restore it. With `MEMORY_API_URL` set, the suite runs against that deployed API instead and
the tests that need the stub are skipped.
"""

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from e2e_support import Api, LocalStackProcess, sigv4_auth, stub_reply, stub_stack_environment, unique

from local_stack.__main__ import AUTH_LINE
from tests.support.openai_stub import OpenAIStub

REMOTE_URL = os.getenv("MEMORY_API_URL", "").strip()
STUB_ONLY = "needs the local OpenAI stub (MEMORY_API_URL targets a deployed stack)"


def _stack_environment(stub: OpenAIStub) -> dict[str, str]:
    return stub_stack_environment(stub.base_url, MEMORY_LLM_TIMEOUT_S="5", PYTHONUNBUFFERED="1")


@pytest.fixture(scope="session")
def stub() -> Iterator[OpenAIStub | None]:
    if REMOTE_URL:
        yield None
        return
    with OpenAIStub(stub_reply) as server:
        yield server


@contextmanager
def _running_stack(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    process = LocalStackProcess(
        tmp_path_factory.mktemp("local_stack") / "stack.log", _stack_environment(stub)
    )
    process.start()
    try:
        yield process
    finally:
        # SIGTERM, as Ctrl-C: the stack stops everything and exits 0.
        assert process.stop() == 0, f"the local stack did not stop cleanly:\n{process.log_tail(40)}"
        assert "Stopped." in process.log_text()
        # The banner tells a newcomer that locally nothing is authenticated.
        assert AUTH_LINE in process.log_text()


def _api(local_stack: LocalStackProcess | None) -> Api:
    if local_stack is None:
        return Api(REMOTE_URL, auth=sigv4_auth(REMOTE_URL))
    return Api(local_stack.url, diagnostics=lambda: "local stack log:\n" + local_stack.log_tail(40))


@pytest.fixture(scope="session")
def local_stack(
    stub: OpenAIStub | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalStackProcess | None]:
    if stub is None:
        yield None
        return
    with _running_stack(stub, tmp_path_factory) as process:
        yield process


@pytest.fixture(scope="session")
def api(local_stack: LocalStackProcess | None) -> Api:
    return _api(local_stack)


@pytest.fixture(scope="module")
def own_api(stub: OpenAIStub | None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """The API of a local stack of the module's own (or the deployed one), for a test whose load
    would hold up the others on a shared stack: the client burst's 5,000 jobs put tens of thousands
    of changes on the table's stream, and another test's events then wait behind them for a minute
    on a busy machine."""
    if stub is None:
        yield _api(None)
        return
    with _running_stack(stub, tmp_path_factory) as process:
        yield _api(process)


@pytest.fixture
def llm(stub: OpenAIStub | None) -> Iterator[OpenAIStub]:
    """The stub LLM, restored after the test; skips the test against a deployed stack."""
    if stub is None:
        pytest.skip(STUB_ONLY)
    stub.reset()
    stub.delay_s = 0.0
    try:
        yield stub
    finally:
        stub.recover()
        stub.delay_s = 0.0
        stub.set_reply(stub_reply)  # a test may answer its own way (test_e2e_records.py)


@pytest.fixture
def tenant() -> str:
    return unique("e2e")


@pytest.fixture
def user() -> str:
    return unique("user")


@pytest.fixture
def tenant_events(local_stack: LocalStackProcess | None, tenant: str) -> Iterator[str]:
    """The URL of a queue subscribed to the local stack's bus for the test's tenant, as a user
    subscribes one (client/README.md "events"), for `hippocampus events --queue-url`. The stack's
    own queue takes every test's events, and a test draining it deletes another's."""
    if local_stack is None:
        pytest.skip("the bus is the local stack's (a deployment's has its own subscribers)")
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    sqs = session.client("sqs", endpoint_url=local_stack.aws_endpoint)
    events = session.client("events", endpoint_url=local_stack.aws_endpoint)
    [bus] = [bus["Name"] for bus in events.list_event_buses()["EventBuses"] if bus["Name"] != "default"]
    url = sqs.create_queue(QueueName=tenant)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    pattern = {"source": ["hippocampus"], "detail": {"tenant_id": [tenant]}}
    events.put_rule(Name=tenant, EventBusName=bus, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=tenant, EventBusName=bus, Targets=[{"Id": "tenant-events", "Arn": arn}])
    try:
        yield url
    finally:
        events.remove_targets(Rule=tenant, EventBusName=bus, Ids=["tenant-events"])
        events.delete_rule(Name=tenant, EventBusName=bus)
        sqs.delete_queue(QueueUrl=url)
