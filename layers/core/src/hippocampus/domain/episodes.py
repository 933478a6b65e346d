"""Episodes: each condensed turn, kept as rendered text for recall (docs/api.md "Episodes")."""

from hippocampus.contracts.models import CondenseMessage, IngestItem
from hippocampus.contracts.prompt_format import ASSISTANT_LABEL, USER_LABEL
from hippocampus.contracts.recall import EPISODE_MAX_CHARS, Episode

# The newest episodes kept per user when none is configured (MEMORY_MAX_EPISODES).
DEFAULT_MAX_EPISODES = 2_000


def rendered(item: IngestItem) -> str:
    """Text as sent; pairs as `User: …` / `Assistant: …` lines. Markdown is kept as written."""
    if item.text is not None:
        return item.text.strip()
    lines: list[str] = []
    for pair in item.user_assistant_pairs or ():
        if pair.user and pair.user.strip():
            lines.append(f"{USER_LABEL}: {pair.user.strip()}")
        if pair.assistant and pair.assistant.strip():
            lines.append(f"{ASSISTANT_LABEL}: {pair.assistant.strip()}")
    return "\n".join(lines)


def episode_of(message: CondenseMessage, item: IngestItem) -> Episode:
    """The episode of one accepted turn: its text (the first EPISODE_MAX_CHARS characters), ids,
    metadata and the time it was accepted."""
    return Episode(
        id=message.item_id,
        job_id=message.job_id,
        text=rendered(item)[:EPISODE_MAX_CHARS],
        title=getattr(item, "title", None),
        is_markdown=bool(getattr(item, "is_markdown", False)),
        metadata=item.metadata,
        additional_metadata=item.additional_metadata,
        created_at=message.queued_at,
        position=message.raw_index,
    )
