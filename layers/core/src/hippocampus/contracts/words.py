"""What recall counts as a word: the tokens of lexical ranking and of the hashed embeddings.

Shared by hippocampus.domain.recall.lexical (BM25) and hippocampus.adapters.embeddings.hashed
(feature hashing), which must see the same tokens and may not import each other (adapters do not
import the domain: tests/unit/test_architecture.py); the condenser picks the records a prompt lists
by them too.

Tokens: the text lowercased, split into unicode words (an apostrophe inside a word kept, U+2019 read
as '), a short English stopword list dropped, each word reduced to its Snowball English stem, so
"payments" matches "payment" and "ordered" matches "order".
"""

import re
from typing import Final

import Stemmer  # type: ignore[import-not-found]  # PyStemmer: Snowball in C, ships no type hints

# Short English function words: they match nearly every document and say nothing of its subject.
# Question words are here too, since queries are questions and stored items are answers.
STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't could couldn't did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd he'll
    he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is
    isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only or
    other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't
    so some such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't we we'd
    we'll we're we've were weren't what what's when when's where where's which while who who's whom
    why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself
    yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_STEMMER = Stemmer.Stemmer("english")
# Stemming costs ~1.6 µs a word and a lookup ~0.05 µs; a user's vocabulary is small and repeats, so
# a warm function stems each word once and maps a text's words in one C-speed pass (`tokens`). One
# lookup per word: a stopword maps to "" (dropped). Bounded: emptied (and seeded again) when full,
# rather than tracking use.
_STEMS: dict[str, str] = {}
_STEMS_LIMIT: Final = 50_000


def _seed_stems() -> None:
    _STEMS.clear()
    _STEMS.update(dict.fromkeys(STOPWORDS, ""))


_seed_stems()


def words(text: str) -> list[str]:
    """The lowercase unicode words of `text`, stopwords included (no stemming)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def stem(word: str) -> str:
    """The Snowball English stem of a lowercase word ("" for a stopword)."""
    cached = _STEMS.get(word)
    if cached is None:
        if len(_STEMS) >= _STEMS_LIMIT:
            _seed_stems()
        cached = _STEMS[word] = _STEMMER.stemWord(word)
    return cached


def tokens(text: str) -> list[str]:
    """The tokens of `text`: its words without stopwords, stemmed."""
    found = words(text)
    stems = list(map(_STEMS.get, found))  # C-speed lookups: a miss is None
    if None in stems:
        stems = [stem(word) for word in found]
    return list(filter(None, stems))
