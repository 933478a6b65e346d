"""Public prices for `bench/bench_cost.py` (us-east-1, on demand, arm64 Lambda), and the arithmetic
that turns measured counts into a monthly bill.

`Prices` is the one place to update them. Each price names its source page and when it was taken
("as of 2026-12"); they were written from the author's knowledge of those pages, not fetched, and
must be checked against the pages before anyone relies on the figures. Each is the first (smallest
volume) tier; free tiers, discounts and savings plans are left out, so the figures err high.
"""

from dataclasses import dataclass

MILLION = 1_000_000
THOUSAND = 1_000
GB = 1_000_000_000  # AWS bills data in GB of 10^9 bytes
DAYS_PER_MONTH = 365 / 12


@dataclass(frozen=True)
class LlmPrice:
    model: str
    input_per_million: float  # USD per million prompt tokens
    output_per_million: float  # USD per million completion tokens
    embedding_model: str  # the provider's default embedding model (the condenser embeds each turn)
    embedding_per_million: float  # USD per million embedded tokens


@dataclass(frozen=True)
class Prices:
    # https://aws.amazon.com/api-gateway/pricing/ — REST API, first 333 million requests (as of 2026-12)
    api_gateway_rest_per_million: float = 3.50
    # https://aws.amazon.com/lambda/pricing/ — requests, any architecture (as of 2026-12)
    lambda_per_million_requests: float = 0.20
    # https://aws.amazon.com/lambda/pricing/ — arm64 duration, first 7.5 billion GB-s (as of 2026-12)
    lambda_arm64_per_gb_second: float = 0.0000133334
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ — write request units, Standard table class;
    # a transactional write takes 2 WRU per KB, which the meter counts (as of 2026-12)
    dynamodb_per_million_wru: float = 0.625
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ — read request units (as of 2026-12)
    dynamodb_per_million_rru: float = 0.125
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ — table storage, GB-month (as of 2026-12)
    dynamodb_storage_gb_month: float = 0.25
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ — continuous backups (PITR), GB-month (as of 2026-12)
    dynamodb_pitr_gb_month: float = 0.20
    # https://aws.amazon.com/s3/pricing/ — S3 Standard PUT, COPY, POST, LIST per 1,000 (as of 2026-12)
    s3_put_per_thousand: float = 0.005
    # https://aws.amazon.com/s3/pricing/ — S3 Standard GET, SELECT and all other per 1,000 (as of 2026-12)
    s3_get_per_thousand: float = 0.0004
    # https://aws.amazon.com/s3/pricing/ — S3 Standard storage, first 50 TB, GB-month (as of 2026-12)
    s3_storage_gb_month: float = 0.023
    # https://aws.amazon.com/sqs/pricing/ — FIFO requests, each 64 KB chunk of payload one request (as of 2026-12)
    sqs_fifo_per_million: float = 0.50
    # https://aws.amazon.com/eventbridge/pricing/ — custom events put on a bus, each 64 KB chunk one event
    # (as of 2026-12); the stream's reads by Lambda's trigger are free (DynamoDB pricing)
    eventbridge_per_million_events: float = 1.00
    # https://aws.amazon.com/cloudwatch/pricing/ — Logs ingestion, Standard log class, per GB (as of 2026-12)
    logs_ingestion_per_gb: float = 0.50
    # https://aws.amazon.com/xray/pricing/ — traces recorded, per million (as of 2026-12)
    xray_per_million_traces: float = 5.00
    # https://openai.com/api/pricing/ — gpt-4o-mini and text-embedding-3-small, the openai provider's
    # default models (as of 2026-12)
    openai: LlmPrice = LlmPrice("gpt-4o-mini", 0.15, 0.60, "text-embedding-3-small", 0.02)
    # https://aws.amazon.com/bedrock/pricing/ — Amazon Nova Lite and Titan Text Embeddings V2 on
    # demand, the bedrock provider's default models (as of 2026-12)
    bedrock: LlmPrice = LlmPrice("amazon.nova-lite-v1:0", 0.06, 0.24, "amazon.titan-embed-text-v2:0", 0.02)


# S3 operations billed at the PUT rate; DeleteObject is free; every other operation is billed at
# the GET rate. DeleteObjects (a POST) is put with the PUT rate to err high.
S3_PUT_CLASS = frozenset({"PutObject", "CopyObject", "PostObject", "ListObjectsV2", "DeleteObjects"})
S3_FREE = frozenset({"DeleteObject"})

PRICES = Prices()


@dataclass(frozen=True)
class PerTurn:
    """What one ingested turn took, in billed units (its share of the workload's facts and reads included)."""

    llm_calls: float
    prompt_tokens: float
    completion_tokens: float
    embedding_tokens: float
    api_requests: float
    read_units: float  # DynamoDB RRU
    write_units: float  # DynamoDB WRU, transactional writes counted twice
    s3_put_class: float  # S3 requests billed at the PUT rate
    s3_get_class: float  # S3 requests billed at the GET rate
    sqs_requests: float  # in 64 KB chunks
    lambda_requests: float
    lambda_gb_seconds: float
    log_bytes: float
    traces: float
    events_published: float  # change events put on the bus (each well under 64 KB)


@dataclass(frozen=True)
class Usage:
    """A month of a population: its turns, and the bytes its users keep stored."""

    turns: float
    dynamodb_bytes: float
    s3_bytes: float


def infrastructure_costs(turn: PerTurn, usage: Usage, prices: Prices = PRICES) -> dict[str, float]:
    """USD per month, by service, for `usage` (everything but the LLM)."""
    n = usage.turns
    dynamodb_requests = (
        turn.read_units * prices.dynamodb_per_million_rru + turn.write_units * prices.dynamodb_per_million_wru
    )
    dynamodb_storage = prices.dynamodb_storage_gb_month + prices.dynamodb_pitr_gb_month
    s3_requests = (
        turn.s3_put_class * prices.s3_put_per_thousand + turn.s3_get_class * prices.s3_get_per_thousand
    )
    lambda_cost = turn.lambda_requests * prices.lambda_per_million_requests / MILLION
    return {
        "API Gateway REST": n * turn.api_requests * prices.api_gateway_rest_per_million / MILLION,
        "Lambda arm64": n * (lambda_cost + turn.lambda_gb_seconds * prices.lambda_arm64_per_gb_second),
        "DynamoDB on demand": n * dynamodb_requests / MILLION + usage.dynamodb_bytes / GB * dynamodb_storage,
        "S3 Standard": n * s3_requests / THOUSAND + usage.s3_bytes / GB * prices.s3_storage_gb_month,
        "SQS FIFO": n * turn.sqs_requests * prices.sqs_fifo_per_million / MILLION,
        "EventBridge": n * turn.events_published * prices.eventbridge_per_million_events / MILLION,
        "CloudWatch Logs": n * turn.log_bytes / GB * prices.logs_ingestion_per_gb,
        "X-Ray": n * turn.traces * prices.xray_per_million_traces / MILLION,
    }


def llm_cost(turn: PerTurn, turns: float, price: LlmPrice) -> float:
    """USD per month of the LLM's tokens, embeddings included, for `turns` turns."""
    tokens = turn.prompt_tokens * price.input_per_million + turn.completion_tokens * price.output_per_million
    return turns * (tokens + turn.embedding_tokens * price.embedding_per_million) / MILLION


def kept_bytes(per_user: float, per_turn: list[tuple[float, float]], turns_per_month: float) -> float:
    """Bytes one active user keeps stored once its oldest records have expired: `per_user` for as long
    as the user exists, and each `(bytes, days)` of `per_turn` for every turn of the last `days` days."""
    return per_user + sum(size * turns_per_month * days / DAYS_PER_MONTH for size, days in per_turn)
