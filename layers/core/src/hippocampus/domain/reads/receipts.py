"""A deletion receipt, read back (GET …/memory/deletions/{receipt_id}; docs/api.md "Deletion receipts")."""

from hippocampus.contracts.errors import NotFound
from hippocampus.contracts.ports import Tracing
from hippocampus.contracts.receipts import DeletionReceipt, ReceiptStore


class ReceiptService:
    def __init__(self, receipts: ReceiptStore, tracing: Tracing) -> None:
        self._receipts = receipts
        self._tracing = tracing

    def get_receipt(self, tenant_id: str, user_id: str, receipt_id: str) -> DeletionReceipt:
        """The receipt of a delete of this user; 404 for any other (unknown, expired, another user's)."""
        with self._tracing.span("dynamodb.get_receipt", tenant_id=tenant_id):
            receipt = self._receipts.get_receipt(tenant_id, receipt_id)
        if receipt is None or receipt.user_id != user_id:
            raise NotFound(f"deletion receipt '{receipt_id}' was not found")
        return receipt
