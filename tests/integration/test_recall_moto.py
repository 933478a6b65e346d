"""Recall through the real handlers and adapters, with moto standing in for AWS: episodes and
vectors in DynamoDB, the query and context routes of the recall function (docs/api.md "Recall")."""

import json
import struct
from dataclasses import replace
from typing import Any

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_table import user_pk
from hippocampus.adapters.episode_snapshots import snapshot_key
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE, unpack
from hippocampus.contracts.recall_ports import Vector
from tests.support.fakes import ScriptedModel
from tests.support.vectors import values

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


def ingest(service: Any, items: list[dict[str, Any]], memory: str = MEMORY) -> None:
    assert service.call("POST", memory, {"items": items}).status == 202


def query(service: Any, text: str, memory: str = MEMORY, **options: Any) -> dict[str, Any]:
    response = service.call("POST", memory + "/query", {"query": text, **options})
    assert response.status == 200, response.body
    body: dict[str, Any] = response.body
    return body


@pytest.fixture
def seeded(service: Any) -> Any:
    ingest(
        service,
        [
            {"id": "pay", "text": "Pays every supplier through Stripe invoices.", "infer": False},
            {"id": "pet", "text": "Has a golden retriever called Biscuit.", "infer": False, "title": "pet"},
            {"id": "ship", "text": "Ships candles to **Canada**.", "infer": False, "is_markdown": True},
        ],
    )
    ingest(
        service,
        [
            {
                "id": "t1",
                "user_assistant_pairs": [{"user": "We moved our payments to Adyen.", "assistant": "Noted."}],
            },
            {"id": "t2", "text": "The shop opens a second store in Lyon.", "metadata": {"channel": "web"}},
        ],
    )
    assert service.drain() >= 3  # two turns and the facts' index request
    return service


def test_facts_and_episodes_get_their_vectors_in_the_table(seeded: Any, aws: Any) -> None:
    items = boto3.client("dynamodb").query(
        TableName=aws.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": user_pk(T, U)}},
    )["Items"]
    documents = [item for item in items if item["sk"]["S"].startswith(("FACT#", "EPISODE#"))]
    assert len(documents) == 5
    assert {item["vector_model"]["S"] for item in documents} == {"wordllama-l2-supercat@256"}
    # The scale (a 32-bit float), then a byte for each of the 256 dimensions.
    assert all(len(item[VECTOR_ATTRIBUTE]["B"]) == 260 for item in documents)


def test_vectors_stored_as_half_floats_before_are_read_alike_and_made_again_at_the_next_pass(
    seeded: Any, aws: Any
) -> None:
    """Items written before vectors were kept a byte a dimension hold 256 16-bit floats under
    `vector` (adapters/vector_codec.py): they rank as they did, and the indexer's next pass over
    the user gives them vectors of the same model as stored today."""
    dynamodb = boto3.client("dynamodb")
    before = query(seeded, "Stripe payments Lyon")["results"]
    pk = {"S": user_pk(T, U)}
    items = dynamodb.query(
        TableName=aws.table_name, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": pk}
    )["Items"]
    for item in (item for item in items if VECTOR_ATTRIBUTE in item):
        floats = values(unpack(item["vector_model"]["S"], item[VECTOR_ATTRIBUTE]["B"]))
        dynamodb.update_item(
            TableName=aws.table_name,
            Key={"pk": pk, "sk": item["sk"]},
            UpdateExpression=f"SET vector = :half REMOVE {VECTOR_ATTRIBUTE}",
            ExpressionAttributeValues={":half": {"B": struct.pack(f"<{len(floats)}e", *floats)}},
        )
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    wiring.reset()  # a function that has not read this user: every vector from the table
    after = query(seeded, "Stripe payments Lyon")["results"]
    assert [r["id"] for r in after] == [r["id"] for r in before]
    assert [r["score"] for r in after] == pytest.approx([r["score"] for r in before], abs=0.002)
    wiring.indexer().index_user(T, U)
    items = dynamodb.query(
        TableName=aws.table_name, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": pk}
    )["Items"]
    documents = [item for item in items if item["sk"]["S"].startswith(("FACT#", "EPISODE#"))]
    assert len(documents) == 5 and not any("vector" in item for item in documents)
    assert {len(item[VECTOR_ATTRIBUTE]["B"]) for item in documents} == {260}
    assert [r["id"] for r in query(seeded, "Stripe payments Lyon")["results"]] == [r["id"] for r in before]


def test_the_right_item_comes_first_for_exact_words_and_word_variants(seeded: Any) -> None:
    assert query(seeded, "Stripe")["results"][0]["id"] == "pay"
    assert query(seeded, "paying suppliers")["results"][0]["id"] == "pay"
    # The turn itself among the turns (the record the stand-in learned from it says the same).
    assert query(seeded, "stores Lyon", types=["fact", "episode"])["results"][0]["id"] == "t2"
    assert query(seeded, "Canada shipping")["results"][0]["id"] == "ship"
    body = query(seeded, "Stripe")
    assert body["retrieval"]["lexical_only"] is False and body["version"] == 1


def test_filters_types_and_the_memory_flag(seeded: Any) -> None:
    assert [
        r["id"] for r in query(seeded, "Lyon store", metadata_filters={"channel": ["web", "app"]})["results"]
    ] == ["t2"]
    assert {r["type"] for r in query(seeded, "payments Stripe Adyen", types=["episode"])["results"]} == {
        "episode"
    }
    assert query(seeded, "Stripe", include_memory=False)["memory"] is None


def test_another_users_items_never_appear(seeded: Any) -> None:
    other = "/v1/tenants/acme/users/bob/memory"
    ingest(seeded, [{"id": "bob-pay", "text": "Bob pays with Stripe too.", "infer": False}], other)
    seeded.drain()
    own = {"pay", "pet", "ship", "t1", "t2", *(r["id"] for r in records(seeded))}
    assert {r["id"] for r in query(seeded, "Stripe")["results"]} <= own
    assert [r["id"] for r in query(seeded, "Stripe", other)["results"]] == ["bob-pay"]


def test_delete_then_query_returns_nothing_and_a_replaced_fact_shows_its_new_text(seeded: Any) -> None:
    ingest(seeded, [{"id": "pay", "text": "Pays suppliers by bank transfer now.", "infer": False}])
    seeded.drain()
    assert [r["text"] for r in query(seeded, "pays suppliers")["results"] if r["id"] == "pay"] == [
        "Pays suppliers by bank transfer now."
    ]
    assert seeded.call("DELETE", MEMORY + "/facts/pet").status == 204
    assert "pet" not in {r["id"] for r in query(seeded, "golden retriever")["results"]}
    assert seeded.call("DELETE", MEMORY).status == 204
    assert query(seeded, "Stripe Adyen Lyon candles retriever")["results"] == []
    assert seeded.call("GET", MEMORY + "/episodes").body["episodes"] == []


def test_the_context_block_and_the_lists(seeded: Any) -> None:
    body = seeded.call(
        "POST", MEMORY + "/context", {"query": "how does the user pay suppliers?", "max_words": 40}
    ).body
    assert body["word_count"] <= 40 and body["sources"][0]["type"] == "memory"
    assert {"type": "fact", "id": "pay"} in body["sources"]
    episodes = seeded.call("GET", MEMORY + "/episodes", query={"limit": "1"}).body
    assert [e["id"] for e in episodes["episodes"]] == ["t2"] and episodes["next_cursor"]
    rest = seeded.call("GET", MEMORY + "/episodes", query={"cursor": episodes["next_cursor"]}).body
    assert [e["id"] for e in rest["episodes"]] == ["t1"] and rest["next_cursor"] is None
    facts = seeded.call("GET", MEMORY + "/facts").body["facts"]
    assert {f["id"] for f in facts} == {"pay", "pet", "ship"}


def test_a_bad_body_is_a_422_envelope(seeded: Any) -> None:
    response = seeded.call("POST", MEMORY + "/query", {"query": "x", "top_k": 0})
    assert response.status == 422 and response.body["error"]["details"][0]["field"] == "top_k"


def test_a_tenant_is_reindexed_after_a_model_change(seeded: Any, aws: Any, monkeypatch: Any) -> None:
    from hippocampus import wiring
    from hippocampus.adapters.sqs import SqsJobQueue
    from tests.support.lambda_harness import Service
    from tools.reindex import reindex

    monkeypatch.setenv("MEMORY_EMBEDDING_DIMENSIONS", "128")  # another size: another model
    wiring.reset()
    service = Service(aws.queue_url, boto3.client("sqs"))
    assert query(service, "Stripe")["retrieval"]["lexical_only"]  # old vectors are not compared
    dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    assert reindex(dynamodb, SqsJobQueue(aws.queue_url, lambda: sqs), aws.table_name, T) == 1
    assert service.drain() == 1
    models = {
        item["vector_model"]["S"]
        for item in dynamodb.scan(TableName=aws.table_name)["Items"]
        if item["sk"]["S"].startswith(("FACT#", "EPISODE#"))
    }
    assert models == {"wordllama-l2-supercat@128"}
    assert not query(service, "Stripe")["retrieval"]["lexical_only"]


def test_only_the_newest_episodes_are_kept(service: Any, aws: Any, monkeypatch: Any) -> None:
    from hippocampus import wiring
    from tests.support.lambda_harness import Service

    monkeypatch.setenv("MEMORY_MAX_EPISODES", "2")
    wiring.reset()
    capped = Service(aws.queue_url, boto3.client("sqs"))
    for index in range(3):
        ingest(capped, [{"id": f"t{index}", "text": f"Turn {index} about candles."}])
        capped.drain()
    assert [e["id"] for e in capped.call("GET", MEMORY + "/episodes").body["episodes"]] == ["t2", "t1"]
    memory_item = boto3.client("dynamodb").get_item(
        TableName=aws.table_name, Key={"pk": {"S": user_pk(T, U)}, "sk": {"S": "MEMORY"}}
    )["Item"]
    assert (
        memory_item["episode_count"]["N"] == "2"
    )  # reset by the trim: the next turn trims again only past the cap


def test_an_embedding_outage_never_holds_back_the_users_turns(aws: Any, monkeypatch: Any) -> None:
    from hippocampus import wiring
    from tests.support.lambda_harness import Service

    # Embeddings from an endpoint that refuses connections; condensation by the offline model.
    monkeypatch.setenv("MEMORY_LLM_PROVIDER", "offline")
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    wiring.reset()
    service = Service(aws.queue_url, boto3.client("sqs"))
    ingest(service, [{"id": "pay", "text": "Pays through Stripe.", "infer": False}])
    ingest(service, [{"id": "t1", "text": "The shop opens in Lyon."}])
    service.drain(rounds=3)
    job = service.call("GET", MEMORY + "/episodes").body["episodes"]
    assert [e["id"] for e in job] == ["t1"]  # condensed, though the facts' index request keeps failing
    body = query(service, "Stripe")
    assert body["results"][0]["id"] == "pay" and body["retrieval"]["lexical_only"]


def test_index_requests_travel_in_a_message_group_of_their_own(service: Any, aws: Any) -> None:
    # In SQS, a failing message hides the rest of its group while it is in flight: an index
    # request that keeps failing must never sit in front of the user's turns.
    ingest(service, [{"id": "pay", "text": "Pays through Stripe.", "infer": False}])
    ingest(service, [{"id": "t1", "text": "The shop opens in Lyon."}])
    messages = boto3.client("sqs").receive_message(
        QueueUrl=aws.queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
    )["Messages"]
    groups = {
        ("index" if '"kind":"index"' in m["Body"] else "turn"): m["Attributes"]["MessageGroupId"]
        for m in messages
    }
    assert set(groups) == {"index", "turn"} and groups["index"] != groups["turn"]


def test_the_indexer_after_a_condensation_reads_no_memory_item_again(service: Any, aws: Any) -> None:
    ingest(service, [{"id": "pay", "text": "Pays every supplier through Stripe.", "infer": False}])
    ingest(service, [{"id": "t1", "text": "The shop opens a second store in Lyon."}])
    calls: list[str] = []
    aws_clients.client("dynamodb").meta.events.register(
        "before-call.dynamodb", lambda model, **_: calls.append(model.name)
    )
    assert service.drain() == 2  # the turn and the fact's index request, in one batch
    reads = [name for name in calls[calls.index("TransactWriteItems") + 1 :] if name in DYNAMODB_READS]
    # After the condensation's write: the history's look at the generation (deletion wins), then the
    # indexer, handed that generation: the facts and the newest episodes, no GetItem of its own; then
    # the stored copy of the episodes kept: the memory item, the episodes since the copy, and the
    # memory item again after storing it (adapters/episode_snapshots.py).
    assert reads == ["GetItem", "Query", "Query", "GetItem", "Query", "GetItem"]
    assert query(service, "Lyon store", types=["episode"])["results"][0]["id"] == "t1"
    assert not query(service, "Lyon store")["retrieval"]["lexical_only"]


DYNAMODB_READS = {"GetItem", "Query", "BatchGetItem"}


def test_facts_and_turns_of_one_request_are_queued_in_one_call(service: Any, aws: Any) -> None:
    # The index request rides with the turns: one SendMessageBatch, no SendMessage of its own.
    calls: list[str] = []
    aws_clients.client("sqs").meta.events.register(
        "before-call.sqs", lambda model, **_: calls.append(model.name)
    )
    ingest(
        service,
        [
            {"id": "pay", "text": "Pays through Stripe.", "infer": False},
            {"id": "t1", "text": "Opens in Lyon."},
        ],
    )
    assert calls == ["SendMessageBatch"]
    assert service.drain() == 2  # the turn and the index request
    assert not query(service, "Stripe")["retrieval"]["lexical_only"]


# --- records: ranked with the facts and episodes, given vectors by the indexer ------------------

RECORD_KEYS = ("op", "record_id", "text", "category", "valid_from", "source_items")


def answer(summary: str, *operations: dict[str, Any]) -> str:
    """A structured condensation answer (contracts/records.py ANSWER_SCHEMA)."""
    ops = [{k: op.get(k) for k in RECORD_KEYS} for op in operations]
    return json.dumps({"summary": summary, "operations": ops})


def records(service: Any, **query: str) -> list[dict[str, Any]]:
    response = service.call("GET", MEMORY + "/records", query=query or None)
    assert response.status == 200, response.body
    items: list[dict[str, Any]] = response.body["items"]
    return items


def move_to_berlin(service: Any) -> dict[str, str]:
    """Alice lived in Paris (told on 8 May 2023) and moved to Berlin (1 March 2024); a fact too."""
    ingest(service, [{"id": "pay", "text": "Pays suppliers through Stripe.", "infer": False}])
    paris = {"op": "add", "text": "Alice lives in Paris.", "category": "location", "source_items": ["t1"]}
    service.condense_with(ScriptedModel(answer("Alice makes candles.", paris)))
    ingest(service, [{"id": "t1", "text": "I live in Paris.", "occurred_at": "2023-05-08T10:00:00Z"}])
    assert service.drain() >= 1
    (first,) = records(service)
    moved = {
        "op": "invalidate",
        "record_id": first["id"],
        "text": "Alice lives in Berlin.",
        "source_items": ["t2"],
    }
    service.condense_with(ScriptedModel(answer("Alice makes candles.", moved)))
    ingest(service, [{"id": "t2", "text": "We moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"}])
    assert service.drain() >= 1
    (berlin,) = records(service)
    return {"paris": first["id"], "berlin": berlin["id"]}


def record_items(aws: Any) -> dict[str, dict[str, Any]]:
    items = boto3.client("dynamodb").query(
        TableName=aws.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :records)",
        ExpressionAttributeValues={":pk": {"S": user_pk(T, U)}, ":records": {"S": "RECORD#"}},
    )["Items"]
    return {item["id"]["S"]: item for item in items}


def test_current_records_get_vectors_and_are_ranked_with_the_facts_and_episodes(
    service: Any, aws: Any
) -> None:
    ids = move_to_berlin(service)
    stored = record_items(aws)
    assert stored[ids["berlin"]]["vector_model"]["S"] == "wordllama-l2-supercat@256"
    assert len(stored[ids["berlin"]][VECTOR_ATTRIBUTE]["B"]) == 260
    assert VECTOR_ATTRIBUTE not in stored[ids["paris"]]  # the invalidation rewrote it whole, without one
    body = query(service, "where does Alice live?")
    assert body["results"][0]["id"] == ids["berlin"] and body["results"][0]["type"] == "record"
    assert not body["retrieval"]["lexical_only"]
    found = query(service, "Alice lives in Paris", types=["record"], top_k=50)["results"]
    assert [r["id"] for r in found] == [ids["berlin"]]  # the invalidated record never
    assert all(
        r["type"] == "fact" for r in query(service, "Alice lives Berlin Stripe", types=["fact"])["results"]
    )
    context = service.call(
        "POST", MEMORY + "/context", {"query": "where does Alice live?", "max_words": 30}
    ).body
    assert "- Alice lives in Berlin. (since 1 March 2024)" in context["context"]
    assert context["word_count"] <= 30 and {"type": "record", "id": ids["berlin"]} in context["sources"]


def test_a_record_invalidated_after_it_was_read_for_indexing_gets_no_vector(service: Any, aws: Any) -> None:
    ids = move_to_berlin(service)
    store = wiring.recall_store()
    assert store.unindexed(T, U, "another-model@3", 100) != []  # every document, for another model
    due = [d for d in store.unindexed(T, U, "another-model@3", 100) if d.kind == "record"]
    assert [d.key for d in due] == [f"RECORD#{ids['berlin']}"]  # the current record only
    paris = replace(due[0], key=f"RECORD#{ids['paris']}")  # as read before its invalidation
    assert not store.set_vector(T, U, paris, Vector.of("another-model@3", (1.0, 0.0, 0.0)))
    assert store.set_vector(T, U, due[0], Vector.of("another-model@3", (1.0, 0.0, 0.0)))
    assert VECTOR_ATTRIBUTE not in record_items(aws)[ids["paris"]]


def test_the_first_query_reads_the_memory_facts_and_records_in_one_request(service: Any, aws: Any) -> None:
    ids = move_to_berlin(service)
    # A function that holds no copy of the user's episodes, and no stored copy to start from.
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    wiring.recall_service.cache_clear()
    wiring.recall_store.cache_clear()
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((model.name, params))

    aws_clients.client("dynamodb").meta.events.register("provide-client-params.dynamodb", record)
    body = query(service, "how does Alice pay, where does she live?")
    assert {"pay", ids["berlin"]} <= {r["id"] for r in body["results"]}
    # One Query from FACT# on (the facts, the memory item, the records), then the episodes.
    assert [name for name, _ in calls] == ["Query", "Query"]
    head = calls[0][1]
    assert head["KeyConditionExpression"] == "pk = :pk AND sk >= :from"
    assert head["ExpressionAttributeValues"][":from"] == {"S": "FACT#"}
    # A memory read still stops at MEMORY: no record.
    calls.clear()
    memory = service.call("GET", MEMORY).body
    assert "records" not in memory and all("RECORD#" not in str(params) for _, params in calls)
