"""The lines `hippocampus backfill` reads, and the requests it makes of them (client/README.md "CLI").

Every line is one JSON object with a `user_id` and exactly one of the contents in `LINE_FORMATS`.
Each item gets a deterministic `id` when it has none, so sending it again (after an interruption,
or a re-run) maps to the same job and queues nothing (docs/api.md "Ingest", job ids). Batches
group one user's items, in file order, within the API's limits (docs/api.md "Limits").

`occurred_at` (docs/api.md "Ingest") is checked as the API checks it (timestamps.py); a turn's
own date wins over its session's, which wins over the line's. A session's `date_time`, as the
LoCoMo benchmark writes it, is read with `strptime` in the `--timezone` zone (client/README.md
"backfill").
"""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from .errors import InvalidInputError
from .identifiers import IDENTIFIER
from .items import build_items
from .timestamps import FIELD as OCCURRED_AT
from .timestamps import occurred_at
from .transport import encode_json

LINE_FORMATS = """\b
One JSON object per line, with "user_id" and exactly one of:
  "text": "User: ...\\nAssistant: ..."      one turn as free text: one item
  "user_assistant_pairs": [{"user": ..., "assistant": ...}, ...]
                                          one turn: one item
  "messages": [{"role": ..., "content": ...}, ...]
                                          openai-style: one item (one more
                                          every 50 pairs; system and tool
                                          messages are left out)
  "items": [{...}, ...]                   API items, sent as they are
  "turns": [turn, ...]                    a conversation: one item per turn,
                                          each a string, a {"user", "assistant"}
                                          pair (with an "occurred_at" if
                                          wanted), a list of openai-style
                                          messages or an item
  "sessions": [{"occurred_at": ..., "turns": [turn, ...]}, ...]
                                          conversations with a date each: one
                                          item per turn, dated by its session
                                          unless it has its own; a session may
                                          give "date_time" as LoCoMo writes it,
                                          "1:56 pm on 8 May, 2023", read in
                                          --timezone, instead of "occurred_at"
Item fields beside them (id, infer, user_name, custom_instructions, metadata,
additional_metadata, title, is_markdown, occurred_at) apply to each item of
the line; an item's own win. "occurred_at" is RFC 3339 with Z or an offset
(2023-05-08T13:56:00Z); none (or null): when the API accepts it. The "id" of
a line with several items becomes ID-1, ID-2, ... Blank lines are ignored;
"backfill_error" (a .failed.jsonl line) is ignored."""

MAX_ITEMS = 100  # items per request (docs/api.md "Limits")
MAX_BODY_BYTES = 1_048_576  # the request body limit: 413 above it
DEFAULT_BATCH_BYTES = 512 * 1024  # well under the limit
BODY_OVERHEAD = len(encode_json({"items": [], "upsert": True}))
ITEM_FIELDS = frozenset(
    {
        "id",
        "infer",
        "user_name",
        "custom_instructions",
        "metadata",
        "additional_metadata",
        "title",
        "is_markdown",
        OCCURRED_AT,
    }
)
CONTENTS = ("text", "user_assistant_pairs", "messages", "items", "turns", "sessions")
SESSION_FIELDS = frozenset({"turns", OCCURRED_AT, "date_time"})
# How LoCoMo writes a session's date ("1:56 pm on 8 May, 2023"), read with strptime: English
# month names, as Python's default C locale spells them.
SPOKEN_DATE = "%I:%M %p on %d %B, %Y"
SPOKEN_EXAMPLE = "1:56 pm on 8 May, 2023"
ERROR_FIELD = "backfill_error"  # what a `.failed.jsonl` line says; ignored when it is read again


class LineError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, as editors count
    user: str
    items: tuple[dict[str, Any], ...]  # every one with its `id`

    def retry_record(self, code: str, message: str) -> dict[str, Any]:
        """The line for `.failed.jsonl`: its items with their ids, so a re-run sends the same items."""
        error = {"line": self.number, "code": code, "message": message}
        return {"user_id": self.user, "items": list(self.items), ERROR_FIELD: error}


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON the API accepts")


def parse_line(number: int, raw: bytes, zone: tzinfo = UTC) -> Line | None:
    """The line's user and items (None for a blank line); `LineError` says what is wrong. `zone`
    is where a session's `date_time` was written (`--timezone`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LineError("invalid_line", "not UTF-8") from None
    if not text.strip():
        return None
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        raise LineError("invalid_line", "not JSON") from None
    if not isinstance(data, dict):
        raise LineError("invalid_line", "a line must be a JSON object")
    user = data.get("user_id")
    if not isinstance(user, str) or not IDENTIFIER.fullmatch(user):
        raise LineError("invalid_line", "user_id is missing or not an identifier")
    unknown = sorted(set(data) - ITEM_FIELDS - set(CONTENTS) - {"user_id", ERROR_FIELD})
    if unknown:
        raise LineError("invalid_line", f"unknown field {', '.join(unknown)}")
    contents = [name for name in CONTENTS if name in data]
    if len(contents) != 1:
        raise LineError("invalid_line", f"exactly one of {', '.join(CONTENTS)} is needed")
    defaults = {name: value for name, value in data.items() if name in ITEM_FIELDS}
    line_id = defaults.pop("id", None)
    if defaults.get(OCCURRED_AT) is not None:
        defaults[OCCURRED_AT] = _timestamp(defaults[OCCURRED_AT], OCCURRED_AT)
    else:
        defaults.pop(OCCURRED_AT, None)  # null: not given, as the API reads it
    items = _items(contents[0], data[contents[0]], zone)
    for item in items:
        for name, value in defaults.items():
            item.setdefault(name, value)
    return Line(number, user, tuple(_with_ids(user, number, line_id, items)))


def _items(kind: str, value: Any, zone: tzinfo) -> list[dict[str, Any]]:
    if kind == "text":
        if not isinstance(value, str):
            raise LineError("invalid_line", "text must be a string")
        return [{"text": value}]
    if kind == "user_assistant_pairs":
        return [{"user_assistant_pairs": _list(value, kind)}]
    if kind == "messages":
        return _messages(value, kind)
    if kind == "items":
        return [_dated(entry, f"items[{index}]") for index, entry in enumerate(_list(value, kind))]
    if kind == "sessions":
        return [
            item
            for index, session in enumerate(_list(value, kind))
            for item in _session(index, session, zone)
        ]
    return _turns(value, kind)


def _session(index: int, session: Any, zone: tzinfo) -> list[dict[str, Any]]:
    """A session's turns, each dated by the session unless it has its own date."""
    where = f"sessions[{index}]"
    entry = _object(session, where)
    unknown = sorted(set(entry) - SESSION_FIELDS)
    if unknown:
        raise LineError("invalid_line", f"{where}: unknown field {', '.join(unknown)}")
    given, spoken = entry.get(OCCURRED_AT), entry.get("date_time")  # null: not given
    if given is not None and spoken is not None:
        raise LineError("invalid_line", f"{where}: give occurred_at or date_time, not both")
    items = _turns(entry.get("turns"), f"{where}.turns")
    date: str | None = None
    if given is not None:
        date = _timestamp(given, f"{where}.{OCCURRED_AT}")
    elif spoken is not None:
        date = spoken_date(spoken, zone, f"{where}.date_time")
    if date is not None:
        for item in items:
            item.setdefault(OCCURRED_AT, date)
    return items


def spoken_date(value: Any, zone: tzinfo, where: str = "date_time") -> str:
    """A date as LoCoMo writes it ("1:56 pm on 8 May, 2023"), a wall-clock time in `zone`, as RFC 3339."""
    try:
        moment = datetime.strptime(value.strip(), SPOKEN_DATE) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise LineError("invalid_line", f'{where} must be a date written as "{SPOKEN_EXAMPLE}"')
    return occurred_at(moment.replace(tzinfo=zone))


def _turns(value: Any, where: str) -> list[dict[str, Any]]:
    return [
        item for index, turn in enumerate(_list(value, where)) for item in _turn(f"{where}[{index}]", turn)
    ]


def _turn(where: str, turn: Any) -> list[dict[str, Any]]:
    if isinstance(turn, str):
        return [{"text": turn}]
    if isinstance(turn, list):
        return _messages(turn, where)
    entry = _dated(turn, where)
    date = {OCCURRED_AT: entry.pop(OCCURRED_AT)} if OCCURRED_AT in entry else {}
    if entry and set(entry) <= {"user", "assistant"}:  # a pair, dated or not
        return [{"user_assistant_pairs": [entry]} | date]
    return [entry | date]


def _dated(value: Any, where: str) -> dict[str, Any]:
    """An item object, its own `occurred_at` checked (null: not given, so the session's or the
    line's date applies)."""
    entry = _object(value, where)
    if entry.get(OCCURRED_AT) is not None:
        entry[OCCURRED_AT] = _timestamp(entry[OCCURRED_AT], f"{where}.{OCCURRED_AT}")
    else:
        entry.pop(OCCURRED_AT, None)
    return entry


def _timestamp(value: Any, where: str) -> str:
    """A JSON string the API takes as `occurred_at` (timestamps.py), as it is."""
    try:
        return occurred_at(value, where)
    except InvalidInputError:
        message = f'{where} must be an RFC 3339 timestamp with Z or an offset, e.g. "2023-05-08T13:56:00Z"'
        raise LineError("invalid_line", message) from None


def _messages(value: Any, where: str) -> list[dict[str, Any]]:
    messages = _list(value, where)
    if not all(isinstance(m, Mapping) and "role" in m for m in messages):
        raise LineError("invalid_line", f"{where}: openai-style messages have a role and a content")
    try:
        return build_items(messages, {})  # the client's own conversion (items.py)
    except InvalidInputError:
        raise LineError("invalid_line", f"{where}: no user or assistant message") from None


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise LineError("invalid_line", f"{where} must be a non-empty list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LineError("invalid_line", f"{where} must be an object")
    return dict(value)


def _with_ids(user: str, number: int, line_id: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for position, item in enumerate(items, start=1):
        if "id" in item:
            continue
        if line_id is not None:
            item["id"] = line_id if len(items) == 1 else f"{line_id}-{position}"
        else:
            item["id"] = item_id(user, number, position, item)
    return items


def item_id(user: str, number: int, position: int, item: Mapping[str, Any]) -> str:
    """`bf-<hex>`, from the user, the line, the item's place in it and its content: the same line
    gives the same ids on every run; another file's line with other content, other ids."""
    content = json.dumps(item, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(f"{user}\n{number}\n{position}\n{content}".encode()).hexdigest()
    return f"bf-{digest[:32]}"


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes the item takes in the body, encoded as the client encodes it (transport.py)."""
    return len(encode_json(item))


@dataclass
class Batch:
    """One request: some of one user's items, in file order, with the line of each."""

    user: str
    opened_at: int  # the line that opened it
    items: list[dict[str, Any]] = field(default_factory=list)
    item_lines: list[int] = field(default_factory=list)
    size: int = BODY_OVERHEAD

    def append(self, item: dict[str, Any], line: int, size: int) -> None:
        self.size += size + (1 if self.items else 0)  # the comma
        self.items.append(item)
        self.item_lines.append(line)

    @property
    def lines(self) -> list[int]:
        return list(dict.fromkeys(self.item_lines))

    def key(self) -> str:
        """The Idempotency-Key: a digest of the body, so the same key always comes with the same
        body (another body under a used key would be 409 idempotency_conflict; docs/api.md "Idempotency")."""
        return "backfill-" + hashlib.sha256(encode_json(self.items)).hexdigest()

    def split(self) -> list["Batch"]:
        """One batch per line: after a refusal, only the lines at fault fail."""
        parts: dict[int, Batch] = {}
        for item, line in zip(self.items, self.item_lines, strict=True):
            part = parts.setdefault(line, Batch(self.user, line))
            part.append(item, line, item_size(item))
        return list(parts.values())


class Batcher:
    """Packs lines into batches: at most `max_items` items and `max_bytes` of body each, one open
    batch per user. A batch is closed when full, when it was opened over `window` lines ago (so
    progress is saved while a user's lines are sparse), or when too many are open at once."""

    def __init__(self, max_items: int, max_bytes: int, window: int = 1000, max_open: int = 1000) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.window = window
        self.max_open = max_open
        self._open: dict[str, Batch] = {}  # insertion order: oldest first

    def add(self, line: Line) -> tuple[list[Batch], int]:
        """The batches this line closed, and how many batches hold its items."""
        sizes = [item_size(item) for item in line.items]
        if max(sizes) + BODY_OVERHEAD > MAX_BODY_BYTES:
            raise LineError("payload_too_large", f"an item is over the {MAX_BODY_BYTES}-byte request limit")
        closed: list[Batch] = []
        holders: list[Batch] = []  # the batches that got items of this line
        batch = self._open.get(line.user)
        for item, size in zip(line.items, sizes, strict=True):
            if batch is not None and batch.items and not self._fits(batch, size):
                closed.append(self._open.pop(line.user))
                batch = None
            if batch is None:
                batch = self._open[line.user] = Batch(line.user, line.number)
            batch.append(item, line.number, size)
            if not holders or holders[-1] is not batch:
                holders.append(batch)
        return closed + self._expired(line.number), len(holders)

    def _fits(self, batch: Batch, size: int) -> bool:
        return len(batch.items) < self.max_items and batch.size + size + 1 <= self.max_bytes

    def _expired(self, number: int) -> list[Batch]:
        closed: list[Batch] = []
        while self._open:
            user, oldest = next(iter(self._open.items()))
            if oldest.opened_at > number - self.window and len(self._open) <= self.max_open:
                break
            closed.append(self._open.pop(user))
        return closed

    def flush(self) -> list[Batch]:
        """Every open batch, oldest first (end of the file, or a stop)."""
        closed, self._open = list(self._open.values()), {}
        return closed
