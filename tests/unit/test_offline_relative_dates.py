"""The offline model writes relative dates as the absolute dates they mean, as the prompt asks.

End to end through the real prompt builder, so the `Item date:` line it renders and the one the
offline model reads back cannot drift apart; then the date arithmetic at its edges.
"""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.adapters.llm.relative_dates import parse_item_date, resolve_relative_dates
from hippocampus.contracts.prompt_format import ITEM_DATE_LABEL
from hippocampus.domain.condense.prompt import (
    SYSTEM_PROMPT,
    CondenseInput,
    PromptTemplate,
    render_items,
    spoken_date,
)

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # Monday 8 May 2023
TODAY = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)  # the prompt's "today": never counted from


def condense(*items: tuple[str, datetime | None], old_memory: str = "") -> str:
    content = render_items([CondenseInput(text=text, occurred_at=moment) for text, moment in items])
    prompt = PromptTemplate.built_in().render(
        old_memory=old_memory, new_content=content, max_words=200, today=TODAY
    )
    return OfflineModel(200).complete(SYSTEM_PROMPT, prompt).text


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("I bought a bike yesterday.", "I bought a bike on 7 May 2023."),
        ("Yesterday I bought a bike.", "On 7 May 2023 I bought a bike."),
        ("I start my new job today.", "I start my new job on 8 May 2023."),
        ("I fly to Lisbon tomorrow.", "I fly to Lisbon on 9 May 2023."),
        ("The day before yesterday I adopted a cat.", "On 6 May 2023 I adopted a cat."),
        ("I slept badly last night.", "I slept badly on the night of 7 May 2023."),
        ("I ran 10 km this morning.", "I ran 10 km on the morning of 8 May 2023."),
        ("I have a concert this evening.", "I have a concert on the evening of 8 May 2023."),
        ("I moved to Munich last week.", "I moved to Munich in the week of 1 May 2023."),
        ("My exam is next week.", "My exam is in the week of 15 May 2023."),
        ("I quit my job last month.", "I quit my job in April 2023."),
        ("My sister marries next month.", "My sister marries in June 2023."),
        ("I got married last year.", "I got married in 2022."),
        ("I retire next year.", "I retire in 2024."),
        ("I met Bob last Tuesday.", "I met Bob on Tuesday 2 May 2023."),
        ("I went hiking on Saturday.", "I went hiking on Saturday 6 May 2023."),
        ("I will fly to Paris on Friday.", "I will fly to Paris on Friday 12 May 2023."),
        ("I see my dentist next Thursday.", "I see my dentist on Thursday 11 May 2023."),
        ("I sold my car 3 days ago.", "I sold my car on 5 May 2023."),
        ("I sold my car two days ago.", "I sold my car on 6 May 2023."),
        ("I switched to Linux a week ago.", "I switched to Linux in the week of 1 May 2023."),
        ("I switched to Linux ten weeks ago.", "I switched to Linux in the week of 27 February 2023."),
        ("I leave for Japan in 5 days.", "I leave for Japan on 13 May 2023."),
        ("I have been ill since yesterday.", "I have been ill since 7 May 2023."),
        ("The offer runs until next month.", "The offer runs until June 2023."),
        ("TODAY I turned 40.", "On 8 May 2023 I turned 40."),
    ],
)
def test_each_relative_date_is_written_as_the_date_it_means(said: str, kept: str) -> None:
    assert condense((said, MONDAY)) == kept


def test_a_date_is_counted_in_the_items_own_offset() -> None:
    # 00:30 on 8 May in Berlin is still 7 May in UTC: "yesterday" is the 7th, not the 6th.
    berlin = datetime(2023, 5, 8, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    assert condense(("I arrived in Berlin yesterday.", berlin)) == "I arrived in Berlin on 7 May 2023."
    new_york = datetime(2023, 5, 7, 22, 0, tzinfo=timezone(timedelta(hours=-4)))
    assert condense(("I started therapy today.", new_york)) == "I started therapy on 7 May 2023."


def test_an_item_without_a_date_keeps_its_words() -> None:
    assert condense(("I bought a bike yesterday.", None)) == "I bought a bike yesterday."


def test_words_that_merely_contain_a_date_word_are_untouched() -> None:
    said = "My todays list is long. Yesterdays news bore me. Nowadays I code in Rust."
    assert condense((said, MONDAY)) == said


def test_code_is_never_rewritten() -> None:
    said = "I run `date --date=yesterday` in my scripts. I fixed the cron job yesterday."
    assert condense((said, MONDAY)) == (
        "I run `date --date=yesterday` in my scripts. I fixed the cron job on 7 May 2023."
    )


def test_a_fenced_code_block_is_never_rewritten() -> None:
    said = "```\nfind . -newermt yesterday\n\necho tomorrow\n```\nI cleaned the disk yesterday."
    kept = condense((said, MONDAY))
    assert "newermt yesterday" in kept and "echo tomorrow" in kept.lower()
    assert kept.endswith("I cleaned the disk on 7 May 2023.")


def test_each_item_is_counted_from_its_own_date() -> None:
    june = datetime(2023, 6, 1, 9, 0, tzinfo=UTC)
    assert condense(("Yesterday I moved to Munich.", MONDAY), ("Yesterday I adopted a cat.", june)) == (
        "On 7 May 2023 I moved to Munich. On 31 May 2023 I adopted a cat."
    )


def test_a_later_paragraph_of_an_item_is_counted_from_that_items_date() -> None:
    assert condense(("I live in Munich.\n\nI adopted a cat yesterday.", MONDAY)) == (
        "I live in Munich. I adopted a cat on 7 May 2023."
    )


def test_two_facts_of_one_day_are_both_kept() -> None:
    # The leading date is not what a sentence is about: neither replaces the other.
    assert condense(("Yesterday I bought a bike. Yesterday I sold my car.", MONDAY)) == (
        "On 7 May 2023 I bought a bike. On 7 May 2023 I sold my car."
    )


def test_the_old_memory_is_left_as_it_is() -> None:
    assert (
        condense(("I like tea.", MONDAY), old_memory="I moved last year.") == "I moved last year. I like tea."
    )


@pytest.mark.parametrize(
    "said",
    [
        "I have yoga on Monday.",  # no tense: which Monday is not said
        "I built the shed in 3 days.",  # a duration, not a date
        "I have been sick for the last week.",  # the seven days before, not a calendar week
        "Yesterday's meeting went well.",  # a possessive: no noun to move the date after
    ],
)
def test_what_names_no_date_is_left_as_it_is(said: str) -> None:
    assert condense((said, MONDAY)) == said


# The date module at its edges.


@pytest.mark.parametrize(
    "moment",
    [
        MONDAY,
        datetime(2023, 5, 8, 0, 30, tzinfo=timezone(timedelta(hours=2))),
        datetime(2024, 2, 29, 23, 59, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
        datetime(2024, 1, 1, 5, 0, tzinfo=timezone(timedelta(hours=5, minutes=45))),
    ],
)
def test_the_item_date_line_is_read_back_as_written(moment: datetime) -> None:
    assert parse_item_date(f"{ITEM_DATE_LABEL} {spoken_date(moment)}") == moment


@pytest.mark.parametrize(
    "line",
    [
        "Item date: Tuesday 8 May 2023, 13:56 UTC",  # the weekday does not match the date
        "Item date: Monday 31 February 2023, 13:56 UTC",
        "Item date: Monday 8 Mai 2023, 13:56 UTC",
        "Item date: 2023-05-08T13:56:00Z",
        "Item date: Monday 8 May 2023",
        "Item date: Monday 8 May 2023, 13:56 UTC+25:00",
        "Item date:",
    ],
)
def test_an_item_date_line_in_another_form_is_not_read(line: str) -> None:
    assert parse_item_date(line) is None


def test_an_unreadable_item_date_leaves_the_items_words() -> None:
    prompt = PromptTemplate.built_in().render(
        old_memory="", new_content="Item date: sometime in May\nI bought a bike yesterday.", max_words=50
    )
    assert OfflineModel(50).complete(SYSTEM_PROMPT, prompt).text == "I bought a bike yesterday."


@pytest.mark.parametrize(
    ("said", "day", "written"),
    [
        ("last month", date(2024, 1, 15), "in December 2023"),
        ("next month", date(2023, 12, 31), "in January 2024"),
        ("last year", date(2024, 1, 1), "in 2023"),
        ("yesterday", date(2024, 1, 1), "on 31 December 2023"),
        ("tomorrow", date(2023, 12, 31), "on 1 January 2024"),
        ("tomorrow", date(2024, 2, 28), "on 29 February 2024"),
        ("yesterday", date(2024, 3, 1), "on 29 February 2024"),
        ("yesterday", date(2023, 3, 1), "on 28 February 2023"),
        ("next Monday", date(2023, 5, 8), "on Monday 15 May 2023"),  # said on a Monday
        ("last Monday", date(2023, 5, 8), "on Monday 1 May 2023"),
        ("next Sunday", date(2023, 5, 13), "on Sunday 14 May 2023"),
        ("last Sunday", date(2023, 5, 8), "on Sunday 7 May 2023"),
        ("last week", date(2023, 5, 7), "in the week of 24 April 2023"),  # a Sunday
        ("next week", date(2023, 12, 27), "in the week of 1 January 2024"),
        ("last weekend", date(2023, 5, 8), "on the weekend of 6 May 2023"),
        ("a couple of days ago", date(2024, 3, 1), "on 28 February 2024"),
        ("3 months ago", date(2024, 2, 29), "in November 2023"),
        ("in a week", date(2024, 2, 25), "in the week of 26 February 2024"),
        ("in two days", date(2024, 2, 28), "on 1 March 2024"),
    ],
)
def test_relative_dates_across_boundaries(said: str, day: date, written: str) -> None:
    assert resolve_relative_dates(f"It is {said}", day) == f"It is {written}"


def test_a_date_out_of_the_calendar_stays_as_said() -> None:
    assert resolve_relative_dates("Rome was founded 999 years ago.", date(500, 1, 1)) == (
        "Rome was founded 999 years ago."
    )
