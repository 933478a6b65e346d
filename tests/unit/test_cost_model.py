"""The cost arithmetic of `bench/bench_cost.py` and the meter it reads (`bench/metering.py`)."""

import io
import json
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import metering
from bench.prices import PRICES, PerTurn, Prices, Usage, infrastructure_costs, kept_bytes, llm_cost
from hippocampus.contracts.names import default_embedding_model, default_model
from local_stack.runtime import LocalFunction, LocalFunctionSpec

TURN = PerTurn(
    llm_calls=1.0,
    prompt_tokens=650.0,
    completion_tokens=60.0,
    embedding_tokens=100.0,
    api_requests=2.0,
    read_units=100.0,
    write_units=16.0,
    s3_put_class=2.0,
    s3_get_class=1.0,
    sqs_requests=3.0,
    lambda_requests=3.0,
    lambda_gb_seconds=0.7,
    log_bytes=2_400.0,
    traces=3.0,
    events_published=3.0,
)


def test_doubling_the_turns_doubles_every_variable_cost() -> None:
    once = infrastructure_costs(TURN, Usage(turns=300_000, dynamodb_bytes=0, s3_bytes=0))
    twice = infrastructure_costs(TURN, Usage(turns=600_000, dynamodb_bytes=0, s3_bytes=0))
    assert once.keys() == twice.keys() and all(once.values())
    assert all(twice[service] == pytest.approx(2 * once[service]) for service in once)
    assert llm_cost(TURN, 600_000, PRICES.openai) == pytest.approx(2 * llm_cost(TURN, 300_000, PRICES.openai))


def test_prices_times_counts() -> None:
    costs = infrastructure_costs(TURN, Usage(turns=1_000_000, dynamodb_bytes=0, s3_bytes=0))
    assert costs["API Gateway REST"] == pytest.approx(2 * PRICES.api_gateway_rest_per_million)
    assert costs["SQS FIFO"] == pytest.approx(3 * PRICES.sqs_fifo_per_million)
    expected_dynamodb = 100 * PRICES.dynamodb_per_million_rru + 16 * PRICES.dynamodb_per_million_wru
    assert costs["DynamoDB on demand"] == pytest.approx(expected_dynamodb)
    # A million turns of 650 prompt, 60 completion and 100 embedded tokens.
    price = PRICES.openai
    expected_llm = (
        650 * price.input_per_million + 60 * price.output_per_million + 100 * price.embedding_per_million
    )
    assert llm_cost(TURN, 1_000_000, price) == pytest.approx(expected_llm)


def test_storage_is_billed_by_the_gigabyte_month_whatever_the_turns() -> None:
    stored = Usage(turns=0, dynamodb_bytes=2e9, s3_bytes=1e9)
    costs = infrastructure_costs(TURN, stored)
    assert costs["DynamoDB on demand"] == pytest.approx(
        2 * (PRICES.dynamodb_storage_gb_month + PRICES.dynamodb_pitr_gb_month)
    )
    assert costs["S3 Standard"] == pytest.approx(PRICES.s3_storage_gb_month)
    assert costs["Lambda arm64"] == 0 and costs["API Gateway REST"] == 0


def test_a_cheaper_price_table_gives_a_cheaper_bill() -> None:
    usage = Usage(turns=300_000, dynamodb_bytes=0, s3_bytes=0)
    halved = replace(Prices(), api_gateway_rest_per_million=PRICES.api_gateway_rest_per_million / 2)
    assert infrastructure_costs(TURN, usage, halved)["API Gateway REST"] == pytest.approx(
        infrastructure_costs(TURN, usage)["API Gateway REST"] / 2
    )


def test_kept_bytes_at_steady_state() -> None:
    # 300 turns a month, 1 KB per turn kept 365/12 days (a month): 300 KB, plus 5 KB for the user.
    assert kept_bytes(5_000, [(1_000, 365 / 12)], 300) == pytest.approx(305_000)
    assert kept_bytes(0, [(1_000, 730)], 300) == pytest.approx(2 * 12 * 300_000)


def test_the_price_table_prices_the_default_models() -> None:
    for provider, price in (("openai", PRICES.openai), ("bedrock", PRICES.bedrock)):
        assert (price.model, price.embedding_model) == (
            default_model(provider),
            default_embedding_model(provider),
        )


# --- the meter -----------------------------------------------------------------------------------


def test_request_units_follow_item_sizes() -> None:
    assert (
        metering.write_units(1) == 1 and metering.write_units(1024) == 1 and metering.write_units(1025) == 2
    )
    assert metering.write_units(1500, transactional=True) == 2 * metering.write_units(1500) == 4
    assert metering.read_units(0) == 1 and metering.read_units(4097) == 2
    assert metering.read_units(4097, consistent=False) == 1
    assert metering.sqs_chunks(100, 70_000) == 2
    assert metering.attributes_size({"pk": {"S": "ab"}, "n": {"N": "123"}}) == 2 + 2 + 1 + 3


def _environ(
    service: str, target: str, body: dict[str, Any] | None = None, agent: str = "Boto3/1"
) -> dict[str, Any]:
    raw = json.dumps(body or {}).encode()
    return {
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential=local/20261201/us-east-1/{service}/aws4_request, x",
        "HTTP_X_AMZ_TARGET": target,
        "HTTP_USER_AGENT": agent,
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
    }


def _serve(
    meter: metering.AwsRequestMeter, environ: dict[str, Any], answer: dict[str, Any] | None = None
) -> None:
    sent = environ["wsgi.input"].getvalue()

    def moto(env: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        assert env["wsgi.input"].read() == sent  # moto still gets the whole body
        return [json.dumps(answer or {}).encode()]

    b"".join(meter(moto, environ, lambda *_: None))


def test_transactional_writes_count_twice() -> None:
    meter = metering.AwsRequestMeter(item_size=lambda region, table, attributes: 1500)
    item = {"pk": {"S": "a"}, "sk": {"S": "b"}}
    put = {"TableName": "t", "Item": item}
    _serve(meter, _environ("dynamodb", "DynamoDB_20120810.PutItem", put))
    transaction = {"TransactItems": [{"Put": put}, {"ConditionCheck": {"TableName": "t", "Key": item}}]}
    _serve(meter, _environ("dynamodb", "DynamoDB_20120810.TransactWriteItems", transaction))
    reading = meter.reading()
    assert reading.write_units == {"PutItem": 2, "TransactWriteItems": 2 * 2 * 2}
    assert reading.requests == {"dynamodb:PutItem": 1, "dynamodb:TransactWriteItems": 1}


def test_a_query_is_billed_on_the_full_items_it_read() -> None:
    meter = metering.AwsRequestMeter(item_size=lambda region, table, attributes: 9_000)
    projected = {"Items": [{"pk": {"S": "a"}, "sk": {"S": "b"}}]}  # the answer holds the keys only
    _serve(
        meter,
        _environ("dynamodb", "DynamoDB_20120810.Query", {"TableName": "t", "ConsistentRead": True}),
        projected,
    )
    assert meter.reading().read_units == {"Query": 3}


def test_sqs_empty_receives_and_unmetered_requests_are_left_out() -> None:
    meter = metering.AwsRequestMeter(item_size=lambda *_: 0)
    _serve(meter, _environ("sqs", "AmazonSQS.ReceiveMessage"), {"Messages": []})
    _serve(meter, _environ("sqs", "AmazonSQS.ReceiveMessage"), {"Messages": [{"Body": "x"}]})
    _serve(
        meter, _environ("dynamodb", "DynamoDB_20120810.GetItem", agent=f"Boto3/1 {metering.UNMETERED_AGENT}")
    )
    reading = meter.reading()
    assert reading.requests == {"sqs:ReceiveMessage": 1} and reading.sqs_billed == 1
    assert reading.sqs_empty_receives == 1


def test_s3_operations_are_told_apart_by_method_and_path() -> None:
    meter = metering.AwsRequestMeter(item_size=lambda *_: 0)
    for method, path, query in (
        ("PUT", "/b/raw/k.json", ""),
        ("GET", "/b/raw/k.json", ""),
        ("GET", "/b", "list-type=2"),
    ):
        environ = _environ("s3", "") | {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query}
        _serve(meter, environ)
    assert meter.reading().requests == {"s3:PutObject": 1, "s3:GetObject": 1, "s3:ListObjectsV2": 1}


def test_the_local_runtime_bills_each_invocation_rounded_up_to_the_millisecond(tmp_path: Path) -> None:
    handler = tmp_path / "handler.py"
    handler.write_text(
        "import time\n\ndef lambda_handler(event, context):\n    time.sleep(0.02)\n    return 1\n"
    )
    function = LocalFunction(
        LocalFunctionSpec("probe", handler, timeout_s=10, memory_mb=128, region="us-east-1"), 1
    )
    try:
        function.warm_up()
        started = time.monotonic()
        assert function.invoke({}) == 1 and function.invoke({}) == 1
        elapsed_ms = (time.monotonic() - started) * 1000
    finally:
        function.stop()
    assert function.invocations == 2
    assert 40 <= function.billed_ms <= elapsed_ms + 2  # init is not billed
