"""Relative dates made absolute, for the offline model (docs/architecture.md "Condensation").

The built-in prompt asks a model to write "yesterday", "last Tuesday" or "next month" as the dates
they mean, counted from the date of the item that says them. The offline model does the same: it
reads an item's `Item date:` line back (`parse_item_date`) and rewrites its sentences
(`resolve_relative_dates`), leaving code (inline backticks) untouched.

Wording: a day is "on 7 May 2023", a part of one "on the morning of 8 May 2023", a named weekday
"on Tuesday 2 May 2023", a week "in the week of 1 May 2023" (its Monday), a weekend "on the weekend
of 6 May 2023" (its Saturday), a month "in April 2023", a year "in 2022". After a preposition
("since yesterday", "until next month") the "on"/"in" is left out: "since 7 May 2023".

Not `dateparser`: it finds dates in text, but its language data would add megabytes and a second
regex engine to the condenser's asset for a stand-in that needs a few English phrases.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from hippocampus.contracts.prompt_format import ITEM_DATE_LABEL, MONTHS, WEEKDAYS, day_in_words

# `Item date: Monday 8 May 2023, 13:56 UTC` or `… 00:30 UTC+02:00`, exactly as `spoken_date` writes it.
_ITEM_DATE = re.compile(
    re.escape(ITEM_DATE_LABEL)
    + r" (?P<weekday>[A-Za-z]+) (?P<day>\d{1,2}) (?P<month>[A-Za-z]+) (?P<year>\d{4}),"
    r" (?P<hour>\d{2}):(?P<minute>\d{2}) UTC(?:(?P<sign>[+-])(?P<oh>\d{2}):(?P<om>\d{2}))?"
)


def parse_item_date(line: str) -> datetime | None:
    """The moment an `Item date:` line gives, in its own offset; None unless it is exactly that form."""
    match = _ITEM_DATE.fullmatch(line.strip())
    if match is None or match["month"] not in MONTHS:
        return None
    sign = -1 if match["sign"] == "-" else 1
    offset = timedelta(hours=int(match["oh"] or 0), minutes=int(match["om"] or 0)) * sign
    try:
        moment = datetime(
            int(match["year"]),
            MONTHS.index(match["month"]) + 1,
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            tzinfo=timezone(offset),
        )
    except ValueError:  # 31 February, 25:00, an offset of a day or more
        return None
    # A weekday that does not match the date is not a line `spoken_date` wrote.
    return moment if WEEKDAYS[moment.weekday()] == match["weekday"] else None


def weekday_text(day: date) -> str:
    return f"{WEEKDAYS[day.weekday()]} {day_in_words(day)}"


def week_monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def shift_months(day: date, months: int) -> tuple[int, int]:
    """(year, month) `months` after `day`'s month (negative: before)."""
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def month_text(day: date, months: int) -> str:
    year, month = shift_months(day, months)
    if not 1 <= year <= 9999:
        raise ValueError("year out of range")
    return f"{MONTHS[month - 1]} {year}"


def year_text(day: date, years: int) -> str:
    if not 1 <= day.year + years <= 9999:
        raise ValueError("year out of range")
    return str(day.year + years)


def weekday_after(day: date, weekday: int) -> date:
    """The first `weekday` strictly after `day` ("next Monday" on a Monday: a week later)."""
    return day + timedelta(days=(weekday - day.weekday() - 1) % 7 + 1)


def weekday_before(day: date, weekday: int) -> date:
    """The last `weekday` strictly before `day` ("last Monday" on a Monday: a week earlier)."""
    return day - timedelta(days=(day.weekday() - weekday - 1) % 7 + 1)


_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUMBER = r"\d{1,3}|a couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten"
_WEEKDAY = "|".join(WEEKDAYS)
_STEP = {"last": -1, "this": 0, "next": 1}

# Markers of the sense of a sentence, for "on Friday" and "in 3 days" (which say nothing of it).
_FUTURE = re.compile(
    r"\b(?:will|shall|won't|gonna|going to|(?:plan|planning|want|hope|intend|need|have|has|about) to)\b"
    r"|['\u2019]ll\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:was|were|went|had|did|got|saw|met|bought|came|made|took|ran|ate|left|found|gave|told|said|"
    r"began|wrote|flew|drove|spent|sold|paid|lost|won|felt|heard|kept|sent|built|broke|chose|forgot|"
    r"thought|brought|caught|taught|fell|slept|became|held|[a-z]{2,}ed)\b",
    re.IGNORECASE,
)
_NOT_PAST = frozenset(
    {"need", "speed", "succeed", "proceed", "exceed", "indeed", "breed", "bred", "embed", "hundred"}
)


def sentence_sense(sentence: str) -> int:
    """1 when the sentence speaks of the future, -1 of the past, 0 when it does not say."""
    if _FUTURE.search(sentence):
        return 1
    past = (word for word in _PAST.findall(sentence) if word.lower() not in _NOT_PAST)
    return -1 if next(past, None) else 0


@dataclass(frozen=True)
class _Rule:
    """A relative expression: its pattern (named groups prefixed by `name`) and what it means."""

    name: str
    pattern: str
    # (groups, the item's day, the sentence's sense) → (preposition, absolute date), None to keep it
    meaning: Callable[[dict[str, str], date, int], tuple[str, str] | None]


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBER_WORDS[" ".join(text.lower().split())]


def _days(day: date, offset: int) -> tuple[str, str]:
    return "on", day_in_words(day + timedelta(days=offset))


def _ago_or_ahead(unit: str, count: int, day: date) -> tuple[str, str]:
    unit = unit.lower().rstrip("s")
    if unit == "day":
        return _days(day, count)
    if unit == "week":
        return "in", f"the week of {day_in_words(week_monday(day + timedelta(weeks=count)))}"
    if unit == "month":
        return "in", month_text(day, count)
    return "in", year_text(day, count)


def _word_day(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    return _days(day, {"today": 0, "yesterday": -1, "tomorrow": 1}[groups["wd_word"].lower()])


def _part_of_day(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    offset = {"this": 0, "yesterday": -1, "tomorrow": 1}[groups["pd_when"].lower()]
    return "on", f"the {groups['pd_part'].lower()} of {day_in_words(day + timedelta(days=offset))}"


def _night(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    return "on", f"the night of {day_in_words(day if 'tn' in groups else day - timedelta(days=1))}"


def _week(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    monday = week_monday(day) + timedelta(weeks=_STEP[groups["wk_step"].lower()])
    if groups["wk_unit"].lower() == "weekend":
        return "on", f"the weekend of {day_in_words(monday + timedelta(days=5))}"
    return "in", f"the week of {day_in_words(monday)}"


def _month_or_year(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    step = _STEP[groups["my_step"].lower()]
    return "in", month_text(day, step) if groups["my_unit"].lower() == "month" else year_text(day, step)


def _named_weekday(groups: dict[str, str], day: date, sense: int) -> tuple[str, str] | None:
    weekday = WEEKDAYS.index(groups["nw_day"].capitalize())
    step = groups["nw_step"].lower()
    direction = _STEP[step] if step != "on" else sense
    if direction == 0:
        return None  # "I have yoga on Monday": no tense to tell which Monday
    found = weekday_after(day, weekday) if direction > 0 else weekday_before(day, weekday)
    return "on", weekday_text(found)


def _ago(groups: dict[str, str], day: date, sense: int) -> tuple[str, str]:
    return _ago_or_ahead(groups["ag_unit"], -_count(groups["ag_n"]), day)


def _ahead(groups: dict[str, str], day: date, sense: int) -> tuple[str, str] | None:
    if sense < 0:
        return None  # "I built it in 3 days" is a duration
    return _ago_or_ahead(groups["ah_unit"], _count(groups["ah_n"]), day)


# Longer expressions first: at one position the first alternative that matches wins.
_RULES = (
    _Rule(
        "two_days",
        r"the day (?P<td_dir>before yesterday|after tomorrow)",
        lambda groups, day, sense: _days(day, -2 if groups["td_dir"].lower().startswith("before") else 2),
    ),
    _Rule("night", r"last night|(?P<tn>tonight)", _night),
    _Rule(
        "part_of_day",
        r"(?P<pd_when>this|yesterday|tomorrow) (?P<pd_part>morning|afternoon|evening|night)",
        _part_of_day,
    ),
    _Rule("word_day", r"(?P<wd_word>today|yesterday|tomorrow)", _word_day),
    _Rule("week", r"(?P<wk_step>last|this|next) (?P<wk_unit>week|weekend)", _week),
    _Rule("month_or_year", r"(?P<my_step>last|this|next) (?P<my_unit>month|year)", _month_or_year),
    _Rule("named_weekday", rf"(?P<nw_step>last|next|on) (?P<nw_day>{_WEEKDAY})", _named_weekday),
    _Rule("ago", rf"(?P<ag_n>{_NUMBER}) (?P<ag_unit>days?|weeks?|months?|years?) ago", _ago),
    _Rule("ahead", rf"in (?P<ah_n>{_NUMBER}) (?P<ah_unit>days?|weeks?|months?|years?)", _ahead),
)
_PREPOSITION = r"since|until|till|from|by|before|after|to|through|during|for|of"
# Whole words only ("todays", "nowadays" stay) and no possessive ("yesterday's" stays: there is no
# noun to move the date after); \u2019 is the typographic apostrophe.
_EXPRESSION = re.compile(
    # Not "for the last week" (the seven days before): that is no date to resolve.
    rf"(?<![\w'\u2019-])(?<!\bthe\s)(?:(?P<prep>{_PREPOSITION})\s+)?"
    + "(?:"
    + "|".join(f"(?P<{rule.name}>{rule.pattern.replace(' ', r'\s+')})" for rule in _RULES)
    + r")(?![\w-]|['\u2019]s\b)",
    re.IGNORECASE,
)
# Inline code, a run of backticks to the same run (or to the end when it is never closed).
_CODE = re.compile(r"(`+).*?(?:\1|$)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def resolve_relative_dates(text: str, day: date) -> str:
    """`text` with its relative dates written as the absolute dates they mean, counted from `day`."""
    pieces: list[str] = []
    start = 0
    for code in _CODE.finditer(text):
        pieces += [_resolve_prose(text[start : code.start()], day), code.group()]
        start = code.end()
    return "".join([*pieces, _resolve_prose(text[start:], day)])


def _resolve_prose(text: str, day: date) -> str:
    parts = re.split(f"({_SENTENCE_END.pattern})", text)
    return "".join(part if index % 2 else _resolve_sentence(part, day) for index, part in enumerate(parts))


def _resolve_sentence(sentence: str, day: date) -> str:
    sense = sentence_sense(sentence)
    return _EXPRESSION.sub(lambda match: _replacement(match, day, sense), sentence)


def _replacement(match: re.Match[str], day: date, sense: int) -> str:
    rule = next(rule for rule in _RULES if match[rule.name] is not None)
    groups = {name: value for name, value in match.groupdict().items() if value is not None}
    try:
        meaning = rule.meaning(groups, day, sense)
    except (OverflowError, ValueError):  # "2000 years ago": before year 1
        meaning = None
    if meaning is None:
        return match.group()
    preposition, absolute = meaning
    if match["prep"]:
        return f"{match['prep']} {absolute}"  # "since 7 May 2023", not "since on 7 May 2023"
    phrase = f"{preposition} {absolute}"
    return phrase[0].upper() + phrase[1:] if match.group()[0].isupper() else phrase


# A sentence's leading date, as `resolve_relative_dates` writes it: not what the sentence is about.
LEADING_DATE = re.compile(
    r"^(?:on|in)\s+(?:the\s+(?:morning|afternoon|evening|night|week|weekend)\s+of\s+)?"
    rf"(?:(?:{_WEEKDAY})\s+)?(?:\d{{1,2}}\s+)?(?:(?:{'|'.join(MONTHS)})\s+)?\d{{1,4}}\b[\s,]*",
    re.IGNORECASE,
)
