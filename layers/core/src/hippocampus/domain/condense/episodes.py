"""Episodes: each condensed turn, kept as rendered text for recall (docs/api.md "Episodes")."""

from hippocampus.contracts.models import CondenseMessage, IngestItem
from hippocampus.contracts.recall import EPISODE_MAX_CHARS, Episode
from hippocampus.domain.condense.prompt import CondenseInput

# The newest episodes kept per user when none is configured (MEMORY_MAX_EPISODES).
DEFAULT_MAX_EPISODES = 2_000


def rendered(item: IngestItem) -> str:
    """Text as sent; pairs as `User: …` / `Assistant: …` lines (the prompt's rendering, without the
    user's name in place of `User`). Markdown is kept as written."""
    pairs = tuple((pair.user, pair.assistant) for pair in item.user_assistant_pairs or ())
    return CondenseInput(text=item.text, pairs=pairs).render()


def episode_of(message: CondenseMessage, item: IngestItem) -> Episode:
    """The episode of one accepted turn: its text (the first EPISODE_MAX_CHARS characters), ids,
    metadata, when it was accepted and when it happened (unsaid: when it was accepted)."""
    return Episode(
        id=message.item_id,
        job_id=message.job_id,
        text=rendered(item)[:EPISODE_MAX_CHARS],
        title=item.title,
        is_markdown=item.is_markdown,
        metadata=item.metadata,
        additional_metadata=item.additional_metadata,
        created_at=message.queued_at,
        occurred_at=item.occurred_at or message.queued_at,
        position=message.raw_index,
    )
