"""Lexical recall: word variants match, function words do not, markdown is scored as its text."""

import pytest

from hippocampus.domain.recall.lexical import bm25_scores, lexical_scores, plain_text, tokenize

FACTS = [
    "Alice takes payments through Stripe.",
    "Alice ordered 40 jars of soy wax from Lyon.",
    "Prefers dark mode in every app.",
    "Her shop is on Shopify; she ships to Canada and the US.",
]


def best(query: str, texts: list[str] = FACTS) -> str:
    scores = lexical_scores(query, texts)
    return max(zip(scores, texts, strict=True))[1]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What payment provider does she use?", FACTS[0]),  # payment ~ payments
        ("When were the orders placed?", FACTS[1]),  # orders ~ ordered
        ("dark mode", FACTS[2]),
        ("Which countries does she ship to?", FACTS[3]),  # ship ~ ships
        ("STRIPE", FACTS[0]),  # case does not matter
    ],
)
def test_the_right_fact_comes_first_for_exact_words_and_word_variants(query, expected):
    assert best(query) == expected


def test_variants_share_one_token_and_stopwords_are_dropped():
    assert tokenize("payments payment") == ["payment", "payment"]
    assert tokenize("ordered orders order") == ["order"] * 3
    assert tokenize("What is the of and to") == []
    assert tokenize("Alice's café, naïve résumé") == ["alic", "café", "naïv", "résumé"]
    assert tokenize("don\u2019t stop") == ["stop"]  # a typographic apostrophe is an apostrophe
    assert tokenize("snake_case v2 2024") == ["snake", "case", "v2", "2024"]


def test_a_question_sharing_only_function_words_matches_nothing():
    assert lexical_scores("what is it that you do?", FACTS) == [0.0] * len(FACTS)
    assert lexical_scores("", FACTS) == [0.0] * len(FACTS)
    assert lexical_scores("stripe", []) == []


def test_scores_are_in_0_1_and_the_best_match_scores_1():
    scores = lexical_scores("Stripe payments for candles from Lyon", FACTS)
    assert max(scores) == 1.0 and all(0.0 <= score <= 1.0 for score in scores)
    assert scores[2] == 0.0  # dark mode: no shared word


def test_rare_words_weigh_more_than_common_ones():
    texts = ["alice likes tea", "alice likes coffee", "alice likes tea and stripe", "alice"]
    scores = lexical_scores("alice stripe", texts)
    assert scores.index(max(scores)) == 2


def test_shorter_documents_win_at_equal_matches():
    long = "stripe " + " ".join(f"filler{i}" for i in range(40))
    scores = bm25_scores(["stripe"], [tokenize(long), tokenize("stripe account")])
    assert scores[1] > scores[0] > 0


def test_plain_text_strips_markdown_syntax_and_keeps_the_words():
    markdown = """# Billing *setup*

We use **Stripe** for __payments__; see [the dashboard](https://example.com/d) and `stripe.Charge`.

> quoted ~~old~~ note
- [x] Orders ship from Lyon
* Refunds
1. First step

| plan | price |
|------|------:|
| pro  | $20   |

```python
api_key = "test"
```
![logo of the shop](logo.png) <b>bold</b> <!-- hidden --> <https://example.com/x>
[ref]: https://example.com/ref
Title
=====
"""
    text = plain_text(markdown)
    assert text.splitlines()[0] == "Billing setup"
    assert "We use Stripe for payments; see the dashboard and stripe.Charge." in text
    for kept in (
        "quoted old note",
        "Orders ship from Lyon",
        "Refunds",
        "First step",
        "plan price",
        "pro $20",
    ):
        assert kept in text
    assert 'api_key = "test"' in text and "logo of the shop bold" in text and "https://example.com/x" in text
    for gone in (
        "#",
        "**",
        "__",
        "`",
        "](",
        "|",
        "<b>",
        "hidden",
        "![",
        "[x]",
        "- ",
        "* ",
        "1. ",
        "===",
        "[ref]",
    ):
        assert gone not in text, gone


def test_plain_text_leaves_plain_text_and_inner_underscores_alone():
    assert plain_text("Alice sells candles. 2 * 3 = 6") == "Alice sells candles. 2 * 3 = 6"
    assert plain_text("use my_var_name here") == "use my_var_name here"


def test_markdown_is_scored_as_its_text():
    markdown = "## Payments\n\n**Provider**: [Stripe](https://stripe.com)"
    assert tokenize(plain_text(markdown)) == tokenize("Payments Provider: Stripe")
    assert "stripe.com" not in plain_text(markdown)
