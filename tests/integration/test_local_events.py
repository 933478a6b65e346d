"""The local stack's change events on its moto server (docs/operations.md "Local stack"): the table's
stream, the bus and its rule to the events queue, the SQS API on the stack's own port, and the poller
that plays the events function's stream event source mapping (local_stack/stream_source.py) — Lambda's
record shape, its retry from the first failed record, its bisect, a batch given up, a shard moto
replaced, and a restart that publishes nothing again."""

import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError
from local_state_support import REGION, DurableMoto, durable_moto
from moto.dynamodb import models as dynamodb_models

from hippocampus import wiring
from local_stack.apigateway import ApiGateway
from local_stack.aws import EVENTS_DLQ_BASE_NAME, aws_client
from local_stack.events import dynamodb_stream_record
from local_stack.http_server import ApiServer
from local_stack.paths import ACCOUNT_ID
from local_stack.runtime import FunctionError
from local_stack.sqs_proxy import SqsProxy
from local_stack.stream_source import (
    BATCH_SIZE,
    EVENT_SORT_KEY_PREFIXES,
    EVENT_SORT_KEYS,
    RETRY_ATTEMPTS,
    RETRY_DELAYS_S,
    StreamEventSource,
    event_item,
)
from tests.support.lambda_harness import Context


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[DurableMoto]:
    with durable_moto(tmp_path / "state") as stack:
        yield stack


class Function:
    """The events function as the poller sees it: `answers` (a batch's sequence numbers → the answer,
    or an exception to raise) decide each invocation; every batch is kept."""

    def __init__(self, answer: Callable[[list[str]], Any] | None = None) -> None:
        self.batches: list[dict[str, Any]] = []
        self._answer = answer or (lambda numbers: {"batchItemFailures": []})

    def __call__(self, event: dict[str, Any]) -> Any:
        self.batches.append(event)
        result = self._answer(sequence_numbers(event))
        if isinstance(result, Exception):
            raise result
        return result

    def delivered(self) -> list[list[str]]:
        return [
            [record["dynamodb"]["Keys"]["pk"]["S"] for record in batch["Records"]] for batch in self.batches
        ]


def sequence_numbers(event: dict[str, Any]) -> list[str]:
    return [record["dynamodb"]["SequenceNumber"] for record in event["Records"]]


def source(moto: DurableMoto, function: Function, **options: Any) -> StreamEventSource:
    stream = StreamEventSource(
        moto.client("dynamodb"),
        moto.client("dynamodbstreams"),
        moto.res.table_name,
        REGION,
        function,
        **({"retry_delays_s": (0.0, 0.0)} | options),
    )
    stream.start(thread=False)
    return stream


def put(moto: DurableMoto, *keys: str, **attributes: Any) -> None:
    for key in keys:
        item = {"pk": {"S": key}, "sk": {"S": "S"}} | attributes
        moto.client("dynamodb").put_item(TableName=moto.res.table_name, Item=item)


def drain(stream: StreamEventSource, passes: int = 10) -> None:
    for _ in range(passes):
        stream.poll_once()


# --- provisioning and the SQS API on the stack's port ---------------------------------------------


def test_the_table_streams_both_images_and_every_event_on_the_bus_reaches_the_queue(
    moto: DurableMoto,
) -> None:
    table = moto.client("dynamodb").describe_table(TableName=moto.res.table_name)["Table"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert (moto.res.event_bus_name, moto.res.events_queue_name) == (
        "hippocampus-dev",
        "hippocampus-dev-events",
    )
    entry = {"Source": "hippocampus", "DetailType": "Job Finished", "Detail": json.dumps({"job_id": "j1"})}
    other = entry | {"Source": "somebody-else"}
    events = moto.client("events")
    answer = events.put_events(Entries=[entry | {"EventBusName": moto.res.event_bus_name}])
    assert answer["FailedEntryCount"] == 0
    events.put_events(Entries=[other | {"EventBusName": moto.res.event_bus_name}])
    sqs = moto.client("sqs")
    messages = sqs.receive_message(QueueUrl=moto.res.events_queue_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["detail"] for m in messages] == [{"job_id": "j1"}]


def test_the_stacks_port_answers_sqs_for_moto_with_its_own_urls(moto: DurableMoto) -> None:
    assert moto.endpoint is not None
    gateway = ApiGateway(lambda function, event: None, "local")
    proxy = SqsProxy(lambda: moto.endpoint.url if moto.endpoint else "", REGION)
    server = ApiServer(gateway, "127.0.0.1", 0, sqs=proxy)
    server.start()
    try:
        sqs = aws_client("sqs", f"http://127.0.0.1:{server.port}", REGION)
        url = sqs.get_queue_url(QueueName="hippocampus-dev-events")["QueueUrl"]
        assert url == f"http://127.0.0.1:{server.port}/{ACCOUNT_ID}/hippocampus-dev-events"
        sqs.send_message(QueueUrl=url, MessageBody="through the stack's port")
        got = moto.client("sqs").receive_message(QueueUrl=moto.res.events_queue_url)["Messages"]
        assert [m["Body"] for m in got] == ["through the stack's port"]
        with pytest.raises(ClientError) as missing:
            sqs.get_queue_url(QueueName="no-such-queue")
        assert "NonExistentQueue" in missing.value.response["Error"]["Code"]
        # Unsigned, or signed for another region: moto still finds the stack's queues.
        port = f"http://127.0.0.1:{server.port}"
        for client in (unsigned_sqs(port), aws_client("sqs", port, "eu-west-1")):
            client.send_message(QueueUrl=url, MessageBody="from another client")
        got = moto.client("sqs").receive_message(QueueUrl=moto.res.events_queue_url, MaxNumberOfMessages=10)
        assert [m["Body"] for m in got["Messages"]] == ["from another client"] * 2
    finally:
        server.stop()


def unsigned_sqs(endpoint: str) -> Any:
    """As `aws sqs ... --no-sign-request` sends its requests."""
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name=REGION, config=Config(signature_version=UNSIGNED)
    )


# --- the poller ------------------------------------------------------------------------------------


def test_batches_reach_the_function_in_lambdas_shape_and_in_order(moto: DurableMoto) -> None:
    function = Function()
    stream = source(moto, function)
    put(moto, "a", "b", vector={"B": b"\x00\xff"})
    moto.client("dynamodb").delete_item(
        TableName=moto.res.table_name, Key={"pk": {"S": "a"}, "sk": {"S": "S"}}
    )
    drain(stream)
    assert function.delivered() == [["a", "b", "a"]]
    first, _, removed = function.batches[0]["Records"]
    assert (
        first["eventSourceARN"] == stream.stream_arn
        and ":table/hippocampus-local-memory/stream/" in stream.stream_arn
    )
    assert (first["eventName"], first["eventSource"], first["awsRegion"]) == (
        "INSERT",
        "aws:dynamodb",
        REGION,
    )
    assert first["dynamodb"]["NewImage"]["vector"] == {"B": "AP8="}  # base64, as in Lambda's JSON
    assert isinstance(first["dynamodb"]["ApproximateCreationDateTime"], int)
    assert removed["eventName"] == "REMOVE" and "OldImage" in removed["dynamodb"]
    json.dumps(function.batches)  # JSON through and through
    assert not stream.poll_once() and len(function.batches) == 1  # nothing new: no invocation


def test_a_reported_failure_reads_the_shard_again_from_the_first_failed_record(moto: DurableMoto) -> None:
    def answer(numbers: list[str]) -> Any:
        if len(function.batches) == 1:  # the first delivery: c and e fail
            return {"batchItemFailures": [{"itemIdentifier": numbers[4]}, {"itemIdentifier": numbers[2]}]}
        return {"batchItemFailures": []}

    function = Function(answer)
    stream = source(moto, function)
    put(moto, "a", "b", "c", "d", "e")
    drain(stream)
    put(moto, "f")
    drain(stream)
    assert function.delivered() == [["a", "b", "c", "d", "e"], ["c", "d", "e"], ["f"]]


def test_an_unhandled_error_fails_the_batch_and_the_next_attempt_reads_half(moto: DurableMoto) -> None:
    failing = {"left": 2}

    def answer(numbers: list[str]) -> Any:
        if failing["left"]:
            failing["left"] -= 1
            return FunctionError("events: Unhandled", "Runtime.Unhandled")
        return None  # a null answer: the whole batch succeeded

    function = Function(answer)
    stream = source(moto, function)
    put(moto, *"abcdefgh")
    drain(stream)
    assert function.delivered() == [list("abcdefgh"), list("abcd"), list("ab"), list("cdefgh")]


def test_an_invalid_item_identifier_fails_the_whole_batch(moto: DurableMoto) -> None:
    answers = iter(
        [{"batchItemFailures": [{"itemIdentifier": "not-in-the-batch"}]}, {"batchItemFailures": []}]
    )
    function = Function(lambda numbers: next(answers))
    stream = source(moto, function)
    put(moto, "a", "b")
    drain(stream)
    assert function.delivered() == [["a", "b"], ["a", "b"]]


def test_a_batch_failing_every_retry_is_given_up_to_the_dlq_and_the_stream_goes_on(moto: DurableMoto) -> None:
    def answer(numbers: list[str]) -> Any:
        poison = [n for n, key in zip(numbers, function.delivered()[-1], strict=True) if key == "b"]
        return {"batchItemFailures": [{"itemIdentifier": n} for n in poison]}

    function = Function(answer)
    given_up: list[dict[str, Any]] = []
    stream = source(
        moto, function, retry_delays_s=(0.0, 0.0), dead_letter=given_up.append, function_arn="arn:fn"
    )
    put(moto, "a", "b", "c")
    drain(stream)
    put(moto, "d")
    drain(stream)
    # The first delivery, two retries from b, then b and c given up; d follows.
    assert function.delivered() == [["a", "b", "c"], ["b", "c"], ["b", "c"], ["d"]]
    assert stream.skipped == 2
    [description] = given_up  # what Lambda sends its on-failure destination: where, never what
    numbers = sequence_numbers(function.batches[1])
    assert description["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert description["requestContext"]["functionArn"] == "arn:fn"
    assert description["DDBStreamBatchInfo"] | {"approximateArrivalOfFirstRecord": None} == {
        "shardId": stream_shard(stream),
        "startSequenceNumber": numbers[0],
        "endSequenceNumber": numbers[-1],
        "approximateArrivalOfFirstRecord": None,
        "approximateArrivalOfLastRecord": description["DDBStreamBatchInfo"]["approximateArrivalOfLastRecord"],
        "batchSize": 2,
        "streamArn": stream.stream_arn,
    }


def stream_shard(stream: StreamEventSource) -> str:
    [shard] = stream._shards
    return shard


def test_only_the_items_that_can_be_events_reach_the_function(moto: DurableMoto) -> None:
    function = Function()
    stream = source(moto, function, wanted=event_item)
    dynamodb = moto.client("dynamodb")
    for pk, sk in [("u", "MEMORY"), ("u", "FACT#f1"), ("u", "RECORD#r1"), ("u", "EPISODE#1#j"), ("j", "JOB")]:
        dynamodb.put_item(TableName=moto.res.table_name, Item={"pk": {"S": pk}, "sk": {"S": sk}})
    drain(stream)
    delivered = [[r["dynamodb"]["Keys"]["sk"]["S"] for r in batch["Records"]] for batch in function.batches]
    assert delivered == [["MEMORY", "RECORD#r1", "JOB"]]
    dynamodb.put_item(TableName=moto.res.table_name, Item={"pk": {"S": "u"}, "sk": {"S": "FACT#f2"}})
    drain(stream)
    assert len(function.batches) == 1  # a read with nothing for the function invokes nothing


def test_the_local_mapping_is_the_deployed_one() -> None:
    functions = pytest.importorskip("infra.functions")  # the CDK app's module: it needs aws_cdk
    events = pytest.importorskip("infra.events")
    assert (BATCH_SIZE, RETRY_ATTEMPTS) == (functions.EVENTS_BATCH_SIZE, functions.EVENTS_RETRY_ATTEMPTS)
    assert (EVENT_SORT_KEYS, EVENT_SORT_KEY_PREFIXES) == (
        functions.EVENT_SORT_KEYS,
        functions.EVENT_SORT_KEY_PREFIXES,
    )
    assert EVENTS_DLQ_BASE_NAME == events.EVENTS_DLQ_NAME
    assert len(RETRY_DELAYS_S) == RETRY_ATTEMPTS


def test_a_retry_waits_before_reading_the_shard_again(moto: DurableMoto) -> None:
    answers = iter([{"batchItemFailures": [{"itemIdentifier": "x"}]}])
    function = Function(lambda numbers: next(answers, None))
    stream = source(moto, function, retry_delays_s=(30.0,))
    put(moto, "a")
    drain(stream)
    assert function.delivered() == [["a"]]  # the retry is 30 s away


@pytest.fixture
def moto_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own transaction rollback (local_stack/moto_dynamodb.py fixes it in the stack): it puts
    back a copy of each table the transaction touched, stream shard included."""
    backend_class: Any = dynamodb_models.DynamoDBBackend
    if "moto_copy" in vars(dynamodb_models):
        monkeypatch.setattr(dynamodb_models, "copy", vars(dynamodb_models)["moto_copy"])
    if hasattr(backend_class, "moto_transact_write_items"):
        monkeypatch.setattr(backend_class, "transact_write_items", backend_class.moto_transact_write_items)


def test_the_poller_resumes_after_the_last_record_handled_when_moto_replaced_the_shard(
    moto: DurableMoto, moto_rollback: None
) -> None:
    function = Function()
    stream = source(moto, function)
    put(moto, "a", "b")
    drain(stream)
    table_before = dynamodb_models.dynamodb_backends[ACCOUNT_ID][REGION].tables[moto.res.table_name]
    refused = {
        "Put": {
            "TableName": moto.res.table_name,
            "Item": {"pk": {"S": "never"}, "sk": {"S": "S"}},
            "ConditionExpression": "attribute_exists(pk)",
        }
    }
    with pytest.raises(ClientError):
        moto.client("dynamodb").transact_write_items(TransactItems=[refused])
    table_after = dynamodb_models.dynamodb_backends[ACCOUNT_ID][REGION].tables[moto.res.table_name]
    assert table_after is not table_before and table_after.stream_shard is not table_before.stream_shard
    put(moto, "c")
    drain(stream)
    assert function.delivered() == [["a", "b"], ["c"]]


def test_a_shard_replaced_between_two_batches_loses_and_repeats_nothing(moto: DurableMoto) -> None:
    """The same, with the table replaced by hand while the shard still had records to read: the old
    iterator reads the copy's last record, then a new one finds the new shard."""
    function = Function()
    stream = source(moto, function, batch_size=2)
    put(moto, "a", "b", "c")
    stream.poll_once()  # a, b
    tables = dynamodb_models.dynamodb_backends[ACCOUNT_ID][REGION].tables
    tables[moto.res.table_name] = copy.deepcopy(tables[moto.res.table_name])
    put(moto, "d")
    drain(stream)
    assert function.delivered() == [["a", "b"], ["c"], ["d"]]


def test_a_restart_puts_the_state_back_without_publishing_it_again(moto: DurableMoto) -> None:
    put(moto, "a", "b")
    moto.restart()
    function = Function()
    stream = source(moto, function)
    drain(stream)
    assert function.delivered() == []
    put(moto, "c")
    drain(stream)
    assert function.delivered() == [["c"]]


def test_the_thread_waits_between_empty_reads_and_a_stop_hands_over_what_is_left(moto: DurableMoto) -> None:
    reads = [0]
    streams = moto.client("dynamodbstreams")
    real = streams.get_records

    def counted(**arguments: Any) -> Any:
        reads[0] += 1
        return real(**arguments)

    streams.get_records = counted
    function = Function()
    stream = StreamEventSource(
        moto.client("dynamodb"), streams, moto.res.table_name, REGION, function, idle_wait_s=0.2
    )
    stream.start()
    time.sleep(1.0)
    idle_reads = reads[0]
    put(moto, "a", "b")
    started = time.monotonic()
    stream.stop(drain_s=30)
    assert [key for batch in function.delivered() for key in batch] == ["a", "b"]  # before the stop returned
    assert idle_reads <= 1.0 / 0.2 + 2  # a read per idle wait, not a busy loop
    assert time.monotonic() - started < 30


def test_a_stop_without_a_drain_returns_at_once(moto: DurableMoto) -> None:
    stream = StreamEventSource(
        moto.client("dynamodb"), moto.client("dynamodbstreams"), moto.res.table_name, REGION, Function()
    )
    stream.start()
    started = time.monotonic()
    stream.stop()
    assert time.monotonic() - started < 5


# --- the events function itself, on what Lambda hands it --------------------------------------------


def test_the_events_function_reads_records_with_binary_attributes_as_lambda_sends_them(
    moto: DurableMoto, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert moto.endpoint is not None
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("MEMORY_EVENT_BUS_NAME", moto.res.event_bus_name)
    wiring.reset()
    record = {"pk": {"S": "T#acme#U#alice"}, "sk": {"S": "RECORD#rec_1"}, "id": {"S": "rec_1"}}
    record |= {"text": {"S": "Lives in Paris."}, "vector": {"B": b"\x00\x01"}}
    moto.client("dynamodb").put_item(TableName=moto.res.table_name, Item=record)
    page = _stream_page(moto)
    event = {"Records": [dynamodb_stream_record(r, "arn:stream", REGION) for r in page]}
    try:
        answer = wiring.events_handler()(event, Context())
    finally:
        wiring.reset()
    assert answer == {"batchItemFailures": []}


def _stream_page(moto: DurableMoto) -> list[dict[str, Any]]:
    dynamodb, streams = moto.client("dynamodb"), moto.client("dynamodbstreams")
    arn = dynamodb.describe_table(TableName=moto.res.table_name)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    return list(streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"])
