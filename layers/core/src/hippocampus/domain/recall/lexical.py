"""Lexical relevance for recall: markdown as plain text, word tokens, and BM25 over one user's items.

Tokens: hippocampus.contracts.words (the same as the offline embedder's): unicode words without
stopwords, Snowball-stemmed, so "payments" matches "payment" and "ordered" matches "order".

BM25 (k1=1.2, b=0.75, Lucene's non-negative idf) is written here by hand: rank_bm25 and bm25s
bring numpy (bm25s scipy too) onto the Lambda layer and into the read path's cold start, for a
corpus of at most ~2,200 short documents per user that plain Python scores in milliseconds.

Normalisation to [0, 1]: each score divided by the best one among the candidates (the best lexical
match scores 1). Then the best lexical and the best semantic match weigh alike in the hybrid
blend, whatever the query's length or rarity: on LoCoMo (bench/bench_recall_quality.py) this
kept the blend at alpha 0.5 within a point of lexical ranking alone, where dividing by the score
of an ideal document (every query term once, clipped at 1) lost 2 points of recall@5. The price:
lexical scores rank the documents of one query; they are not comparable from query to query.
"""

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from hippocampus.contracts import words

K1: Final = 1.2
B: Final = 0.75

# A warm function ranks the same user's items again on the next query: their tokens are kept.
_TOKENS_CACHE_SIZE: Final = 4096


def tokenize(text: str) -> list[str]:
    """The scoring tokens of `text`: its words without stopwords, stemmed."""
    return list(_tokens(text))


@lru_cache(maxsize=_TOKENS_CACHE_SIZE)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(words.tokens(text))


def idf(document_frequency: int, corpus_size: int) -> float:
    """Lucene's BM25 idf: always positive, so a term found in most documents still counts a little."""
    return math.log(1 + (corpus_size - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25_scores(query_tokens: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Normalised BM25 score in [0, 1] of each tokenized document for the query, in order."""
    terms = list(dict.fromkeys(query_tokens))
    if not terms or not documents:
        return [0.0] * len(documents)
    lengths = [len(document) for document in documents]
    average_length = sum(lengths) / len(documents) or 1.0
    # One pass per query term with list.count (C speed) instead of a Counter per document.
    counts = [[document.count(term) for document in documents] for term in terms]
    norms = [K1 * (1 - B + B * length / average_length) for length in lengths]
    scores = [0.0] * len(documents)
    for row in counts:
        weight = idf(sum(1 for tf in row if tf), len(documents))
        for index, tf in enumerate(row):
            if tf:
                scores[index] += weight * tf * (K1 + 1) / (tf + norms[index])
    best = max(scores)
    return [score / best for score in scores] if best > 0 else scores


def lexical_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Normalised BM25 score in [0, 1] of each plain text for the query, in order."""
    return bm25_scores(_tokens(query), [_tokens(text) for text in texts])


# Markdown → text, block by block (line starts) then inline. Simple on purpose: only the words
# matter for scoring, so an unusual construct at worst leaves a stray punctuation mark.
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_REFERENCE_DEFINITION = re.compile(r"^[ \t]*\[[^\]\n]+\]:[ \t]*\S+.*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_LINK = re.compile(r"\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
_RULE_OR_UNDERLINE = re.compile(r"^[ \t]*(?:[-*_=][ \t]*){3,}$", re.MULTILINE)
_TABLE_SEPARATOR = re.compile(
    r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$", re.MULTILINE
)
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?", re.MULTILINE)
_EMPHASIS = re.compile(r"(?<!\w)(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n{3,}")


@lru_cache(maxsize=_TOKENS_CACHE_SIZE)  # ~40 µs a document: rendered once per warm function
def plain_text(markdown: str) -> str:
    """The text of a markdown document as a reader sees it: the syntax removed, the words kept
    (code kept as text, a link as its text, an image as its alt text, a table as its cells)."""
    text = _FENCE.sub("", markdown)
    text = _HTML_COMMENT.sub(" ", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub(" ", text)
    text = _REFERENCE_DEFINITION.sub("", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _HEADING.sub(r"\1", text)
    text = _RULE_OR_UNDERLINE.sub("", text)
    text = _TABLE_SEPARATOR.sub("", text)
    text = _QUOTE.sub("", text)
    text = _LIST_MARKER.sub("", text)
    text = _CODE_SPAN.sub(lambda match: match.group(2).strip(), text)
    text = text.replace("|", " ")
    for _ in range(3):  # nested emphasis: ***bold italic***, **bold _italic_**
        text = _EMPHASIS.sub(r"\2", text)
    text = _ESCAPE.sub(r"\1", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
