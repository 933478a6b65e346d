"""The table's Query reads past DynamoDB's 1 MB page (moto keeps the same limit): every item of a
partition, and the newest ones of a prefix, whatever the number of pages."""

import boto3
import pytest

from hippocampus.adapters.dynamodb_table import Table, key

PK = "T#acme#U#alice"
ITEMS = 30
PADDING = "x" * 100_000  # 30 items of 100 kB: at least three pages of 1 MB


@pytest.fixture
def table(aws):
    client = boto3.client("dynamodb")
    for number in range(ITEMS):
        client.put_item(
            TableName=aws.table_name,
            Item={**key(PK, f"FACT#{number:03d}"), "padding": {"S": PADDING}, "generation": {"N": "0"}},
        )
    client.put_item(TableName=aws.table_name, Item=key(PK, "MEMORY"))
    return Table(aws.table_name, lambda: client)


def sort_keys(items):
    return [item["sk"]["S"] for item in items]


def test_a_partition_longer_than_one_page_is_read_whole(table):
    assert sort_keys(table.query_partition(PK)) == [*(f"FACT#{n:03d}" for n in range(ITEMS)), "MEMORY"]


def test_a_prefix_and_a_start_key_read_their_range_across_pages(table):
    assert sort_keys(table.query_partition(PK, sk_prefix="FACT#")) == [f"FACT#{n:03d}" for n in range(ITEMS)]
    assert sort_keys(table.query_partition(PK, sk_prefix="FACT#", sk_from="FACT#005")) == [
        f"FACT#{n:03d}" for n in range(5, ITEMS)
    ]


def test_a_projection_reads_every_item(table):
    projected = list(table.query_partition(PK, projection="sk, #g"))
    assert len(projected) == ITEMS + 1 and "padding" not in projected[0]


@pytest.mark.parametrize("limit", [1, 9, 12, ITEMS, ITEMS + 5])
def test_the_newest_items_come_newest_first_however_many_pages_they_take(table, limit):
    newest = [f"FACT#{n:03d}" for n in reversed(range(ITEMS))][:limit]
    assert sort_keys(table.newest(PK, "FACT#", limit)) == newest
