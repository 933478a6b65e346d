"""On DynamoDB and S3 (moto): forgetting a user leaves a receipt of what was erased, per store, in
counts that match what the stores held, with no content; it outlives the user and is the tenant's
and the user's only (docs/api.md "Deletion receipts")."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import boto3

from tests.support.lambda_harness import Context

TENANT = "/v1/tenants/acme"
USER = f"{TENANT}/users/alice/memory"


def stored(aws) -> tuple[Counter, Counter, Counter]:
    """The user's items by kind, those holding a vector by kind, and S3 objects by prefix."""
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    kinds, vectors = Counter(), Counter()
    for item in items:
        pk, sk = item["pk"]["S"], item["sk"]["S"]
        if pk == "T#acme#U#alice":
            kind = sk.split("#")[0]
            kinds[kind] += 1
            vectors[kind] += "vector_model" in item
        elif pk == "T#acme#U#alice#I":
            kinds["REF" if sk.startswith("JOB#") else "IDEMPOTENCY"] += 1
    objects = boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name).get("Contents", [])
    prefixes = Counter(obj["Key"].split("/")[0] for obj in objects if "/acme/alice/" in obj["Key"])
    return kinds, vectors, prefixes


def test_forgetting_a_user_leaves_a_receipt_that_counts_what_each_store_held(service, aws):
    turns = [{"id": f"t{n}", "text": f"I live in Paris and I sell candle number {n}."} for n in range(3)]
    service.call("POST", USER, {"items": turns}, headers={"Idempotency-Key": "k1"})
    service.call("POST", USER, {"items": [{"id": "f1", "text": "Prefers SMS over email.", "infer": False}]})
    service.drain()
    in_flight = service.call("POST", USER, {"items": [{"id": "t9", "text": "I moved to Berlin."}]})
    kinds, vectors, objects = stored(aws)
    assert kinds["EPISODE"] == 3 and kinds["FACT"] == 1 and kinds["RECORD"] >= 1 and vectors["FACT"] == 1
    assert objects["recall"] == 1  # the stored copy of the episodes

    answer = service.call("DELETE", USER)
    assert answer.status == 204
    receipt_id = answer.headers["deletion-receipt"]
    receipt = service.call("GET", f"{USER}/deletions/{receipt_id}").body
    assert receipt["erased"] == {
        "dynamodb": {
            "memory": 1,
            "facts": kinds["FACT"],
            "episodes": kinds["EPISODE"],
            "records": kinds["RECORD"],
            "jobs": kinds["REF"] - 1,  # the turn in flight is kept, redacted, as `skipped`
            "job_references": kinds["REF"],
            "idempotency_records": kinds["IDEMPOTENCY"],
            "pii_placeholders": 0,
            "agent_scopes": 0,
        },
        "s3": {
            "raw_objects": objects["raw"],
            "raw_items_blanked": 0,
            "history_objects": objects["history"],
            "episode_copies": objects["recall"],
            "object_versions": 0,
        },
        "queue": {"messages_skipped": 1, "deferred_turns": 0},
        "vectors": {"facts": vectors["FACT"], "episodes": vectors["EPISODE"], "records": vectors["RECORD"]},
    }
    assert receipt["generation"] == 1 and receipt["requested_at"] <= receipt["completed_at"]
    job = service.call("GET", f"{TENANT}/jobs/{in_flight.body['jobs'][0]['job_id']}").body
    assert job["status"] == "skipped"
    # Ids, times and counts: nothing the user said.
    assert (receipt["scope"], receipt["target_id"]) == ("user", None)
    assert set(receipt) == {
        "scope",
        "target_id",
        "receipt_id",
        "tenant_id",
        "user_id",
        "generation",
        "requested_at",
        "completed_at",
        "expires_at",
        "erased",
    }

    service.drain()  # the message in flight arrives: it changes nothing, and the receipt stays
    assert service.call("GET", f"{USER}/deletions/{receipt_id}").body == receipt
    assert service.call("GET", f"{TENANT}/users/bob/memory/deletions/{receipt_id}").status == 404
    assert service.call("GET", f"/v1/tenants/other/users/alice/memory/deletions/{receipt_id}").status == 404


def test_a_user_forgotten_again_gets_a_receipt_of_nothing_left(service):
    first = service.call("DELETE", USER).headers["deletion-receipt"]
    second = service.call("DELETE", USER).headers["deletion-receipt"]
    assert first != second
    receipt = service.call("GET", f"{USER}/deletions/{second}").body
    assert receipt["generation"] == 2
    assert set(receipt["erased"]["dynamodb"].values()) == {0} and receipt["erased"]["queue"] == {
        "messages_skipped": 0,
        "deferred_turns": 0,
    }


def test_a_direct_invocation_forgets_with_a_receipt_and_reads_it_back(service):
    service.call("POST", USER, {"items": [{"id": "f1", "text": "Prefers SMS over email.", "infer": False}]})
    forgot = service.ingest.lambda_handler(
        {"action": "delete_memory", "tenant_id": "acme", "user_id": "alice"}, Context()
    )
    read = {
        "action": "get_deletion",
        "tenant_id": "acme",
        "user_id": "alice",
        "receipt_id": forgot["receipt_id"],
    }
    receipt = service.get_memory.lambda_handler(read, Context())
    assert receipt["receipt_id"] == forgot["receipt_id"] and receipt["erased"]["dynamodb"]["facts"] == 1


def test_an_expired_job_record_goes_with_the_user(service, aws):
    job = service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]}).body["jobs"][0]
    service.drain()
    table = boto3.client("dynamodb")
    key = {"pk": {"S": f"T#acme#J#{job['job_id']}"}, "sk": {"S": "JOB"}}
    past = {":past": {"N": str(int((datetime.now(UTC) - timedelta(days=1)).timestamp()))}}
    table.update_item(
        TableName=aws.table_name,
        Key=key,
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues=past,
    )
    receipt_id = service.call("DELETE", USER).headers["deletion-receipt"]
    assert "Item" not in table.get_item(TableName=aws.table_name, Key=key)  # not left for the TTL to take
    assert service.call("GET", f"{USER}/deletions/{receipt_id}").body["erased"]["dynamodb"]["jobs"] == 1


def test_a_receipt_past_its_retention_is_gone(service, aws):
    from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore, receipt_pk
    from hippocampus.adapters.dynamodb_table import Table

    receipt_id = service.call("DELETE", USER).headers["deletion-receipt"]
    assert service.call("GET", f"{USER}/deletions/{receipt_id}").status == 200
    table = boto3.client("dynamodb")
    key = {"pk": {"S": receipt_pk("acme", receipt_id)}, "sk": {"S": "RECEIPT"}}
    past = {":past": {"N": str(int((datetime.now(UTC) - timedelta(seconds=1)).timestamp()))}}
    table.update_item(
        TableName=aws.table_name,
        Key=key,
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues=past,
    )
    assert DynamoReceiptStore(Table(aws.table_name, lambda: table)).get_receipt("acme", receipt_id) is None
    assert service.call("GET", f"{USER}/deletions/{receipt_id}").status == 404


def vectorised(aws, prefix: str) -> int:
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    return sum("vector_model" in item for item in items if item["sk"]["S"].startswith(prefix))


def test_deleting_a_fact_a_record_or_an_episode_leaves_a_receipt_of_that_one(service, aws):
    service.call("POST", USER, {"items": [{"id": "f1", "text": "Prefers SMS over email.", "infer": False}]})
    service.call("POST", USER, {"items": [{"id": "t1", "text": "I live in Paris and I sell candles."}]})
    service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Berlin."}]})
    service.drain()
    assert vectorised(aws, "FACT#") == 1

    fact = service.call("DELETE", f"{USER}/facts/f1")
    receipt = service.call("GET", f"{USER}/deletions/{fact.headers['deletion-receipt']}").body
    assert (receipt["scope"], receipt["target_id"]) == ("fact", "f1")
    assert receipt["erased"]["dynamodb"]["facts"] == 1 and receipt["erased"]["vectors"]["facts"] == 1

    records = service.call("GET", f"{USER}/records", query={"include_invalidated": "true"}).body["items"]
    berlin = next(r for r in records if "Berlin" in r["text"])
    vectors_before = vectorised(aws, "RECORD#")
    gone = service.call("DELETE", f"{USER}/records/{berlin['id']}")
    receipt = service.call("GET", f"{USER}/deletions/{gone.headers['deletion-receipt']}").body
    assert (receipt["scope"], receipt["target_id"], receipt["erased"]["dynamodb"]["records"]) == (
        "record",
        berlin["id"],
        1,
    )
    assert receipt["erased"]["vectors"]["records"] == vectors_before - vectorised(aws, "RECORD#")

    taught = [r for r in records if r["episode_ids"] == ["t1"]]
    forgot = service.call("DELETE", f"{USER}/episodes/t1")
    assert forgot.status == 202 and forgot.body["receipt_id"] == forgot.headers["deletion-receipt"]
    receipt = service.call("GET", f"{USER}/deletions/{forgot.body['receipt_id']}").body
    erased = receipt["erased"]
    assert (receipt["scope"], receipt["target_id"]) == ("episode", "t1")
    assert (erased["dynamodb"]["episodes"], erased["dynamodb"]["records"]) == (1, len(taught))
    # t1 came alone in its request: its payload held only it, and goes.
    assert erased["s3"]["raw_objects"] == 1 and erased["s3"]["raw_items_blanked"] == 0
    assert erased["s3"]["history_objects"] >= 1  # every version that condensed it


def test_a_job_sent_again_after_its_retention_is_forgotten_with_both_references(service, aws):
    """A job id comes back after its record expired: two references name it until DynamoDB removes
    the expired one, and the delete still goes through (BatchGetItem refuses a key given twice)."""
    job = service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]}).body["jobs"][0]
    table = boto3.client("dynamodb")
    ref = {
        "pk": {"S": "T#acme#U#alice#I"},
        "sk": {"S": f"JOB#0000000000001#{job['job_id']}"},
        "generation": {"N": "0"},
    }
    table.put_item(TableName=aws.table_name, Item=ref)  # the expired one's, still there
    answer = service.call("DELETE", USER)
    assert answer.status == 204, answer.body
    receipt = service.call("GET", f"{USER}/deletions/{answer.headers['deletion-receipt']}").body
    assert receipt["erased"]["dynamodb"]["job_references"] == 2
    assert receipt["erased"]["queue"]["messages_skipped"] == 1
