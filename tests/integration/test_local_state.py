"""The local stack's data directory: items and objects survive a restart, as last acknowledged;
the journal is compacted at each start; a torn last record is dropped (docs/operations.md "Local stack")."""

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from local_state_support import REGION, DurableMoto, durable_moto

from local_stack.journal import StateError, encode, header, read, write_atomically
from local_stack.moto_endpoint import MotoEndpoint
from local_stack.paths import ACCOUNT_ID, REPO_ROOT


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[DurableMoto]:
    with durable_moto(tmp_path / "state") as stack:
        yield stack


def _key(pk: str, sk: str = "S") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _items(moto: DurableMoto) -> list[dict[str, Any]]:
    dynamodb = moto.client("dynamodb")
    items = []
    for table in dynamodb.list_tables()["TableNames"]:
        for page in dynamodb.get_paginator("scan").paginate(TableName=table):
            items += [(table, item) for item in page["Items"]]
    return sorted(items, key=repr)


def _objects(moto: DurableMoto) -> dict[str, tuple[bytes, str, dict[str, str]]]:
    s3, bucket = moto.client("s3"), moto.res.bucket_name
    found = {}
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        got = s3.get_object(Bucket=bucket, Key=entry["Key"])
        found[entry["Key"]] = (got["Body"].read(), got["ContentType"], got["Metadata"])
    return found


def _write_items(moto: DurableMoto) -> None:
    dynamodb, table = moto.client("dynamodb"), moto.res.table_name
    for n in range(5):
        dynamodb.put_item(TableName=table, Item=_key(f"u{n}") | {"version": {"N": "0"}})
    dynamodb.update_item(
        TableName=table,
        Key=_key("u1"),
        UpdateExpression="SET version = version + :one, facts = :facts",
        ExpressionAttributeValues={
            ":one": {"N": "1"},
            ":facts": {"L": [{"S": "likes tea"}, {"B": b"\x00\xff"}]},
        },
    )
    dynamodb.delete_item(TableName=table, Key=_key("u2"))
    dynamodb.batch_write_item(
        RequestItems={
            table: [
                {"PutRequest": {"Item": _key("b1") | {"m": {"M": {"x": {"SS": ["a", "b"]}}}}}},
                {"DeleteRequest": {"Key": _key("u3")}},
            ]
        }
    )
    put = {"Put": {"TableName": table, "Item": _key("t1")}}
    dynamodb.transact_write_items(TransactItems=[put, {"Delete": {"TableName": table, "Key": _key("u4")}}])
    refused = {"Put": {"TableName": table, "Item": _key("t2"), "ConditionExpression": "attribute_exists(pk)"}}
    with pytest.raises(ClientError):  # rolled back: t3 must not appear either
        dynamodb.transact_write_items(
            TransactItems=[{"Put": {"TableName": table, "Item": _key("t3")}}, refused]
        )
    with pytest.raises(ClientError):
        dynamodb.put_item(TableName=table, Item=_key("u0"), ConditionExpression="attribute_not_exists(pk)")
    dynamodb.execute_statement(Statement=f"INSERT INTO \"{table}\" VALUE {{'pk': 'p1', 'sk': 'S'}}")


def _write_objects(moto: DurableMoto) -> None:
    s3, bucket = moto.client("s3"), moto.res.bucket_name
    for n in range(4):
        s3.put_object(
            Bucket=bucket, Key=f"raw/a/{n}.json", Body=b'{"n": %d}' % n, ContentType="application/json"
        )
    s3.put_object(Bucket=bucket, Key="raw/a/0.json", Body=b"second version", Metadata={"who": "test"})
    s3.delete_object(Bucket=bucket, Key="raw/a/1.json")
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "raw/a/2.json"}], "Quiet": True})
    s3.copy_object(
        Bucket=bucket, Key="history/copy.json", CopySource={"Bucket": bucket, "Key": "raw/a/3.json"}
    )


def test_items_and_objects_come_back_as_last_acknowledged(moto: DurableMoto) -> None:
    _write_items(moto)
    _write_objects(moto)
    items, objects = _items(moto), _objects(moto)
    assert {item["pk"]["S"] for _, item in items} == {"u0", "u1", "b1", "t1", "p1"}
    assert set(objects) == {"raw/a/0.json", "raw/a/3.json", "history/copy.json"}
    moto.restart()
    assert _items(moto) == items
    assert _objects(moto) == objects
    assert moto.restored is not None
    assert (moto.restored.kept["items"], moto.restored.kept["objects"]) == (5, 3)


def test_each_start_compacts_the_journal(moto: DurableMoto) -> None:
    _write_items(moto)
    journal = moto.directory / "journal"
    assert len(list(read(journal, "journal").records())) > 5  # type: ignore[union-attr]
    moto.restart()
    sizes = set()
    for _ in range(3):
        assert list(read(journal, "journal").records()) == []  # type: ignore[union-attr]
        sizes.add((moto.directory / "snapshot").stat().st_size)
        moto.restart()
    assert len(sizes) == 1  # restarts without changes do not grow anything
    assert len(_items(moto)) == 5


def test_a_torn_last_record_is_dropped_at_start(moto: DurableMoto) -> None:
    _write_items(moto)
    items = _items(moto)
    moto.stop()
    torn = encode({"s": "dynamodb", "a": ACCOUNT_ID, "r": REGION, "t": "x", "k": None, "i": {}})[:-7]
    with (moto.directory / "journal").open("ab") as journal:
        journal.write(torn)
    moto.start()
    assert moto.restored is not None and moto.restored.torn_bytes == len(torn)
    assert _items(moto) == items


def test_a_journal_already_in_the_snapshot_is_not_replayed(moto: DurableMoto) -> None:
    """A kill between writing the new snapshot and emptying the journal: the snapshot names it."""
    table = moto.res.table_name
    record = {"s": "dynamodb", "a": ACCOUNT_ID, "r": REGION, "t": table, "k": None, "i": _key("late")}
    gone = record | {"t": "a-table-no-longer-provisioned"}
    moto.stop()
    journal = header("journal")
    write_atomically(moto.directory / "snapshot", header("snapshot", covers=journal["id"]), [])
    write_atomically(moto.directory / "journal", journal, [record])
    moto.start()
    assert _items(moto) == []
    moto.stop()
    write_atomically(moto.directory / "journal", header("journal"), [record, gone])
    moto.start()
    assert [item["pk"]["S"] for _, item in _items(moto)] == ["late"]
    assert moto.restored is not None and moto.restored.dropped == 1


def test_a_second_stack_on_the_same_directory_is_refused(moto: DurableMoto) -> None:
    with pytest.raises(StateError, match="another local stack"):
        MotoEndpoint(data_dir=moto.directory).start()


def test_in_memory_has_no_data_directory() -> None:
    endpoint = MotoEndpoint()
    endpoint.start()
    try:
        assert endpoint.state is None and endpoint.restore() is None
    finally:
        endpoint.stop()


# --- SIGKILL: a separate process, killed while writers are busy ----------------------------------

_SERVE = """
import sys, time
from pathlib import Path
from local_stack import defaults
from local_stack.aws import provision
from local_stack.moto_endpoint import MotoEndpoint
endpoint = MotoEndpoint(data_dir=Path(sys.argv[1]))
url = endpoint.start()
provision(url, "us-east-1", defaults.load().config)
endpoint.restore()
print(url, flush=True)
time.sleep(120)
"""


def _writer(url: str, table: str, bucket: str, number: int, acked: list[str]) -> None:
    config = Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5)
    dynamodb, s3 = (
        boto3.client(
            s,
            endpoint_url=url,
            region_name=REGION,
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=config,
        )
        for s in ("dynamodb", "s3")
    )
    for n in range(10_000):
        name = f"w{number}-{n}"
        try:
            dynamodb.put_item(TableName=table, Item=_key(name))
            s3.put_object(Bucket=bucket, Key=f"raw/{name}", Body=name.encode())
        except (BotoCoreError, ClientError):
            return  # killed
        acked.append(name)


def test_nothing_acknowledged_is_lost_to_sigkill(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(directory)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://"), url
        table, bucket = "hippocampus-local-memory", "hippocampus-local-archive"
        acked: list[str] = []
        writers = [threading.Thread(target=_writer, args=(url, table, bucket, n, acked)) for n in range(4)]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 30  # a busy machine starts the writers slowly: wait for them
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.kill()  # SIGKILL, mid-write
        for writer in writers:
            writer.join(timeout=30)
    finally:
        process.kill()
        process.wait(timeout=10)
    assert len(acked) > 20, "the writers did not get going"
    with durable_moto(directory) as moto:
        stored = {item["pk"]["S"] for _, item in _items(moto)}
        assert set(acked) <= stored
        assert {f"raw/{name}" for name in acked} <= set(_objects(moto))
