"""Deletion receipts (docs/api.md "Deletion receipts"): issued by each delete, read back by
GET …/memory/deletions/{receipt_id}."""

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from hippocampus.contracts.errors import NotFound
from hippocampus.contracts.ports import Tracing
from hippocampus.contracts.receipts import (
    DELETION_RECEIPT_RETENTION_DAYS,
    RECEIPT_ID_PREFIX,
    DeletionReceipt,
    DeletionScope,
    ErasedCounts,
    ReceiptStore,
)
from hippocampus.observability import logger


@dataclass(frozen=True)
class Deletion:
    """What a delete erased: whose, which item (None: the user), in which of the user's lives, when."""

    tenant_id: str
    user_id: str
    scope: DeletionScope
    target_id: str | None
    generation: int
    requested_at: datetime


def issue_receipt(
    receipts: ReceiptStore, deletion: Deletion, erased: ErasedCounts, completed_at: datetime
) -> DeletionReceipt:
    """Store the receipt of a delete that is done. Its counts are logged first (no content): should
    storing it fail (a 503 although the delete is done), the log still tells what went."""
    receipt = DeletionReceipt(
        receipt_id=RECEIPT_ID_PREFIX + secrets.token_hex(12),
        tenant_id=deletion.tenant_id,
        user_id=deletion.user_id,
        scope=deletion.scope,
        target_id=deletion.target_id,
        generation=deletion.generation,
        requested_at=deletion.requested_at,
        completed_at=completed_at,
        expires_at=completed_at + timedelta(days=DELETION_RECEIPT_RETENTION_DAYS),
        erased=erased,
    )
    counts = erased.model_dump()
    logger.info(
        "deleted",
        extra={
            "tenant_id": deletion.tenant_id,
            "scope": deletion.scope,
            "receipt_id": receipt.receipt_id,
            "erased": counts,
        },
    )
    receipts.put_receipt(receipt)
    return receipt


class ReceiptService:
    def __init__(self, receipts: ReceiptStore, tracing: Tracing) -> None:
        self._receipts = receipts
        self._tracing = tracing

    def get_receipt(self, tenant_id: str, user_id: str, receipt_id: str) -> DeletionReceipt:
        """The receipt of a delete in this scope (`user_id` a scope key: the user's, or an agent's of
        it); 404 for any other (unknown, expired, another user's or another scope's)."""
        with self._tracing.span("dynamodb.get_receipt", tenant_id=tenant_id):
            receipt = self._receipts.get_receipt(tenant_id, receipt_id)
        if receipt is None or receipt.scope_key != user_id:
            raise NotFound(f"deletion receipt '{receipt_id}' was not found")
        return receipt
