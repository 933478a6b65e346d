"""Dates in recall: an episode's date terms match the dates a query names, and nothing else."""

from datetime import UTC, datetime

import pytest

from hippocampus.domain.recall.dates import date_terms, dated, searched, with_query_dates
from hippocampus.domain.recall.lexical import lexical_scores

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_an_episode_is_embedded_with_its_day_in_words_and_searched_with_its_date_terms():
    assert dated("Alice: hi", MAY_8) == "8 May 2023: Alice: hi"
    assert searched("Alice: hi", MAY_8) == f"Alice: hi {date_terms(MAY_8)}"
    assert dated("no date", None) == searched("no date", None) == "no date"


@pytest.mark.parametrize(
    "query",
    [
        "What did we repaint in May?",
        "what happened on 8 May",
        "Anything from May 2023?",
        "plans for may 8th",
        "What did she do in 2023?",
        "since May",
    ],
)
def test_a_query_naming_the_date_finds_the_episode_of_that_date(query):
    may, june = searched("We repainted.", MAY_8), searched("We repainted.", datetime(2024, 6, 20, tzinfo=UTC))
    scores = lexical_scores(with_query_dates(query), [may, june])
    assert scores[0] > scores[1], (query, with_query_dates(query))


@pytest.mark.parametrize(
    "query",
    ["May I pay by card?", "Should I get 3 cats?", "Maybe in June", "She may come on the 8th", "I march on"],
)
def test_words_that_only_look_like_dates_match_no_date(query):
    expanded = with_query_dates(query)
    assert not any(term.startswith(("dm", "ym")) for term in expanded.split()[len(query.split()) :])
    may, other = searched("We talked.", MAY_8), searched("We talked.", datetime(2024, 3, 3, tzinfo=UTC))
    assert lexical_scores(expanded, [may, other]) == lexical_scores(query, [may, other]), query
