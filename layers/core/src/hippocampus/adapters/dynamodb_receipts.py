"""Deletion receipts in the memory table (docs/architecture.md "Storage layout").

A receipt is one item `T#<tenant>#DEL#<receipt id>` / `RECEIPT`, outside the user's partitions (a
delete of the user never sweeps it), holding the receipt as compact JSON, with a TTL of
DELETION_RECEIPT_RETENTION_DAYS.
"""

from typing import Final

from hippocampus.adapters.dynamodb_items import decoded, is_expired
from hippocampus.adapters.dynamodb_table import Table, key, values
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.receipts import DeletionReceipt

RECEIPT_SK: Final = "RECEIPT"


def receipt_pk(tenant_id: str, receipt_id: str) -> str:
    return f"T#{tenant_id}#DEL#{receipt_id}"


class DynamoReceiptStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def put_receipt(self, receipt: DeletionReceipt) -> None:
        item = {
            PK: receipt_pk(receipt.tenant_id, receipt.receipt_id),
            SK: RECEIPT_SK,
            "receipt": receipt.model_dump_json(),
            TTL: int(receipt.expires_at.timestamp()),
        }
        self._table.client().put_item(TableName=self._table.name, Item=values(item))

    def get_receipt(self, tenant_id: str, receipt_id: str) -> DeletionReceipt | None:
        raw = (
            self._table.client()
            .get_item(
                TableName=self._table.name,
                Key=key(receipt_pk(tenant_id, receipt_id), RECEIPT_SK),
                ConsistentRead=True,
            )
            .get("Item")
        )
        if not raw:
            return None
        item = decoded(raw)
        if is_expired(item, self._table.epoch()):
            return None
        return DeletionReceipt.model_validate_json(item["receipt"])
