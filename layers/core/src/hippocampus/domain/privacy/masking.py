"""PII masking (docs/architecture.md "PII masking"): each value a detector finds is replaced by a
typed placeholder numbered per user (`[EMAIL_1]`), the same value always by the same placeholder.

Items are masked before the condensation prompt, the episodes, the records and the vectors see
them; facts and a replaced summary before they are stored; a query before it is embedded or ranked
(with the numbers the user's values already have, so `a@b.c` finds what `[EMAIL_1]` stands for).
Placeholders are never detected again: masking a masked text changes nothing.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hippocampus.contracts.models import IngestItem
from hippocampus.contracts.pii import PiiDetector, PiiSpan, PiiValue, PlaceholderStore, placeholder
from hippocampus.observability import MetricName, record_metric

# The fields of an item that can hold what a person wrote; ids, dates and flags cannot.
_TEXT_FIELDS = ("text", "title", "user_name", "custom_instructions")
_PAIR_SIDES = ("user", "assistant")
_METADATA_FIELDS = ("metadata", "additional_metadata")


@dataclass(frozen=True)
class UserScope:
    """Whose placeholders: the user, in its life `generation` (numbering fails after a delete)."""

    tenant_id: str
    user_id: str
    generation: int


class Masker:
    def __init__(self, detector: PiiDetector, placeholders: PlaceholderStore) -> None:
        self._detector = detector
        self._placeholders = placeholders

    def mask_texts(self, scope: UserScope, texts: Sequence[str]) -> list[str]:
        """`texts` with every value replaced, new values numbered for the user (ConditionFailed
        when the user was deleted since `scope.generation` was read)."""
        found = [self._detector.detect(text) for text in texts]
        wanted = [PiiValue(span.kind, span.value) for spans in found for span in spans]
        if not wanted:
            return list(texts)
        numbers = self._placeholders.numbers(scope.tenant_id, scope.user_id, scope.generation, wanted)
        record_metric(MetricName.PII_VALUES_MASKED, len(wanted))
        return [_replaced(text, spans, numbers) for text, spans in zip(texts, found, strict=True)]

    def mask_query(self, tenant_id: str, user_id: str, value: Any) -> Any:
        """The JSON `value` (a query's text, its metadata filters) with every value found in its
        strings replaced by the placeholder the user's value has, or an unnumbered one (`[EMAIL]`)
        for a value the user never sent: a query numbers nothing."""
        strings: list[str] = []
        _json_rewritten(value, _collector(strings))
        unique = list(dict.fromkeys(strings))
        found = [self._detector.detect(text) for text in unique]
        wanted = [PiiValue(span.kind, span.value) for spans in found for span in spans]
        if not wanted:
            return value
        numbers = self._placeholders.known_numbers(tenant_id, user_id, wanted)
        masked = {text: _replaced(text, spans, numbers) for text, spans in zip(unique, found, strict=True)}
        return _json_rewritten(value, masked.__getitem__)

    def mask_items(self, scope: UserScope, items: Sequence[IngestItem]) -> list[IngestItem]:
        """The items with every text they hold masked: the content, the pairs, the title, the user's
        name, the instructions and the string values of the metadata. One numbering for all."""
        strings: list[str] = []
        for item in items:
            _rewritten(item, _collector(strings))
        unique = list(dict.fromkeys(strings))
        masked = dict(zip(unique, self.mask_texts(scope, unique), strict=True))
        return [_rewritten(item, masked.__getitem__) for item in items]


def _replaced(text: str, spans: Sequence[PiiSpan], numbers: dict[PiiValue, int]) -> str:
    """`text` with each span replaced by its placeholder (from the end, so offsets hold)."""
    for span in sorted(spans, key=lambda found: found.start, reverse=True):
        number = numbers.get(PiiValue(span.kind, span.value))
        text = text[: span.start] + placeholder(span.kind, number) + text[span.end :]
    return text


def _collector(strings: list[str]) -> Callable[[str], str]:
    def collect(text: str) -> str:
        strings.append(text)
        return text

    return collect


def _rewritten(item: IngestItem, rewrite: Callable[[str], str]) -> IngestItem:
    """`item` with `rewrite` applied to every text it holds (no validation: a placeholder may be a
    few characters longer than the value it stands for)."""
    update: dict[str, Any] = {
        name: rewrite(value) for name in _TEXT_FIELDS if (value := getattr(item, name)) is not None
    }
    if item.user_assistant_pairs:
        update["user_assistant_pairs"] = [
            pair.model_copy(
                update={side: rewrite(value) for side in _PAIR_SIDES if (value := getattr(pair, side))}
            )
            for pair in item.user_assistant_pairs
        ]
    for name in _METADATA_FIELDS:
        update[name] = _json_rewritten(getattr(item, name), rewrite)
    return item.model_copy(update=update)


def _json_rewritten(value: Any, rewrite: Callable[[str], str]) -> Any:
    """A JSON value with `rewrite` applied to its strings; keys are the application's names, kept."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        return [_json_rewritten(entry, rewrite) for entry in value]
    if isinstance(value, dict):
        return {name: _json_rewritten(entry, rewrite) for name, entry in value.items()}
    return value
