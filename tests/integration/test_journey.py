"""Every route of docs/api.md through the real handlers, with moto standing in for AWS."""

import json

import pytest

from hippocampus.contracts import routes

USER = "/v1/tenants/acme/users/alice/memory"


def ingest(service, items, **kwargs):
    return service.call("POST", USER, {"items": items}, **kwargs)


def test_health_and_openapi(service):
    assert service.call("GET", "/v1/health").body == {"status": "ok"}
    document = service.call("GET", "/v1/openapi.json").body
    assert document["openapi"].startswith("3.1")
    served = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    expected = {(r.method, r.path) for r in routes.ROUTES if r.path != "/v1/openapi.json"}
    assert expected <= served
    assert "ErrorEnvelope" in document["components"]["schemas"]
    post = document["paths"][routes.MEMORY_PATH]["post"]
    assert "422" in post["responses"]


def test_empty_user_reads_as_version_zero(service):
    response = service.call("GET", USER)
    assert response.status == 200
    assert response.body == {
        "tenant_id": "acme",
        "user_id": "alice",
        "memory": None,
        "version": 0,
        "word_count": 0,
        "updated_at": None,
        "facts": [],
    }
    assert response.headers["etag"] == '"0"'


def test_ingest_condense_and_read(service):
    accepted = ingest(
        service,
        [
            {
                "id": "turn-1",
                "user_assistant_pairs": [{"user": "My name is Alice, I sell candles.", "assistant": "Nice!"}],
                "user_name": "Alice",
                "metadata": {"channel": "web"},
            },
            {"id": "pref_dark_mode", "text": "Prefers dark mode.", "infer": False},
        ],
    )
    assert accepted.status == 202
    turn, fact = accepted.body["jobs"]
    assert turn["status"] == "queued" and turn["item_id"] == "turn-1"
    assert fact["status"] == "completed"
    assert service.drain() == 2  # the turn, and the request for the fact's vector
    job = service.call("GET", f"/v1/tenants/acme/jobs/{turn['job_id']}").body
    assert job["status"] == "completed" and job["memory_version"] == 1 and job["error"] is None
    memory = service.call("GET", USER)
    assert memory.body["version"] == 1 and "candles" in memory.body["memory"]
    assert memory.body["word_count"] == len(memory.body["memory"].split())
    assert memory.headers["etag"].startswith('"1-')  # version 1, and a digest of the facts
    assert [f["id"] for f in memory.body["facts"]] == ["pref_dark_mode"]
    assert memory.body["facts"][0]["text"] == "Prefers dark mode."


def test_same_item_twice_returns_the_original_job(service):
    item = {"id": "turn-1", "text": "I live in Lisbon."}
    first = ingest(service, [item]).body["jobs"][0]
    second = ingest(service, [item]).body["jobs"][0]
    assert second["job_id"] == first["job_id"]
    assert len(service.receive()) == 1


def test_changed_content_under_same_id_is_a_new_job(service):
    first = ingest(service, [{"id": "turn-1", "text": "I live in Lisbon."}]).body["jobs"][0]
    second = ingest(service, [{"id": "turn-1", "text": "I live in Porto."}]).body["jobs"][0]
    assert second["job_id"] != first["job_id"]


def test_another_tenants_job_is_404(service):
    job = ingest(service, [{"text": "I live in Lisbon."}]).body["jobs"][0]
    response = service.call("GET", f"/v1/tenants/other/jobs/{job['job_id']}")
    assert response.status == 404 and response.body["error"]["code"] == "not_found"


def test_history_newest_first_with_limit(service):
    for n in range(3):
        ingest(service, [{"text": f"Fact number {n}: the user owns {n + 1} cats."}])
        service.drain()
    history = service.call("GET", USER + "/history", query={"limit": "2"}).body["versions"]
    assert [v["version"] for v in history] == [3, 2]
    assert all(len(v["job_ids"]) == 1 for v in history)
    too_many = service.call("GET", USER + "/history", query={"limit": "101"})
    assert too_many.status == 422 and too_many.body["error"]["details"][0]["field"] == "limit"


def test_put_with_expected_version_and_if_match(service):
    put = service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    assert put.status == 200 and put.body["version"] == 1 and put.headers["etag"] == '"1"'
    stale = service.call("PUT", USER, {"memory": "Alice sells soap.", "expected_version": 0})
    assert stale.status == 409 and stale.body["error"]["code"] == "version_conflict"
    by_header = service.call("PUT", USER, {"memory": "Alice sells soap."}, headers={"If-Match": '"1"'})
    assert by_header.status == 200 and by_header.body["memory"] == "Alice sells soap."
    missing = service.call("PUT", USER, {"memory": "Alice sells wax."})
    assert missing.status == 422 and missing.body["error"]["details"][0]["field"] == "expected_version"
    too_long = service.call("PUT", USER, {"memory": "word " * 51, "expected_version": 2})
    assert too_long.status == 422 and too_long.body["error"]["details"][0]["field"] == "memory"
    assert service.call("GET", USER).body["memory"] == "Alice sells soap."


def test_delete_forgets_everything(service, aws):
    ingest(service, [{"text": "Alice sells candles."}, {"id": "f1", "text": "Likes tea.", "infer": False}])
    service.drain()
    assert service.call("DELETE", USER).status == 204
    memory = service.call("GET", USER).body
    assert memory["memory"] is None and memory["version"] == 0 and memory["facts"] == []
    assert service.call("GET", USER + "/history").body == {"versions": []}
    import boto3

    listed = boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/acme/alice/")
    assert listed.get("KeyCount", 0) == 0


def test_fact_upsert_and_delete(service):
    ingest(service, [{"id": "f1", "text": "Likes tea.", "infer": False}])
    ingest(service, [{"id": "f1", "text": "Likes coffee.", "infer": False, "metadata": {"score": 0.5}}])
    facts = service.call("GET", USER).body["facts"]
    assert [(f["id"], f["text"], f["metadata"]) for f in facts] == [("f1", "Likes coffee.", {"score": 0.5})]
    assert service.call("DELETE", USER + "/facts/f1").status == 204
    again = service.call("DELETE", USER + "/facts/f1")
    assert again.status == 404 and again.body["error"]["status"] == 404


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"text": "a", "user_assistant_pairs": [{"user": "b"}]}, "items[0]"),
        ({}, "items[0]"),
        ({"text": "x" * 32_001}, "items[0].text"),
        ({"text": "ok", "custom_instructions": "x" * 2001}, "items[0].custom_instructions"),
        ({"text": "ok", "user_name": "x" * 129}, "items[0].user_name"),
        ({"text": "ok", "metadata": {"k": "x" * 16_400}}, "items[0].metadata"),
        ({"text": "ok", "additional_metadata": {"k": "x" * 1100}}, "items[0].additional_metadata"),
        ({"id": "bad id!", "text": "ok"}, "items[0].id"),
        ({"user_assistant_pairs": [{"user": "", "assistant": ""}]}, "items[0].user_assistant_pairs[0]"),
        ({"user_assistant_pairs": [{"user": "hi"}] * 51}, "items[0].user_assistant_pairs"),
        ({"text": "ok", "surprise": 1}, "items[0].surprise"),
    ],
)
def test_invalid_items_are_422_naming_the_field_and_change_nothing(service, item, field):
    response = ingest(service, [item])
    assert response.status == 422
    error = response.body["error"]
    assert error["code"] == "validation_error" and error["status"] == 422
    assert any(d["field"].startswith(field) for d in error["details"]), error
    assert service.receive() == []


def test_item_count_limits(service):
    assert ingest(service, []).status == 422
    assert ingest(service, [{"text": "x"}] * 101).status == 422


def test_fact_limit_per_user(service):
    facts = [{"id": f"f{n}", "text": f"fact {n}", "infer": False} for n in range(100)]
    assert ingest(service, facts).status == 202
    assert ingest(service, [dict(f, id=f"g{f['id']}") for f in facts]).status == 202
    over = ingest(service, [{"id": "one-more", "text": "too many", "infer": False}])
    assert over.status == 422 and over.body["error"]["code"] == "limit_exceeded"
    assert ingest(service, [{"id": "f1", "text": "replacing is fine", "infer": False}]).status == 202


def test_bad_identifiers_in_path_are_422(service):
    response = service.call("GET", "/v1/tenants/acme/users/bad%20user!/memory")
    assert response.status == 422
    assert response.body["error"]["details"][0]["field"] == "user_id"


def test_error_envelopes(service):
    malformed = service.call("POST", USER, raw_body="{not json")
    assert malformed.status == 400 and malformed.body["error"]["code"] == "malformed_json"
    unknown = service.call("GET", "/v1/nowhere")
    assert unknown.status == 404 and unknown.body["error"]["code"] == "not_found"
    wrong = service.call("PATCH", USER, {})
    assert wrong.status == 405 and "GET" in wrong.headers["allow"]
    big = service.call("POST", USER, raw_body=json.dumps({"items": [{"text": "x" * (1024 * 1024)}]}))
    assert big.status == 413 and big.body["error"]["code"] == "payload_too_large"
    assert service.receive() == []


def test_idempotency_key(service):
    body = [{"text": "I moved to Berlin."}]
    first = ingest(service, body, headers={"Idempotency-Key": "k-1"})
    replay = ingest(service, body, headers={"Idempotency-Key": "k-1"})
    assert first.status == replay.status == 202
    assert replay.body == first.body
    assert len(service.receive()) == 1
    conflict = ingest(service, [{"text": "I moved to Paris."}], headers={"Idempotency-Key": "k-1"})
    assert conflict.status == 409 and conflict.body["error"]["code"] == "idempotency_conflict"


def test_percent_encoded_identifiers_name_the_same_user(service):
    service.call(
        "PUT",
        "/v1/tenants/acme/users/alice%40example.com/memory",
        {"memory": "Encoded.", "expected_version": 0},
    )
    assert service.call("GET", "/v1/tenants/acme/users/alice@example.com/memory").body["memory"] == "Encoded."


def test_body_that_is_not_utf8_is_400(service):
    import base64

    from tests.support.lambda_harness import Context, api_event

    event = api_event("POST", USER, raw_body=base64.b64encode(b"\xff\xfe\x00garbage").decode())
    event["isBase64Encoded"] = True
    response = service.ingest.lambda_handler(event, Context())
    assert response["statusCode"] == 400 and json.loads(response["body"])["error"]["code"] == "malformed_json"


def test_a_deleted_fact_sent_again_comes_back(service):
    fact = {"id": "f1", "text": "Likes tea.", "infer": False}
    ingest(service, [fact])
    service.call("DELETE", USER + "/facts/f1")
    assert ingest(service, [fact]).body["jobs"][0]["status"] == "completed"
    assert [f["id"] for f in service.call("GET", USER).body["facts"]] == ["f1"]
