"""ArchiveStore on one S3 bucket: raw payloads (`raw/`) and summary history (`history/`), each with its
own lifecycle; a user's erasure takes the stored copy of their episodes (`recall/`) too."""

import json
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import batched
from typing import Any, Final

from botocore.exceptions import ClientError

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.models import HistoryVersion
from hippocampus.contracts.names import HISTORY_PREFIX, RAW_PREFIX, RECALL_PREFIX
from hippocampus.contracts.ports import RawForgotten
from hippocampus.contracts.receipts import ArchiveErasure

# History keys sort newest first: S3 lists keys in ascending order.
_VERSION_CEILING = 10**12


# `g000003/` in a key: the user's generation when the object was written.
_GENERATION_SEGMENT = re.compile(r"/g(\d{6})/")


def raw_key(tenant_id: str, user_id: str, generation: int, request_id: str, accepted_ms: int) -> str:
    # The time first: the user's payloads list in the order they were accepted (the export's order).
    return f"{_raw_prefix(tenant_id, user_id, generation)}{accepted_ms:013d}-{request_id}.json"


def _raw_prefix(tenant_id: str, user_id: str, generation: int) -> str:
    return f"{RAW_PREFIX}{tenant_id}/{user_id}/g{generation:06d}/"


def user_prefix(prefix: str, tenant_id: str, user_id: str) -> str:
    """Where a user's objects of one kind (`raw/`, `history/`, `recall/`) live."""
    return f"{prefix}{tenant_id}/{user_id}/"


def _user_prefixes(tenant_id: str, user_id: str) -> list[str]:
    # recall/: the stored copy of the user's episodes (adapters/episode_snapshots.py), whose key
    # holds no generation: it always goes.
    return [user_prefix(prefix, tenant_id, user_id) for prefix in (RAW_PREFIX, HISTORY_PREFIX, RECALL_PREFIX)]


def _written_before(key: str, generation: int) -> bool:
    """Whether an object belongs to a generation older than `generation` (a key without one does)."""
    match = _GENERATION_SEGMENT.search(key)
    return match is None or int(match.group(1)) < generation


def _history_prefix(tenant_id: str, user_id: str, generation: int) -> str:
    # The generation keeps a late write from before a delete invisible to every later read.
    return f"{HISTORY_PREFIX}{tenant_id}/{user_id}/g{generation:06d}/"


def _history_key(tenant_id: str, user_id: str, generation: int, version: int) -> str:
    return f"{_history_prefix(tenant_id, user_id, generation)}{_VERSION_CEILING - version:012d}.json"


# Reads of a raw payload a rewrite makes before it gives up to a writer that keeps changing it.
REWRITE_ATTEMPTS: Final = 3


class S3Archive:
    def __init__(
        self, bucket: str, client: Callable[[], Any], clock: Callable[[], float] = time.time
    ) -> None:
        self._bucket = bucket
        self._client = client
        self._clock = clock

    def put_raw(
        self, tenant_id: str, user_id: str, generation: int, request_id: str, payload: Mapping[str, Any]
    ) -> str:
        key = raw_key(tenant_id, user_id, generation, request_id, int(self._clock() * 1000))
        self._put_json(key, payload)
        return key

    def get_raw(self, key: str) -> dict[str, Any] | None:
        return self._get_json(key)

    def delete_raw(self, key: str) -> None:
        self._client().delete_object(Bucket=self._bucket, Key=key)

    def forget_raw_item(self, key: str, index: int) -> RawForgotten:
        return self._rewrite_raw(key, {index: None})

    def replace_raw_items(self, key: str, places: Mapping[int, Mapping[str, Any] | None]) -> None:
        self._rewrite_raw(key, places)

    def _rewrite_raw(self, key: str, places: Mapping[int, Mapping[str, Any] | None]) -> RawForgotten:
        """Read, change and write back only if the object is still the one read (`IfMatch`): a
        delete's sweep in between stays a deletion, and a concurrent rewrite is read again."""
        for _ in range(REWRITE_ATTEMPTS):
            read = self._get_json_and_etag(key)
            if read is None:
                return "absent"
            payload, etag = read
            items = payload.get("items")
            if not isinstance(items, list) or not any(
                index < len(items) and items[index] is not None for index in places
            ):
                return "absent"
            for index, item in places.items():  # the others keep their places: their messages point at them
                if index < len(items) and items[index] is not None:
                    items[index] = item
            if not any(item is not None for item in items):
                self.delete_raw(key)
                return "deleted"
            try:
                self._put_json(key, {**payload, "items": items}, if_match=etag)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code")
                if code in {"NoSuchKey", "404"}:
                    return "absent"  # erased meanwhile (a delete of the user): it stays erased
                if code != "PreconditionFailed":
                    raise
                continue  # changed meanwhile: read it again
            return "blanked"
        raise DependencyUnavailable(
            f"the payload kept changing while it was rewritten ({REWRITE_ATTEMPTS} reads)"
        )

    def put_history(self, tenant_id: str, user_id: str, generation: int, entry: HistoryVersion) -> None:
        self._put_json(
            _history_key(tenant_id, user_id, generation, entry.version), entry.model_dump(mode="json")
        )

    def delete_history(self, tenant_id: str, user_id: str, generation: int, version: int) -> None:
        self._client().delete_object(
            Bucket=self._bucket, Key=_history_key(tenant_id, user_id, generation, version)
        )

    def delete_history_from(self, tenant_id: str, user_id: str, generation: int, version: int) -> int:
        # From the keys alone (they hold the version): no object is read.
        prefix = _history_prefix(tenant_id, user_id, generation)
        versions = [_VERSION_CEILING - int(key[len(prefix) : -len(".json")]) for key in self._keys(prefix)]
        doomed = [found for found in versions if found >= version]
        for found in doomed:
            self.delete_history(tenant_id, user_id, generation, found)
        return len(doomed)

    def list_history(
        self, tenant_id: str, user_id: str, generation: int, limit: int | None
    ) -> list[HistoryVersion]:
        prefix = _history_prefix(tenant_id, user_id, generation)
        if limit is None:
            keys = self._keys(prefix)
        else:
            listing = self._client().list_objects_v2(Bucket=self._bucket, Prefix=prefix, MaxKeys=limit)
            keys = [obj["Key"] for obj in listing.get("Contents", [])]
        return [HistoryVersion.model_validate(entry) for entry in self._fetch(keys) if entry is not None]

    def list_raw(self, tenant_id: str, user_id: str, generation: int) -> dict[str, dict[str, Any]]:
        keys = self._keys(_raw_prefix(tenant_id, user_id, generation))
        return {
            key: payload for key, payload in zip(keys, self._fetch(keys), strict=True) if payload is not None
        }

    def _keys(self, prefix: str) -> list[str]:
        paginator = self._client().get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self._bucket, Prefix=prefix)
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]

    def _fetch(self, keys: list[str]) -> list[dict[str, Any] | None]:
        """The objects at `keys`, in order (None: gone since the listing), fetched in parallel."""
        with ThreadPoolExecutor(max_workers=min(8, len(keys) or 1)) as pool:
            return list(pool.map(self._get_json, keys))

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> ArchiveErasure:
        # What the user's new life (this generation on) has written already stays.
        raw_objects, history_objects, episode_copies = (
            self._erase([key for key in self._keys(prefix) if _written_before(key, generation)])
            for prefix in _user_prefixes(tenant_id, user_id)
        )
        return ArchiveErasure(raw_objects, history_objects, episode_copies)

    def drop_episode_copy(self, tenant_id: str, user_id: str) -> int:
        return self._erase(self._keys(user_prefix(RECALL_PREFIX, tenant_id, user_id)))

    def _erase(self, keys: list[str]) -> int:
        """Delete the objects at `keys`; how many."""
        for chunk in batched(keys, 1000):
            response = self._client().delete_objects(
                Bucket=self._bucket, Delete={"Objects": [{"Key": key} for key in chunk], "Quiet": True}
            )
            if response.get("Errors"):
                # S3 answers 200 even when some keys stay: the user is not forgotten until they go.
                codes = sorted({error.get("Code", "unknown") for error in response["Errors"]})
                raise DependencyUnavailable(
                    f"{len(response['Errors'])} object(s) could not be erased: {codes}"
                )
        return len(keys)

    def _put_json(self, key: str, payload: Mapping[str, Any], if_match: str | None = None) -> None:
        self._client().put_object(
            Bucket=self._bucket,
            Key=key,
            Body=json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode(),
            ContentType="application/json",
            **({"IfMatch": if_match} if if_match else {}),
        )

    def _get_json(self, key: str) -> dict[str, Any] | None:
        read = self._get_json_and_etag(key)
        return read[0] if read else None

    def _get_json_and_etag(self, key: str) -> tuple[dict[str, Any], str] | None:
        try:
            answer = self._client().get_object(Bucket=self._bucket, Key=key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                return None
            raise
        payload: dict[str, Any] = json.loads(answer["Body"].read())
        return payload, str(answer["ETag"])
