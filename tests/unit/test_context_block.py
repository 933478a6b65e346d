"""The context block: fixed layout, summary first, no duplicates, never over max_words."""

import random
from datetime import UTC, datetime

import pytest

from hippocampus.contracts.prompt_format import count_words
from hippocampus.domain.recall.context_block import (
    EPISODES_HEADING,
    FACTS_HEADING,
    MEMORY_HEADING,
    RECORDS_HEADING,
    build_context,
)
from hippocampus.domain.recall.ranking import Document, Ranked

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SUMMARY = "Alice sells handmade candles on Shopify."


def item(doc_type, doc_id, text, score=0.5):
    return Ranked(Document(doc_type, doc_id, text, {}, NOW, None), score)


DATED = " (since 1 June 2026)"  # a record's line ends with the date it became true (NOW here)


RANKED = [
    item("episode", "turn-7", "User: Which payment provider?\nAssistant: You use Stripe.", 0.9),
    item("fact", "pref_dark_mode", "Prefers dark mode.", 0.8),
    item("fact", "ships", "Ships to Canada.", 0.4),
]


def test_the_documented_layout():
    block = build_context(SUMMARY, RANKED, max_words=300)
    assert block.text == (
        f"{MEMORY_HEADING}\n{SUMMARY}\n\n"
        f"{FACTS_HEADING}\n- Prefers dark mode.\n- Ships to Canada.\n\n"
        f"{EPISODES_HEADING}\n- User: Which payment provider? Assistant: You use Stripe."
    )
    assert block.word_count == count_words(block.text) == 6 + 6 + 2 + 4 + 4 + 3 + 9
    assert block.sources == [
        {"type": "memory"},
        {"type": "fact", "id": "pref_dark_mode"},
        {"type": "fact", "id": "ships"},
        {"type": "episode", "id": "turn-7"},
    ]


def test_records_sit_between_facts_and_episodes_each_with_the_date_it_became_true():
    since = datetime(2023, 5, 8, 10, tzinfo=UTC)
    ranked = [
        RANKED[0],
        Ranked(Document("record", "rec_1", "Lives in\nBerlin.", {}, since, None), 0.85),
        *RANKED[1:],
    ]
    block = build_context(SUMMARY, ranked, max_words=300)
    assert block.text == (
        f"{MEMORY_HEADING}\n{SUMMARY}\n\n"
        f"{FACTS_HEADING}\n- Prefers dark mode.\n- Ships to Canada.\n\n"
        f"{RECORDS_HEADING}\n- Lives in Berlin. (since 8 May 2023)\n\n"
        f"{EPISODES_HEADING}\n- User: Which payment provider? Assistant: You use Stripe."
    )
    assert [s.get("type") for s in block.sources] == ["memory", "fact", "fact", "record", "episode"]
    assert block.word_count == count_words(block.text)
    # Its date counts towards max_words: whole (date included) or absent. 6 + 6 + 2 + 8 = 22.
    records_only = [r for r in ranked if r.document.type == "record"]
    assert [s.get("id") for s in build_context(SUMMARY, records_only, 21).sources] == [None]
    assert build_context(SUMMARY, records_only, 22).text.endswith("- Lives in Berlin. (since 8 May 2023)")


def test_a_record_repeating_a_fact_or_the_summary_is_left_out():
    since = datetime(2024, 3, 1, tzinfo=UTC)
    ranked = [
        item("fact", "f1", "Prefers dark mode."),
        Ranked(Document("record", "r1", "prefers dark mode", {}, since, None), 0.4),
        Ranked(Document("record", "r2", "Handmade candles on Shopify", {}, since, None), 0.3),
    ]
    assert [s.get("id") for s in build_context(SUMMARY, ranked, 100).sources] == [None, "f1"]


def test_a_section_without_content_has_no_heading():
    assert build_context(None, [], 100).text == ""
    assert build_context("  ", [], 100).sources == []
    facts_only = build_context(None, RANKED[1:], 100)
    assert facts_only.text.startswith(FACTS_HEADING) and EPISODES_HEADING not in facts_only.text
    assert build_context(SUMMARY, [], 100).text == f"{MEMORY_HEADING}\n{SUMMARY}"


def test_duplicates_and_what_the_summary_says_are_left_out():
    ranked = [
        item("fact", "f1", "Prefers dark mode."),
        item("fact", "f2", "prefers   DARK mode"),  # same words: a duplicate
        item("episode", "e1", "Prefers dark mode!"),  # across types too
        item("fact", "f3", "handmade candles"),  # already in the summary
        item("fact", "f4", "candle"),  # a word inside a summary word is not "in the summary"
        item("fact", "f5", "   "),
    ]
    block = build_context(SUMMARY, ranked, 100)
    assert [s.get("id") for s in block.sources] == [None, "f1", "f4"]


def test_the_best_items_get_the_budget_and_an_item_is_whole_or_absent():
    ranked = [
        item("fact", "long", "one two three four five six seven eight", 0.9),
        item("fact", "short", "tea", 0.5),
    ]
    # 6 + 4 = 10 for the summary; facts heading 2; "- tea" 2; the long fact needs 9.
    block = build_context("Alice sells candles online.", ranked, max_words=15)
    assert [s.get("id") for s in block.sources] == [None, "short"]
    assert block.word_count == 14
    wider = build_context("Alice sells candles online.", ranked, max_words=21)  # 10 + 2 + 9
    assert [s.get("id") for s in wider.sources] == [None, "long"]


def test_a_summary_over_the_budget_is_cut_to_fit_and_stays_first():
    summary = "Alice sells candles. She lives in Lyon. She ships to Canada and the US every week."
    block = build_context(summary, RANKED, max_words=15)  # 6 for the heading, 9 for the summary
    assert block.text == f"{MEMORY_HEADING}\nAlice sells candles. She lives in Lyon."  # at a sentence end
    assert block.sources == [{"type": "memory"}]
    tiny = build_context(summary, RANKED, max_words=2)  # no room for the heading: the summary alone
    assert tiny.text == "Alice sells" and tiny.sources == [{"type": "memory"}]


def test_no_budget_no_block():
    assert build_context(SUMMARY, RANKED, 0).text == ""


WORDS = ["alice", "stripe", "candle", "wax", "lyon", "dark", "mode", "tea", "order", "ship", "canada", "paid"]


def random_text(rng):
    words = rng.choices(WORDS, k=rng.randint(1, 12))
    return rng.choice([" ", "\n", "  "]).join(words) + rng.choice(["", ".", "!"])


@pytest.mark.parametrize("seed", range(20))
def test_the_budget_is_never_exceeded_and_the_summary_is_always_first(seed):
    rng = random.Random(seed)
    for max_words in range(1, 61):
        summary = rng.choice([None, "", random_text(rng), " ".join(rng.choices(WORDS, k=rng.randint(1, 80)))])
        ranked = [
            item(rng.choice(["fact", "record", "episode"]), f"i{index}", random_text(rng), rng.random())
            for index in range(rng.randint(0, 12))
        ]
        block = build_context(summary, ranked, max_words)
        assert block.word_count == count_words(block.text) <= max_words
        included_ids = [s["id"] for s in block.sources if "id" in s]
        assert len(included_ids) == len(set(included_ids))
        if summary and summary.strip():
            assert block.sources[0] == {"type": "memory"}
            first_summary_word = summary.split()[0]
            assert block.text.startswith((MEMORY_HEADING, first_summary_word))
        else:
            assert {"type": "memory"} not in block.sources
        for source in block.sources:
            if source["type"] == "memory":
                continue
            text = next(r.document.text for r in ranked if r.document.id == source["id"])
            dated = DATED if source["type"] == "record" else ""
            assert "- " + " ".join(text.split()) + dated in block.text  # every item whole
        facts = [s for s in block.sources if s["type"] == "fact"]
        records = [s for s in block.sources if s["type"] == "record"]
        episodes = [s for s in block.sources if s["type"] == "episode"]
        items = facts + records + episodes
        assert block.sources[len(block.sources) - len(items) :] == items  # the sections' order
        order = {r.document.id: i for i, r in enumerate(ranked)}
        assert [order[s["id"]] for s in facts] == sorted(order[s["id"]] for s in facts)
