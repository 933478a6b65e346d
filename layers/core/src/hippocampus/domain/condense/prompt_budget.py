"""Bounded prompts: one condensation call never carries more than the input budget
(MEMORY_PROMPT_MAX_CHARS, docs/configuration.md); a larger backlog goes in consecutive calls,
oldest first, each with its own conditional write (docs/architecture.md "The condenser")."""

from collections.abc import Callable, Sequence
from dataclasses import replace

from hippocampus.domain.condense.prompt import CondenseInput
from hippocampus.observability import MetricName, logger, record_metric

# The default suits the default models: 100,000 characters stay under gpt-4o-mini's 128k-token
# context even at one token per character (CJK text), with room for the answer.
DEFAULT_PROMPT_MAX_CHARS = 100_000

# Rendered as plain text, a cut item may format a little longer than its parts did.
CUT_MARGIN_CHARS = 200

Render = Callable[[Sequence[CondenseInput]], str]


def fitting(
    inputs: Sequence[CondenseInput], render: Render, max_chars: int
) -> tuple[int, CondenseInput | None]:
    """How many leading inputs fit one prompt (at least one), and, when the first alone does not
    fit, that input cut to fit (its beginning kept)."""
    count = 0
    while count < len(inputs) and len(render(inputs[: count + 1])) <= max_chars:
        count += 1
    if count:
        return count, None
    first = inputs[0]
    overflow = len(render(inputs[:1])) - max_chars + CUT_MARGIN_CHARS
    text = first.render(first.user_name)
    record_metric(MetricName.ITEMS_CUT_TO_PROMPT_BUDGET)
    logger.warning(
        "an item alone exceeds the prompt budget; its end is cut", extra={"item_id": first.item_id}
    )
    return 1, replace(first, text=text[: max(0, len(text) - overflow)], pairs=())
