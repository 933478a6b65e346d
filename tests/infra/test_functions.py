"""The five functions of the default stack: runtime, logs, environment, layers, and each role's grants."""

from __future__ import annotations

import importlib.util
import json

from aws_cdk.assertions import Match

from hippocampus.contracts import names as schema
from infra.specs import FUNCTION_SPECS
from tests.infra.helpers import FUNCTIONS, Synth, archive, as_list, granted, statements

WRITES = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}


def test_functions_run_python313_traced_with_json_logs_in_their_own_log_group(default_synth: Synth) -> None:
    template, config = default_synth.template, default_synth.stack.config
    template.resource_count_is(
        "AWS::Lambda::Function", len(FUNCTION_SPECS)
    )  # no helper function (log retention, ...)
    for spec in FUNCTION_SPECS:
        function = default_synth.function(spec.name)
        template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "FunctionName": f"{config.name_prefix}-{spec.name.replace('_', '-')}",
                "Runtime": "python3.13",
                "Architectures": ["arm64"],
                "Handler": "handler.lambda_handler",
                "MemorySize": spec.memory_mb,
                "Timeout": spec.timeout_s,
                "TracingConfig": {"Mode": "Active"},
                "LoggingConfig": {"LogFormat": "JSON", "ApplicationLogLevel": config.log_level},
            },
        )
        log_group = default_synth.props(function["LoggingConfig"]["LogGroup"]["Ref"])
        assert log_group["RetentionInDays"] == config.log_retention_days, spec.name


def test_each_function_has_its_own_role_without_managed_policies(default_synth: Synth) -> None:
    roles = {default_synth.role_id(name) for name in FUNCTIONS}
    assert len(roles) == len(FUNCTIONS) == len(FUNCTION_SPECS)
    assumed_by_lambda = {
        "AssumeRolePolicyDocument": {
            "Statement": [Match.object_like({"Principal": {"Service": "lambda.amazonaws.com"}})]
        },
        "ManagedPolicyArns": Match.absent(),  # no AWSLambdaBasicExecutionRole (every log group)
    }
    found = default_synth.template.find_resources("AWS::IAM::Role", {"Properties": assumed_by_lambda})
    assert roles <= found.keys()


def test_environment_names_the_resources_and_the_llm(default_synth: Synth) -> None:
    config, synth = default_synth.stack.config, default_synth
    table = synth.logical_id(
        "AWS::DynamoDB::Table", {"KeySchema": Match.array_with([Match.object_like({"KeyType": "RANGE"})])}
    )
    common: dict[str, object] = {
        "MEMORY_TABLE_NAME": {"Ref": table},
        "MEMORY_MAX_WORDS": str(config.max_words),
        "MEMORY_TRACING": "xray",
        "MEMORY_LOG_CONTENT": "false",
        "MEMORY_JOB_RETENTION_DAYS": str(config.raw_retention_days),
        "POWERTOOLS_SERVICE_NAME": schema.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": schema.METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": config.log_level,
        "PYDANTIC_DISABLE_PLUGINS": "__all__",  # a shorter cold start (README "Performance")
        "MEMORY_TTL_DAYS": Match.absent(),  # memories are kept forever by default
    }
    bucket = {"MEMORY_BUCKET_NAME": {"Ref": Match.string_like_regexp("ArchiveBucket")}}
    # The condenser embeds facts and episodes, recall the query: the same provider, model and size.
    embeddings = {
        "MEMORY_EMBEDDING_PROVIDER": "offline",  # follows llm_provider
        "MEMORY_EMBEDDING_MODEL": schema.OFFLINE_EMBEDDING_MODEL,
        "MEMORY_EMBEDDING_DIMENSIONS": str(config.embedding_dimensions),
    }
    no_embeddings = dict.fromkeys(embeddings, Match.absent())
    only: dict[str, dict[str, object]] = {
        "get_memory": {
            **bucket,
            **no_embeddings,
            "MEMORY_QUEUE_URL": Match.absent(),
            "MEMORY_LLM_PROVIDER": Match.absent(),
        },
        "ingest": {
            **bucket,
            **no_embeddings,
            "MEMORY_QUEUE_URL": Match.any_value(),
            "MEMORY_IDEMPOTENCY_TABLE_NAME": Match.absent(),
        },
        "condenser": {
            **bucket,
            **embeddings,
            "MEMORY_MAX_EPISODES": str(config.max_episodes),
            "MEMORY_LLM_PROVIDER": "offline",
            "MEMORY_LLM_MODEL": Match.absent(),  # offline: no model
            "MEMORY_LLM_TIMEOUT_S": f"{config.llm_timeout_s:g}",
            "MEMORY_LLM_API_KEY_SECRET": Match.absent(),  # offline: no secret
            "MEMORY_QUEUE_URL": Match.any_value(),  # the redrive sends dead letters back there
        },
        "recall": {
            **embeddings,
            **bucket,  # it reads the stored copies of users' episodes (recall/)
            "MEMORY_QUEUE_URL": Match.absent(),
            "MEMORY_LLM_PROVIDER": Match.absent(),
            "MEMORY_LLM_API_KEY_SECRET": Match.absent(),  # offline embeddings: no secret
            # Its copy of a user's episodes keeps what the condenser's trim leaves.
            "MEMORY_MAX_EPISODES": str(config.max_episodes),
        },
        # The stream's records and the bus: no table, bucket, queue or model (test_events_stack.py).
        "events": {
            **no_embeddings,
            "MEMORY_TABLE_NAME": Match.absent(),
            "MEMORY_BUCKET_NAME": Match.absent(),
            "MEMORY_QUEUE_URL": Match.absent(),
            "MEMORY_LLM_PROVIDER": Match.absent(),
            "MEMORY_EVENT_BUS_NAME": {"Ref": synth.logical_id("AWS::Events::EventBus", {})},
            "MEMORY_EVENTS_INCLUDE_CONTENT": "false",
        },
    }
    for name in FUNCTIONS:
        synth.template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "FunctionName": f"{config.name_prefix}-{name.replace('_', '-')}",
                "Environment": {"Variables": common | only[name]},
            },
        )


def test_layers_per_function(default_synth: Synth) -> None:
    for name in FUNCTIONS:
        dirs = default_synth.layer_dirs(name)
        packages = {p.name for d in dirs for p in (d / "python").iterdir()}
        assert {"hippocampus", "aws_lambda_powertools", "pydantic"} <= packages, name
        assert not packages & {"boto3", "botocore", "s3transfer"}, name  # the runtime's
        # recall carries the openai SDK only with openai embeddings (test_recall.py); these are offline.
        assert ("openai" in packages) == (name == "condenser"), name
        # The offline model (this stack's embeddings) goes only where texts are embedded.
        assert ({"tokenizers", "wordllama"} <= packages) == (name in ("condenser", "recall")), name
        # The read paths never load the X-Ray SDK, so they do not carry it either.
        assert ("aws_xray_sdk" in packages) == (name in ("ingest", "condenser")), name
        # Layers of one function are extracted into the same /opt/python: no package may be in two.
        tops = [{p.name for p in (d / "python").iterdir() if p.name != "__pycache__"} for d in dirs]
        assert sum(map(len, tops)) == len(set().union(*tops)), name
    default_synth.template.all_resources_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleRuntimes": ["python3.13"], "CompatibleArchitectures": ["arm64"]},
    )


def test_layers_and_code_ship_unchecked_hash_pyc_for_313(default_synth: Synth) -> None:
    for name in FUNCTIONS:
        code = default_synth.asset_dir(default_synth.function(name)["Code"]["S3Key"])
        assert (code / "handler.py").is_file()
        assert (code / "__pycache__" / "handler.cpython-313.pyc").is_file()
        for directory in default_synth.layer_dirs(name):
            pycs = list((directory / "python").rglob("*.pyc"))
            assert pycs, directory
            # Python 3.13's magic number (the dependency layers' legacy .pyc carry no cpython-313 tag).
            headers = {p.read_bytes()[:8] for p in pycs[:200]}
            assert {header[:4] for header in headers} == {importlib.util.MAGIC_NUMBER}, directory
            # PEP 552 flags: 0b01 = hash-based, not checked against the source.
            assert {int.from_bytes(header[4:8], "little") for header in headers} == {1}, directory
    layers = default_synth.layer_dirs("get_memory")
    core = next(d / "python" / "hippocampus" for d in layers if (d / "python" / "hippocampus").is_dir())
    assert (core / "contracts" / "routes.py").is_file()
    assert (core / "contracts" / "__pycache__" / "routes.cpython-313.pyc").is_file()
    pydantic = next(d / "python" / "pydantic" for d in layers if (d / "python" / "pydantic").is_dir())
    assert (pydantic / "main.pyc").is_file() and not (pydantic / "main.py").exists()  # bytecode only


# ----------------------------------------------------------------------------- IAM


def test_no_wildcard_actions_and_resource_star_only_for_xray_and_listing_streams(
    default_synth: Synth,
) -> None:
    for statement in statements(default_synth):
        if statement["Effect"] != "Allow":
            continue
        actions = as_list(statement["Action"])
        assert not [a for a in actions if "*" in a], statement
        if "*" in as_list(statement.get("Resource", [])):
            # Neither supports resource-level permissions; ListStreams is the events role's (test_events_stack.py).
            xray = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
            assert set(actions) <= xray or actions == ["dynamodb:ListStreams"], statement


def prefixes(*values: str) -> str:
    listed = ", ".join(f'"{value}*"' for value in values)
    return ' if {"StringLike": {"s3:prefix": [' + listed + "]}}"


def test_get_memory_reads_memories_history_and_for_the_export_raw_payloads(default_synth: Synth) -> None:
    grants, bucket = granted(default_synth, default_synth.role_id("get_memory")), archive(default_synth)
    assert grants["s3:GetObject"] == {f"{bucket}/history/*", f"{bucket}/raw/*"}
    assert grants["s3:ListBucket"] == {bucket + prefixes("history/", "raw/")}
    assert {"dynamodb:GetItem", "dynamodb:Query"} <= grants.keys()
    # The table, and a Query of its users index alone: the only function that may read the index.
    index = f"/index/{schema.USERS_INDEX_NAME}"
    assert {resource.rsplit("}", 1)[-1] for resource in grants["dynamodb:Query"]} == {"", index}
    assert not [
        r for action, rs in grants.items() if action != "dynamodb:Query" for r in rs if "/index/" in r
    ]
    for other in ("ingest", "condenser", "recall"):
        queried = granted(default_synth, default_synth.role_id(other))["dynamodb:Query"]
        assert not [resource for resource in queried if "/index/" in resource]
    assert not (WRITES | {"s3:PutObject", "s3:DeleteObject"}) & grants.keys()
    assert not [a for a in grants if a.startswith(("sqs:", "secretsmanager:", "bedrock:"))]


def test_ingest_writes_raw_payloads_and_history_and_enqueues(default_synth: Synth) -> None:
    grants, bucket = granted(default_synth, default_synth.role_id("ingest")), archive(default_synth)
    assert grants["s3:GetObject"] == {f"{bucket}/raw/*"}
    # PUT archives the version it writes; DELETE of a user erases their history too, and the stored
    # copy of their episodes, which forgetting one episode deletes as well.
    assert grants["s3:PutObject"] == {f"{bucket}/raw/*", f"{bucket}/history/*"}
    assert grants["s3:DeleteObject"] == {f"{bucket}/raw/*", f"{bucket}/history/*", f"{bucket}/recall/*"}
    assert grants["s3:ListBucket"] == {bucket + prefixes("raw/", "history/", "recall/")}
    assert "sqs:SendMessage" in grants and "sqs:ReceiveMessage" not in grants
    assert len(grants["dynamodb:PutItem"]) == 1  # the memory table holds the idempotency records too
    assert not [a for a in grants if a.startswith(("secretsmanager:", "bedrock:"))]


def test_condenser_reads_raw_archives_history_and_consumes_the_queue(default_synth: Synth) -> None:
    grants, bucket = granted(default_synth, default_synth.role_id("condenser")), archive(default_synth)
    assert grants["s3:GetObject"] == {f"{bucket}/raw/*", f"{bucket}/recall/*"}
    # It archives versions and keeps the stored copies of users' episodes, tagged for their expiry.
    assert grants["s3:PutObject"] == {f"{bucket}/history/*", f"{bucket}/recall/*"}
    assert grants["s3:PutObjectTagging"] == {f"{bucket}/recall/*"}
    # What landed after a DELETE swept the prefixes: a skipped item's payload, a late version, a
    # late copy of the episodes.
    assert grants["s3:DeleteObject"] == {f"{bucket}/raw/*", f"{bucket}/history/*", f"{bucket}/recall/*"}
    # So that a raw/ payload erased by a DELETE is 404 NoSuchKey (skipped), not 403 AccessDenied,
    # and so is a copy not stored yet.
    assert grants["s3:ListBucket"] == {bucket + prefixes("raw/", "recall/")}
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= grants.keys()
    assert (
        len(grants["sqs:SendMessage"]) == 1
    )  # the redrive, to the ingest queue (test_redrive_permissions.py)
    assert len(grants["dynamodb:PutItem"]) == 1  # the memory table only
    # The offline provider calls nothing: neither a secret nor Bedrock.
    assert not [a for a in grants if a.startswith(("secretsmanager:", "bedrock:"))]


def test_a_schedule_runs_the_condensers_dead_letter_pass_and_the_redrive_may_empty_the_dlq(
    default_synth: Synth,
) -> None:
    template = default_synth.template
    (dlq,) = [
        logical
        for logical, queue in template.find_resources("AWS::SQS::Queue").items()
        if "ingest-dlq" in json.dumps(queue["Properties"].get("QueueName", ""))
    ]
    (rule,) = template.find_resources("AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == f"rate({schema.DEAD_LETTER_PASS_MINUTES} minutes)"
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [default_synth.function_id("condenser"), "Arn"]}
    grants = granted(default_synth, default_synth.role_id("condenser"))
    on_dlq = {action for action, resources in grants.items() if "${" + dlq + ".Arn}" in resources}
    # The pass only reads (and releases what it read); deleting is the redrive's, once a message was sent.
    redrive = {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
    }
    assert on_dlq == redrive
    assert default_synth.function("condenser")["Environment"]["Variables"]["MEMORY_DLQ_URL"] == {"Ref": dlq}


def test_each_function_writes_its_own_log_group_only(default_synth: Synth) -> None:
    for name in FUNCTIONS:
        log_group = default_synth.function(name)["LoggingConfig"]["LogGroup"]["Ref"]
        grants = granted(default_synth, default_synth.role_id(name))
        assert grants["logs:PutLogEvents"] == {"${" + log_group + ".Arn}"}
