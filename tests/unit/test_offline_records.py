"""The offline model's structured answer: records from what the user says, and a summary built from them.

End to end through the real prompt builder (`PromptTemplate.built_in`, `render_items`, `record_line`),
so the prompt the condenser renders and the one the offline model reads back cannot drift apart.
"""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.contracts.prompt_format import NOTHING_TO_KEEP, count_words, record_line
from hippocampus.contracts.records import (
    ANSWER_SCHEMA,
    MAX_RECORD_CHARS,
    MAX_RECORD_OPERATIONS,
    RECORD_CATEGORIES,
    CondensationAnswer,
)
from hippocampus.domain.condense.prompt import SYSTEM_PROMPT, CondenseInput, PromptTemplate, render_items

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # Monday 8 May 2023
TODAY = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)  # the prompt's "today": never counted from
SINCE = "Monday 1 May 2023"
OP_KEYS = {"op", "record_id", "text", "category", "valid_from", "source_items"}


def said(text: str, item_id: str = "t1", at: datetime = MONDAY) -> CondenseInput:
    return CondenseInput(text=text, item_id=item_id, occurred_at=at)


def answer(
    *items: CondenseInput,
    records: tuple[tuple[str, ...], ...] = (),
    old_memory: str = "",
    user_name: str | None = None,
    max_words: int = 50,
) -> dict[str, Any]:
    """The parsed answer; `records`: (id, category, text[, since]), since 1 May 2023 unless said."""
    prompt = PromptTemplate.built_in().render(
        old_memory=old_memory,
        new_content=render_items(items),
        max_words=max_words,
        user_name=user_name,
        records="\n".join(
            record_line(rid, category, (*since, SINCE)[0], text) for rid, category, text, *since in records
        ),
        today=TODAY,
    )
    result = OfflineModel(max_words).complete(SYSTEM_PROMPT, prompt, schema=ANSWER_SCHEMA)
    parsed: dict[str, Any] = json.loads(result.text)
    CondensationAnswer.model_validate(parsed)
    assert all(set(op) == OP_KEYS for op in parsed["operations"])
    return parsed


def adds(result: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    return [(op["category"], op["text"]) for op in result["operations"] if op["op"] == "add"]


# --- Statements become records -------------------------------------------------------------------


def test_a_speakers_move_is_one_location_record_naming_them() -> None:
    result = answer(said("Rosa: I moved to Berlin last week."))
    assert result["operations"] == [
        {
            "op": "add",
            "record_id": None,
            "text": "Rosa moved to Berlin in the week of 1 May 2023.",
            "category": "location",
            "valid_from": "2023-05-01",
            "source_items": ["t1"],
        }
    ]
    assert result["summary"] == "Rosa moved to Berlin in the week of 1 May 2023."


def test_the_user_is_named_by_the_user_name_else_the_user() -> None:
    conversation = CondenseInput(pairs=(("I live in Paris.", "Nice! I live in London."),), item_id="t1")
    assert adds(answer(conversation, user_name="Sam")) == [("location", "Sam lives in Paris.")]
    # Without a name; the assistant's "I live in London" is never the user's statement.
    assert adds(answer(conversation)) == [("location", "The user lives in Paris.")]
    assert adds(answer(said("User: I live in Paris."))) == [("location", "The user lives in Paris.")]


@pytest.mark.parametrize(
    ("statement", "category", "text"),
    [
        ("Rosa: I'm a trans woman.", "identity", "Rosa is a trans woman."),
        ("Rosa: I'm 34 years old.", "identity", "Rosa is 34 years old."),
        ("Rosa: I'm Swedish.", "identity", "Rosa is Swedish."),
        ("My name is Alice.", "identity", "The user's name is Alice."),
        ("Rosa: I live in Paris.", "location", "Rosa lives in Paris."),
        ("Rosa: I'm from Sweden.", "location", "Rosa is from Sweden."),
        ("Rosa: I work as a nurse at St Mary's.", "work", "Rosa works as a nurse at St Mary's."),
        ("Rosa: I'm studying psychology.", "work", "Rosa is studying psychology."),
        ("Rosa: I run a small bakery.", "work", "Rosa runs a small bakery."),
        ("Rosa: My sister lives in Rome.", "relationship", "Rosa's sister lives in Rome."),
        ("Rosa: I have two kids.", "relationship", "Rosa has two kids."),
        ("Rosa: I'm married.", "relationship", "Rosa is married."),
        ("Rosa: I love my kids.", "preference", "Rosa loves their kids."),
        ("Rosa: I really enjoy painting!", "preference", "Rosa really enjoys painting."),
        ("Rosa: My favourite colour is blue.", "preference", "Rosa's favourite colour is blue."),
        ("Rosa: I own a red bike.", "possession", "Rosa owns a red bike."),
        ("Rosa: I have a dog.", "possession", "Rosa has a dog."),
        ("Rosa: I'm going to adopt a child.", "plan", "Rosa is going to adopt a child."),
        ("Rosa: I want to become a counselor.", "plan", "Rosa wants to become a counselor."),
        ("Rosa: I went to a support group.", "event", "Rosa went to a support group."),
        ("Rosa: I painted a lake sunrise.", "event", "Rosa painted a lake sunrise."),
        ("Tomas: We went camping.", "event", "Tomas and others went camping."),
    ],
)
def test_each_kind_of_durable_statement_is_one_third_person_record(
    statement: str, category: str, text: str
) -> None:
    assert adds(answer(said(statement))) == [(category, text)]


def test_a_compound_sentence_is_one_record_per_statement() -> None:
    result = answer(said("Rosa: I live in Paris and I work at a bakery; my husband is a chef."))
    assert adds(result) == [
        ("location", "Rosa lives in Paris."),
        ("work", "Rosa works at a bakery."),
        ("relationship", "Rosa's husband is a chef."),
    ]


# --- Dates ---------------------------------------------------------------------------------------


def test_relative_dates_are_resolved_into_the_text_and_valid_from() -> None:
    result = answer(
        said("Tomas: I ran a charity race yesterday.", "t1"),
        said("Tomas: Last Saturday I painted a sunset.", "t2"),
        said("Tomas: I bought a new bike.", "t3"),
        said("Tomas: I fly to Lisbon tomorrow.", "t4"),
    )
    assert [(op["text"], op["category"], op["valid_from"]) for op in result["operations"]] == [
        ("Tomas ran a charity race on 7 May 2023.", "event", "2023-05-07"),
        # A leading date moves after the statement, so the record starts with who it is about.
        ("Tomas painted a sunset on Saturday 6 May 2023.", "event", "2023-05-06"),
        # No date said: null, the item's date.
        ("Tomas bought a new bike.", "possession", None),
        # A later date: a plan, true from when it is said.
        ("Tomas flies to Lisbon on 9 May 2023.", "plan", None),
    ]


def test_dates_are_counted_from_each_items_own_date() -> None:
    result = answer(
        said("Rosa: I moved to Oslo yesterday.", "t1", MONDAY),
        said("Rosa: I went hiking yesterday.", "t2", MONDAY + timedelta(days=10)),
    )
    assert [op["valid_from"] for op in result["operations"]] == ["2023-05-07", "2023-05-17"]


# --- What never becomes a record -----------------------------------------------------------------


def test_a_plain_statement_no_rule_knows_is_kept_as_other() -> None:
    result = answer(said("Alice sells candles.", "t1"), said("Prefers dark mode.", "t2"))
    assert [(op["category"], op["text"]) for op in result["operations"]] == [
        ("other", "Alice sells candles."),
        ("other", "Prefers dark mode."),
    ]


def test_small_talk_questions_and_assistant_lines_make_no_operations() -> None:
    chatter = (
        said("Rosa: Hey Tom! Good to see you! How have you been?", "t1"),
        said("Tomas: Thanks so much! That's awesome. I love that! I'm so happy for you!", "t2"),
        CondenseInput(
            pairs=(("Hi! Thanks. Can you help me?", "Sure, I live in the cloud and I love Python."),),
            item_id="t3",
        ),
    )
    result = answer(*chatter)
    assert result == {"summary": NOTHING_TO_KEEP, "operations": []}
    # A summary is kept as it is when nothing is worth keeping.
    assert answer(*chatter, old_memory="Alice sells candles.")["summary"] == "Alice sells candles."


# --- Superseding ---------------------------------------------------------------------------------

RECORDS = (
    ("rec_paris", "location", "Rosa lives in Paris."),
    ("rec_hiking", "preference", "Rosa likes hiking."),
    ("rec_coffee", "preference", "Rosa prefers coffee."),
    ("rec_boston", "location", "Tomas lives in Boston."),
    ("rec_acme", "work", "Rosa works at Acme as an engineer."),
    ("rec_bike", "possession", "Rosa bought a bike."),
)


def test_a_move_invalidates_where_they_lived_and_nothing_else() -> None:
    result = answer(said("Rosa: I moved to Berlin."), records=RECORDS)
    assert result["operations"] == [
        {
            "op": "invalidate",
            "record_id": "rec_paris",
            "text": "Rosa moved to Berlin.",
            "category": "location",
            "valid_from": None,
            "source_items": ["t1"],
        }
    ]
    assert "Paris" not in result["summary"] and "Rosa moved to Berlin." in result["summary"]
    assert "Tomas lives in Boston." in result["summary"]


def test_another_speakers_move_leaves_caroline_where_she_lives() -> None:
    result = answer(said("Tomas: I moved to Denver!"), records=RECORDS)
    assert [(op["op"], op["record_id"], op["text"]) for op in result["operations"]] == [
        ("invalidate", "rec_boston", "Tomas moved to Denver.")
    ]
    assert "Rosa lives in Paris." in result["summary"]


def test_a_new_preference_supersedes_the_same_object_only() -> None:
    result = answer(said("Rosa: I now prefer tea over coffee."), records=RECORDS)
    assert [(op["op"], op["record_id"], op["text"]) for op in result["operations"]] == [
        ("invalidate", "rec_coffee", "Rosa now prefers tea over coffee.")
    ]
    assert "Rosa likes hiking." in result["summary"]


@pytest.mark.parametrize(
    ("statement", "superseded", "category"),
    [
        ("Rosa: I got a new job at Globex.", "rec_acme", "work"),
        ("Rosa: I work as a teacher now.", "rec_acme", "work"),
        ("Rosa: I quit my job last month.", "rec_acme", "work"),
        ("Rosa: I sold my bike.", "rec_bike", "possession"),
        ("Rosa: I hate hiking now.", "rec_hiking", "preference"),
        ("Rosa: I don't live in Paris anymore.", "rec_paris", "location"),
    ],
)
def test_a_newer_statement_of_the_same_subject_invalidates_that_record(
    statement: str, superseded: str, category: str
) -> None:
    operations = answer(said(statement), records=RECORDS)["operations"]
    assert [(op["op"], op["record_id"], op["category"]) for op in operations] == [
        ("invalidate", superseded, category)
    ]


def test_records_written_without_a_subject_or_as_the_user_are_the_users() -> None:
    records = (("rec_1", "location", "Lives in Paris."), ("rec_2", "identity", "The user is 34 years old."))
    operations = answer(said("I moved to Lyon. I'm 35 now."), records=records, user_name="Sam")["operations"]
    assert [(op["record_id"], op["text"]) for op in operations] == [
        ("rec_1", "Sam moved to Lyon."),
        ("rec_2", "Sam is 35 now."),
    ]


def test_what_is_said_of_a_relative_supersedes_only_what_was_said_of_them() -> None:
    records = (
        ("rec_1", "relationship", "Sam's sister lives in Rome."),
        ("rec_2", "location", "Sam lives in Rome."),
    )
    result = answer(said("My sister moved to Oslo."), records=records, user_name="Sam")
    assert [(op["record_id"], op["text"]) for op in result["operations"]] == [
        ("rec_1", "Sam's sister moved to Oslo.")
    ]


def test_a_statement_superseded_within_the_burst_stays_on_record_as_ended() -> None:
    """A backfill's burst says both: the older is added and ended by the newer (`new:1`), so what
    was true before stays on record for `as_of`."""
    result = answer(said("Rosa: I live in Paris.", "t1"), said("Rosa: I moved to Rome.", "t2"))
    assert [(op["op"], op["record_id"], op["text"]) for op in result["operations"]] == [
        ("add", None, "Rosa lives in Paris."),
        ("invalidate", "new:1", "Rosa moved to Rome."),
    ]
    assert "Rome" in result["summary"] and "Paris" not in result["summary"]


# --- Repeats -------------------------------------------------------------------------------------


def test_an_exact_or_near_repeat_is_not_added_again() -> None:
    for statement in (
        "Rosa: I live in Paris!",
        "Rosa: I moved to Paris.",
        "Rosa: I like hiking.",
    ):
        assert answer(said(statement), records=RECORDS)["operations"] == []
    # Said twice in one burst: one record, learned from both items.
    result = answer(said("Rosa: I love jazz.", "t1"), said("Rosa: I really love jazz!", "t2"))
    assert [(op["text"], op["source_items"]) for op in result["operations"]] == [
        ("Rosa loves jazz.", ["t1", "t2"])
    ]


# --- The summary ---------------------------------------------------------------------------------


def test_the_summary_is_built_from_the_current_records_after_the_operations() -> None:
    result = answer(said("Rosa: I moved to Berlin. I adopted a cat."), records=RECORDS, max_words=200)
    summary = result["summary"]
    current = [text for rid, _, text in RECORDS if rid != "rec_paris"] + [
        "Rosa moved to Berlin.",
        "Rosa adopted a cat.",
    ]
    assert sorted(summary.replace(". ", ".\n").splitlines()) == sorted(current)


@pytest.mark.parametrize("max_words", [3, 8, 12, 30, 60])
def test_the_summary_never_exceeds_the_budget_and_puts_who_they_are_first(max_words: int) -> None:
    result = answer(
        said("Rosa: I went to a pride parade yesterday.", "t1"),
        said("Rosa: I love painting. I live in Berlin.", "t2"),
        said("Rosa: I'm a trans woman and I work as a counselor at a youth centre.", "t3"),
        max_words=max_words,
    )
    summary = result["summary"]
    assert 0 < count_words(summary) <= max_words
    order = ["trans woman", "Berlin", "counselor", "painting", "pride parade"]  # identity … event
    present = [part for part in order if part in summary]
    assert [summary.find(part) for part in present] == sorted(summary.find(part) for part in present)
    if max_words >= 12:
        assert summary.startswith("Rosa is a trans woman. Rosa lives in Berlin.")
    if max_words >= 60:
        assert present == order


def test_the_summary_takes_whole_records_and_cuts_only_a_first_one_over_budget() -> None:
    result = answer(said("Rosa: I live in Berlin. I went to a very long and memorable concert."), max_words=6)
    assert result["summary"] == "Rosa lives in Berlin."
    long_record = "Rosa: I live in a small flat above the old bakery near the river in Berlin."
    assert answer(said(long_record), max_words=6)["summary"] == "Rosa lives in a small flat"


def test_newest_record_first_within_a_category() -> None:
    result = answer(
        said("Rosa: I went hiking last month.", "t1"),
        said("Rosa: I went to a concert yesterday.", "t2"),
        records=(("rec_old", "event", "Rosa ran a race in 2020.", "Wednesday 1 January 2020"),),
    )
    assert result["summary"] == (
        "Rosa went to a concert on 7 May 2023. Rosa went hiking in April 2023. Rosa ran a race in 2020."
    )


def test_a_memory_that_predates_records_is_merged_into_as_before() -> None:
    result = answer(said("I live in Berlin."), old_memory="Alice sells candles.")
    assert result["summary"] == "Alice sells candles. I live in Berlin."
    assert adds(result) == [("location", "The user lives in Berlin.")]


# --- Limits, determinism, scale ------------------------------------------------------------------


def test_at_most_the_operation_limit_and_record_text_within_its_limit() -> None:
    hobbies = " ".join(f"I love hobby{index}." for index in range(MAX_RECORD_OPERATIONS + 5))
    operations = answer(said(f"Rosa: {hobbies}"))["operations"]
    assert len(operations) == MAX_RECORD_OPERATIONS
    assert operations[-1]["text"] == f"Rosa loves hobby{MAX_RECORD_OPERATIONS + 4}."  # the newest kept
    rambling = "Rosa: I love " + "long sunny walks along the river " * 30 + "."
    (text,) = [op["text"] for op in answer(said(rambling))["operations"]]
    assert len(text) <= MAX_RECORD_CHARS and text.startswith("Rosa loves long sunny walks")


# A two-person chat written for these tests, shaped like a long-conversation benchmark's turns.
DIALOGUE = [
    ("Rosa", "Hey Tom! Good to see you again! How was the week?"),
    ("Tomas", "Hi Rosa! I'm buried under the garden project & my job. What's new with you?"),
    ("Rosa", "I went to a pottery workshop yesterday and it was so relaxing."),
    ("Tomas", "Nice one, Rosa! Did you make anything?"),
    ("Rosa", "As a retired nurse, I've found so much time for hobbies this year."),
    ("Tomas", "I ran a half marathon for the children's hospital last Saturday."),
    ("Rosa", "I moved from Portugal 4 years ago with my family."),
    ("Tomas", "I have been married for 8 years and we have two daughters."),
    ("Rosa", "I'm keen on volunteering at the community garden."),
    ("Tomas", "You'd love the garden! Take a look at this."),
    ("Tomas", "Yeah, I built that greenhouse last year! It's special to me."),
    ("Rosa", "Thanks, Tomas! That's lovely. Did you build it alone?"),
]


def dialogue_items(turns: int = len(DIALOGUE)) -> list[CondenseInput]:
    return [
        said(f"{speaker}: {text}", f"turn-{index}", MONDAY + timedelta(minutes=index))
        for index, (speaker, text) in ((index, DIALOGUE[index % len(DIALOGUE)]) for index in range(turns))
    ]


def test_a_two_person_chat_records_each_speakers_facts() -> None:
    result = answer(*dialogue_items(), max_words=200)
    records = {(op["category"], op["text"], op["valid_from"]) for op in result["operations"]}
    assert records == {
        ("event", "Rosa went to a pottery workshop on 7 May 2023 and it was so relaxing.", "2023-05-07"),
        ("work", "Rosa is a retired nurse.", None),
        ("possession", "Rosa has found so much time for hobbies in 2023.", "2023-01-01"),
        (
            "event",
            "Tomas ran a half marathon for the children's hospital on Saturday 6 May 2023.",
            "2023-05-06",
        ),
        ("location", "Rosa moved from Portugal in 2019 with their family.", "2019-01-01"),
        ("relationship", "Tomas has been married for 8 years.", None),
        ("relationship", "Tomas and others have two daughters.", None),
        ("preference", "Rosa is keen on volunteering at the community garden.", None),
        ("event", "Tomas built that greenhouse in 2022.", "2022-01-01"),
        # No rule knows it, yet it is a plain statement: kept as said.
        ("other", "Tomas is buried under the garden project & their job.", None),
    }
    assert all(
        op["source_items"] and op["source_items"][0].startswith("turn-") for op in result["operations"]
    )
    assert result["summary"].startswith(
        "Rosa moved from Portugal in 2019 with their family. Rosa is a retired nurse."
    )


def test_the_answer_is_deterministic_and_fast_on_a_long_conversation() -> None:
    items = dialogue_items(214)
    first = answer(*items)
    assert all(answer(*items) == first for _ in range(2))
    assert 0 < len(first["operations"]) <= MAX_RECORD_OPERATIONS
    assert {op["category"] for op in first["operations"]} <= set(RECORD_CATEGORIES)


# --- The plain-text path is unchanged ------------------------------------------------------------


def test_without_a_schema_the_answer_is_the_plain_text_merge() -> None:
    prompt = PromptTemplate.built_in().render(
        old_memory="Alice sells candles.",
        new_content=render_items([said("I live in Berlin.")]),
        max_words=50,
        today=TODAY,
    )
    model = OfflineModel(50)
    # The item's date and id lines are not what the user said.
    assert model.complete(SYSTEM_PROMPT, prompt).text == "Alice sells candles. I live in Berlin."
