"""When an episode happened, as recall searches it (docs/api.md "Query").

- Its vector is made from its text with the day first, in words ("8 May 2023: User: ..."): a model
  reads a date as words.
- BM25 scores its text and four date terms: `yr2023 mo5 ym2023m5 dm8m5` (the year, the month,
  both, the day of the month). A query gets the same terms for the dates it names, and only for
  those: a year (1900-2100), a month name with a day or a year beside it, or after a word such as
  "in" or "since" ("in May", "8 May", "May 2023", "since March"). So "what did we repaint in
  May?" finds May's turns, while "May I pay by card?" and "3 cats" match no date.

On LoCoMo the date terms add 2 points of recall@10 to the lexical ranking, as the dates in words
did, without their false matches (bench/bench_recall_quality.py).
"""

import re
from datetime import datetime
from typing import Final

from hippocampus.contracts.prompt_format import MONTHS, day_in_words

# Month names and their usual short forms, lowercase, to the month's number.
_MONTH_NUMBERS: Final = {
    **{name.lower(): number for number, name in enumerate(MONTHS, start=1)},
    **{name[:3].lower(): number for number, name in enumerate(MONTHS, start=1)},
    "sept": 9,
}
# Words after which a month name is a month ("in May"), not a verb or a name ("May I ...?").
_MONTH_CUES: Final = frozenset(
    "in of since until till before after during early mid late last next this from by to on around".split()  # noqa: SIM905
)
_TOKEN: Final = re.compile(r"[^\W\d_]+|\d+")


def dated(text: str, occurred_at: datetime | None) -> str:
    """An episode's text as it is embedded: the day it happened first, in words."""
    return f"{day_in_words(occurred_at)}: {text}" if occurred_at else text


def date_terms(moment: datetime) -> str:
    """The terms BM25 matches a date by: year, month, both, and the day of the month."""
    return f"yr{moment.year} mo{moment.month} ym{moment.year}m{moment.month} dm{moment.day}m{moment.month}"


def searched(text: str, occurred_at: datetime | None) -> str:
    """What BM25 scores of an episode: its text and the terms of its date."""
    return f"{text} {date_terms(occurred_at)}" if occurred_at else text


def with_query_dates(query: str) -> str:
    """The query and the terms of the dates it names (the module docstring says which)."""
    tokens = [token.lower() for token in _TOKEN.findall(query)]
    terms: list[str] = []
    for index, token in enumerate(tokens):
        if len(token) == 4 and token.isdigit() and 1900 <= int(token) <= 2100:
            terms.append(f"yr{token}")
        month = _MONTH_NUMBERS.get(token)
        if month is None:
            continue
        before = tokens[index - 1] if index else ""
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        days = [
            word for word in (before, after) if word.isdigit() and len(word) <= 2 and 1 <= int(word) <= 31
        ]
        year = after if len(after) == 4 and after.isdigit() else None
        if not (days or year or before in _MONTH_CUES):
            continue
        terms.append(f"mo{month}")
        terms += [f"ym{year}m{month}"] if year else []
        terms += [f"dm{int(day)}m{month}" for day in days]
    return f"{query} {' '.join(terms)}" if terms else query
