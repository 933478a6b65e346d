"""What `add` accepts, turned into the items of `POST …/memory` (docs/api.md "Ingest").

- a string (e.g. "User: …\\nAssistant: …"): one item with `text`;
- openai-style messages (`[{"role": "user", "content": ...}, ...]`): one item with
  `user_assistant_pairs` (a new item every 50 pairs, the API's limit per item); system,
  developer and tool messages are not part of the conversation and are left out;
- items (dicts or `Item`): sent as given, with the options as defaults.

`occurred_at`, an option or an item's own, is checked and written as RFC 3339 (timestamps.py).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidInputError
from .models import Item
from .timestamps import FIELD as OCCURRED_AT
from .timestamps import occurred_at

MAX_PAIRS_PER_ITEM = 50  # docs/api.md "Limits"
Content = str | Item | Mapping[str, Any] | Sequence[Item | Mapping[str, Any]]


def build_items(content: Content, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The items to send; `options` are item fields (None: not given) applied to each item."""
    defaults = {name: value for name, value in options.items() if value is not None}
    if OCCURRED_AT in defaults:
        defaults[OCCURRED_AT] = occurred_at(defaults[OCCURRED_AT])
    if isinstance(content, Mapping) and "role" in content:
        content = [content]  # one message
    items: list[dict[str, Any]]
    if isinstance(content, str):
        items = [{"text": content}]
    elif isinstance(content, Item | Mapping):
        items = [_as_dict(content)]
    else:
        entries = list(content)
        messages = _messages(entries)
        if messages is not None:
            items = [{"user_assistant_pairs": pairs} for pairs in _chunks(_pairs(messages))]
        else:
            items = [_as_dict(entry) for entry in entries]
    if not items:
        raise InvalidInputError("nothing to add: no item, or no user or assistant message")
    for position, item in enumerate(items):
        if item.get(OCCURRED_AT) is not None:  # None is sent as given: the API judges it
            item[OCCURRED_AT] = occurred_at(item[OCCURRED_AT], f"items[{position}].{OCCURRED_AT}")
    return _with_defaults(items, defaults)


def _as_dict(item: Item | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, Item):
        return item.model_dump(exclude_none=True)
    if isinstance(item, Mapping):
        return dict(item)
    raise InvalidInputError(f"an item must be a dict or an Item, not {type(item).__name__}")


def _with_defaults(items: list[dict[str, Any]], defaults: dict[str, Any]) -> list[dict[str, Any]]:
    item_id = defaults.pop("id", None)
    for position, item in enumerate(items, start=1):
        for name, value in defaults.items():
            item.setdefault(name, value)
        if item_id is not None and "id" not in item:
            # One id for one item; several items from one call get numbered ids.
            item["id"] = item_id if len(items) == 1 else f"{item_id}-{position}"
    return items


def _messages(entries: list[Any]) -> list[Mapping[str, Any]] | None:
    """`entries` as chat messages (each a mapping with a `role`), or None when they are items."""
    if entries and all(isinstance(e, Mapping) and "role" in e for e in entries):
        return entries
    return None


def _text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of an openai content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _pairs(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    pairs: list[dict[str, str]] = []
    user: list[str] = []
    assistant: list[str] = []
    for message in messages:
        text = _text_of(message.get("content"))
        if not text.strip():
            continue
        role = message.get("role")
        if role == "user":
            if assistant:  # a user message after an answer opens the next pair
                pairs.append(_pair(user, assistant))
                user, assistant = [], []
            user.append(text)
        elif role == "assistant":
            assistant.append(text)
    if user or assistant:
        pairs.append(_pair(user, assistant))
    return pairs


def _pair(user: list[str], assistant: list[str]) -> dict[str, str]:
    return {"user": "\n".join(user), "assistant": "\n".join(assistant)}


def _chunks(pairs: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    return [pairs[i : i + MAX_PAIRS_PER_ITEM] for i in range(0, len(pairs), MAX_PAIRS_PER_ITEM)]
