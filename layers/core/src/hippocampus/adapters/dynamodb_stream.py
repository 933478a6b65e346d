"""The table's change stream read as stored changes (docs/architecture.md "Events"): a stream
record's keys say what the item is (the layout of adapters/dynamodb_table.py), its images what it
was and became. Items that are no event's (facts, episodes, indexes, usage, ...) read as None."""

import json
from collections.abc import Mapping
from typing import Any

from hippocampus.adapters.dynamodb_items import decoded
from hippocampus.adapters.dynamodb_receipts import RECEIPT_SK
from hippocampus.adapters.dynamodb_table import JOB_SK, MEMORY_SK, RECORD_PREFIX
from hippocampus.adapters.dynamodb_wire import from_wire
from hippocampus.contracts.events import ChangeKind, StoredChange
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.scopes import agent_scope


def stored_change(record: Mapping[str, Any]) -> StoredChange | None:
    """The change one stream record (as Lambda hands it) describes, or None."""
    stream = record.get("dynamodb") or {}
    keys = stream.get("Keys") or {}
    pk, sk = keys.get(PK, {}).get("S", ""), keys.get(SK, {}).get("S", "")
    old = _image(stream.get("OldImage"))
    new = _image(stream.get("NewImage"))
    image = new if new is not None else old
    if image is None:
        return None
    found = _kind(pk, sk)
    if found is None:
        return None
    kind, tenant_id = found
    user_id = _user(kind, pk, image)
    return StoredChange(str(record.get("eventID", "")), kind, tenant_id, user_id, old, new)


def _image(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An item image as Lambda hands it (binaries in base64, as on the wire), decoded."""
    if not raw:
        return None
    return decoded({name: from_wire(value) for name, value in raw.items()})


def _kind(pk: str, sk: str) -> tuple[ChangeKind, str] | None:
    """What the item is, and its tenant: by the shape of its keys (`T#<t>#U#<user>`, or
    `T#<t>#U#<user>#A#<agent>` for an agent's scope: contracts/scopes.py)."""
    parts = pk.split("#")
    if parts[0] != "T" or not (len(parts) == 4 or (len(parts) == 6 and parts[2] == "U" and parts[4] == "A")):
        return None
    tenant_id, scope = parts[1], parts[2]
    if scope == "U" and sk == MEMORY_SK:
        return "memory", tenant_id
    if scope == "U" and sk.startswith(RECORD_PREFIX):
        return "record", tenant_id
    if scope == "J" and sk == JOB_SK:
        return "job", tenant_id
    if scope == "DEL" and sk == RECEIPT_SK:
        return "receipt", tenant_id
    return None


def _user(kind: ChangeKind, pk: str, image: Mapping[str, Any]) -> str:
    """The scope key the change belongs to."""
    if kind in ("memory", "record"):
        return "#".join(pk.split("#")[3:])
    if kind == "job":
        return agent_scope(str(image.get("user_id", "")), image.get("agent_id"))
    receipt = json.loads(image["receipt"])
    return agent_scope(str(receipt.get("user_id", "")), receipt.get("agent_id"))
