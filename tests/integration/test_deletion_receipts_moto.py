"""On DynamoDB and S3 (moto): forgetting a user leaves a receipt of what was erased, per store, in
counts that match what the stores held, with no content; it outlives the user and is the tenant's
and the user's only (docs/api.md "Deletion receipts")."""

import json
from collections import Counter

import boto3

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
        },
        "s3": {"raw_objects": objects["raw"], "history_objects": objects["history"], "object_versions": 0},
        "queue": {"messages_skipped": 1},
        "vectors": {"facts": vectors["FACT"], "episodes": vectors["EPISODE"], "records": vectors["RECORD"]},
    }
    assert receipt["generation"] == 1 and receipt["requested_at"] <= receipt["completed_at"]
    job = service.call("GET", f"{TENANT}/jobs/{in_flight.body['jobs'][0]['job_id']}").body
    assert job["status"] == "skipped"
    text = json.dumps(receipt)
    assert not any(word in text for word in ("Paris", "candle", "SMS", "Berlin"))  # counts, no content

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
        "messages_skipped": 0
    }
