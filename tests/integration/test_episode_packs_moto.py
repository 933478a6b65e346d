"""Episodes packed many to an item (adapters/episode_packs.py) on moto: a first query reads a few
items and answers as a whole read does; forgetting a turn or the user leaves it in no pack, even
when a pack is being written at the same moment; packs of another model or of trimmed turns go."""

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.episode_packs import PACK_PREFIX, decode
from hippocampus.contracts.models import Episode
from tests.support.lambda_harness import Service

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"
START = datetime(2026, 1, 1, tzinfo=UTC)


def write_turns(aws: Any, count: int, first: int = 0) -> None:
    """Turns stored as the condenser stores them (the episodes, counted on the memory), then indexed
    as after a condensation: vectors, then packs."""
    service = Service(aws.queue_url, boto3.client("sqs"))
    if first == 0:  # the user's memory item, through the API
        assert (
            service.call("PUT", MEMORY, {"memory": "Runs a candle shop.", "expected_version": 0}).status
            == 200
        )
    episodes = [
        Episode(
            id=f"t{n}",
            job_id=f"job-{n:05d}",
            text=f"User: order {n} of wax for the shop in city {n % 7}.",
            created_at=START + timedelta(minutes=n),
        )
        for n in range(first, first + count)
    ]
    table = Table(aws.table_name, lambda: aws_clients.client("dynamodb"))
    for start in range(0, len(episodes), 99):
        table.transact(wiring.episode_store().counted_puts(T, U, 0, episodes[start : start + 99]))
    wiring.indexer().index_user(T, U, 10_000)


def items(aws: Any) -> list[dict[str, Any]]:
    return boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]


def stored(aws: Any) -> str:
    """Everything the table holds for the user, the packs' episodes unpacked: what a forget must clear."""
    unpacked = [decode(item["episodes"]["B"]) for item in items(aws) if "episodes" in item]
    return str(items(aws)) + str(unpacked)


def packs(aws: Any) -> int:
    return sum(1 for item in items(aws) if item["sk"]["S"].startswith(PACK_PREFIX) and "episodes" in item)


def query(service: Service, text: str) -> list[str]:
    response = service.call("POST", MEMORY + "/query", {"query": text, "types": ["episode"], "top_k": 5})
    assert response.status == 200, response.body
    return [result["id"] for result in response.body["results"]]


@pytest.fixture
def reads(aws: Any) -> list[int]:
    """The number of items each DynamoDB Query of the functions returned."""
    counts: list[int] = []
    aws_clients.client("dynamodb").meta.events.register(
        "after-call.dynamodb.Query", lambda parsed, **_: counts.append(len(parsed.get("Items", [])))
    )
    return counts


def test_a_first_query_reads_the_packs_and_answers_as_a_whole_read(aws: Any, reads: list[int]) -> None:
    write_turns(aws, 250)
    assert packs(aws) == 2  # 200 packed; the last 50 wait for the next hundred
    service = Service(aws.queue_url, boto3.client("sqs"))
    reads.clear()
    packed_answer = query(service, "order 123 of wax")
    assert packed_answer[0] == "t123"
    # The memory with its facts, the two packs (and the revision), the 50 turns after them.
    assert sum(reads) < 60 and max(reads) <= 51
    wiring.reset()  # another function, whose first read is whole: packs dropped, the same answer
    boto3.client("dynamodb").batch_write_item(
        RequestItems={
            aws.table_name: [
                {"DeleteRequest": {"Key": {"pk": item["pk"], "sk": item["sk"]}}}
                for item in items(aws)
                if item["sk"]["S"].startswith(PACK_PREFIX)
            ]
        }
    )
    assert query(Service(aws.queue_url, boto3.client("sqs")), "order 123 of wax") == packed_answer


def test_forgetting_a_turn_leaves_it_in_no_pack(aws: Any) -> None:
    write_turns(aws, 120)
    assert packs(aws) == 1
    service = Service(aws.queue_url, boto3.client("sqs"))
    assert service.call("DELETE", MEMORY + "/episodes/t42").status == 202
    assert "order 42 of wax" not in stored(aws) and packs(aws) == 0
    wiring.reset()
    assert "t42" not in query(Service(aws.queue_url, boto3.client("sqs")), "order 42 of wax")
    wiring.indexer().index_user(T, U, 10_000)  # the next pass packs what is left
    assert packs(aws) == 1 and "order 42 of wax" not in stored(aws) and "order 43 of wax" in stored(aws)


def test_a_pack_written_while_a_turn_is_forgotten_never_holds_it(aws: Any, monkeypatch: Any) -> None:
    write_turns(aws, 99)  # one short of a pack: the next turn makes one
    service = Service(aws.queue_url, boto3.client("sqs"))
    real = Table.transact

    def forget_first(self: Table, transaction: list[dict[str, Any]]) -> None:
        if any(PACK_PREFIX in str(op.get("Put", {}).get("Item", {}).get("sk", "")) for op in transaction):
            monkeypatch.setattr(Table, "transact", real)
            # The pack writer has read the turns; the forget commits before its transaction does.
            assert service.call("DELETE", MEMORY + "/episodes/t7").status == 202
        real(self, transaction)

    monkeypatch.setattr(Table, "transact", forget_first)
    table = Table(aws.table_name, lambda: aws_clients.client("dynamodb"))
    late = Episode(
        id="t99", job_id="job-00099", text="User: order 99.", created_at=START + timedelta(minutes=99)
    )
    table.transact(wiring.episode_store().counted_puts(T, U, 0, [late]))
    monkeypatch.setattr(Table, "transact", forget_first)
    wiring.indexer().index_user(T, U, 10_000)
    assert "order 7 of wax" not in stored(aws) and "order 8 of wax" in stored(aws)


def test_deleting_the_user_deletes_the_packs(aws: Any) -> None:
    write_turns(aws, 110)
    assert packs(aws) == 1
    assert Service(aws.queue_url, boto3.client("sqs")).call("DELETE", MEMORY).status == 204
    assert not any(item["sk"]["S"].startswith(PACK_PREFIX) for item in items(aws))


def test_packs_of_another_model_are_replaced(aws: Any, monkeypatch: Any) -> None:
    write_turns(aws, 150)
    monkeypatch.setenv("MEMORY_EMBEDDING_DIMENSIONS", "128")  # another size: another model
    wiring.reset()
    while wiring.indexer().index_user(T, U, 10_000):
        pass
    models = {
        item["vector_model"]["S"]
        for item in items(aws)
        if item["sk"]["S"].startswith(PACK_PREFIX) and "episodes" in item
    }
    assert models == {"wordllama-l2-supercat@128"}
    assert query(Service(aws.queue_url, boto3.client("sqs")), "order 77 of wax")[0] == "t77"


def test_packs_of_trimmed_turns_go(aws: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("MEMORY_MAX_EPISODES", "150")
    wiring.reset()
    write_turns(aws, 150)
    assert packs(aws) == 1
    service = Service(aws.queue_url, boto3.client("sqs"))
    for n in range(3):  # turns condensed past the cap: the oldest go
        items_sent = [
            {"id": f"new{n}-{i}", "text": f"We now ship order {n}-{i} to Porto."} for i in range(40)
        ]
        assert service.call("POST", MEMORY, {"items": items_sent}).status == 202
        service.drain()
    wiring.indexer().index_user(T, U, 10_000)
    packed = [item for item in items(aws) if item["sk"]["S"].startswith(PACK_PREFIX) and "episodes" in item]
    # The first pack's turns were all trimmed: it is gone with them.
    assert not any("order 5 of wax" in str(decode(item["episodes"]["B"])) for item in packed)
    assert query(service, "ship order 2-3 to Porto")[0] == "new2-3"
