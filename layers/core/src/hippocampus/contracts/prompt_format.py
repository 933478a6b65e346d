"""The format of a rendered condensation prompt (docs/architecture.md "Condensation").

Shared by the prompt builder of the domain and the offline model, which reads the fenced
blocks back: the fence markers, the speaker labels, the item separator, the placeholders of
a prompt template, the "nothing to keep" answer, and what counts as a word.
"""

from datetime import date
from typing import Final

# Fences around data in the rendered prompt.
OLD_MEMORY_BEGIN: Final = "<<<OLD_MEMORY>>>"
OLD_MEMORY_END: Final = "<<<END_OLD_MEMORY>>>"
NEW_CONTENT_BEGIN: Final = "<<<NEW_CONTENT>>>"
NEW_CONTENT_END: Final = "<<<END_NEW_CONTENT>>>"
# The user's name and the custom instructions come from the request like the content: data too.
USER_NAME_BEGIN: Final = "<<<USER_NAME>>>"
USER_NAME_END: Final = "<<<END_USER_NAME>>>"
CUSTOM_INSTRUCTIONS_BEGIN: Final = "<<<CUSTOM_INSTRUCTIONS>>>"
CUSTOM_INSTRUCTIONS_END: Final = "<<<END_CUSTOM_INSTRUCTIONS>>>"
# The user's current records, one a line (`record_line`): what an answer's operations may name.
RECORDS_BEGIN: Final = "<<<RECORDS>>>"
RECORDS_END: Final = "<<<END_RECORDS>>>"
FENCED_BLOCKS: Final = ("OLD_MEMORY", "NEW_CONTENT", "USER_NAME", "CUSTOM_INSTRUCTIONS", "RECORDS")

# The answer the prompt asks for when nothing is worth keeping and the memory is empty, so an
# empty answer is always a malfunction (docs/architecture.md "Condensation").
NOTHING_TO_KEEP: Final = "NOTHING_TO_KEEP"

USER_LABEL: Final = "User"
ASSISTANT_LABEL: Final = "Assistant"
ITEM_SEPARATOR: Final = "\n\n"
# The first line of each new item: when it happened (`Item date: Monday 8 May 2023, 13:56 UTC`),
# in English whatever the locale: the prompt writes these names and the offline model reads them.
ITEM_DATE_LABEL: Final = "Item date:"
# The second line of each new item: its id, which an answer's operations cite as their source.
ITEM_ID_LABEL: Final = "Item id:"
# A record in the prompt: `rec_… | location | since 8 May 2023 | Lives in Paris.`
RECORD_FIELD_SEPARATOR: Final = " | "
WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def day_in_words(day: date) -> str:
    """`8 May 2023`: a day as the prompt, the offline stand-in, the context block and recall write
    it, whatever the locale (a datetime is a date too)."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


PLACEHOLDERS: Final = frozenset(
    {"OLD_MEMORY", "NEW_CONTENT", "MAX_WORDS", "USER_NAME", "CUSTOM_INSTRUCTIONS", "TODAY", "RECORDS"}
)


def count_words(text: str | None) -> int:
    """The one word count used everywhere (budget, API bodies): whitespace-separated tokens."""
    return len(text.split()) if text else 0


def record_line(record_id: str, category: str, since: str, text: str) -> str:
    """One record as the prompt lists it (and the offline model reads it back)."""
    return RECORD_FIELD_SEPARATOR.join((record_id, category, f"since {since}", " ".join(text.split())))
