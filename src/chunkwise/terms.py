"""The lexical analyser: what a word is, for BM25 in every store and for extractive answers.

Two views of a text:

- :func:`query_terms`: its distinct content words, lower-cased (common English function words dropped).
  Extractive answers score sentences with them, and they are what a BM25 query searches for.
- :func:`index_terms`: every word token, case-folded, diacritics removed (NFKD, combining marks dropped:
  ``Café`` and ``cafe`` are one term) and stemmed with the Porter stemmer (Snowball's, from PyStemmer:
  ``refunds`` and ``refund`` are one term). :func:`search_terms` is the same analysis of a query's
  content words, each term once.
- :func:`check_query`: whether a query can be searched at all (it holds a word, and is valid Unicode).

Every store indexes :func:`index_terms` of a chunk's header + text and ranks :func:`search_terms` of the
query with Okapi BM25 (``K1``, ``B``), so SQLite and PostgreSQL rank alike: one analyser, one formula.
Function words are indexed (they count in a chunk's length, as in any BM25) but never searched for: an
OR of every function word would match nearly every chunk and slow the search without changing its
ranking much.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from chunkwise.document import lone_surrogate
from chunkwise.errors import QueryError

#: Okapi BM25 term-frequency saturation and length normalisation, shared by every store.
K1 = 1.2
B = 0.75

#: A word token: a run of letters and digits (the underscore separates words, as in SQLite's tokenizers).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

#: English function words: articles, pronouns, auxiliaries and modals, conjunctions, common prepositions.
#: A question's "should" or "if" names no topic: searched for, or scored in an extractive answer, it
#: favours any sentence that happens to contain it ("... should always be seamless" for "What should I
#: do if my baggage is damaged?").
STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i"),
        *("in", "is", "it", "of", "on", "or", "the", "to", "was", "what", "when", "where", "which", "who"),
        *("why", "with", "you", "your", "my", "me", "we", "our", "this", "that", "these", "those", "they"),
        *("should", "would", "could", "will", "shall", "may", "might", "must", "if", "has", "have", "had"),
        *("been", "being", "were", "am", "did", "its", "into", "about", "than", "then", "there", "their"),
        *("them", "so", "but", "he", "she", "his", "her", "him", "us", "also", "any", "some", "such"),
    }
)


def query_terms(text: str) -> list[str]:
    """The distinct content words of ``text``, lower-cased, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("porter")


def _fold(text: str) -> str:
    """Lower-cased, compatibility-decomposed, without combining marks (``Ǆébut`` -> ``dzebut``)."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def _stem(words: list[str]) -> list[str]:
    """Porter stems of words of 3 to 64 characters; shorter and longer words as they are (the rule of
    SQLite's ``porter`` tokenizer: ``is``, ``as`` and ``us`` stay words, never ``i``, ``a``, ``u``)."""
    stem = _stemmer().stemWord
    return [stem(word) if 2 < len(word) <= 64 else word for word in words]


def index_terms(text: str) -> list[str]:
    """Every word of ``text`` as an index term (folded and stemmed), in order, repeats kept."""
    return _stem(_WORD.findall(_fold(text)))


def search_terms(text: str) -> list[str]:
    """The distinct index terms of the content words of ``text``, in order of first appearance."""
    return list(dict.fromkeys(_stem([w for w in _WORD.findall(_fold(text)) if w not in STOPWORDS])))


#: Characters of a refused query quoted in the error (a long one is cut, so the error stays one short line).
QUOTED_QUERY_CHARS = 60


def check_query(query: str) -> str:
    """``query`` itself; :class:`~chunkwise.errors.QueryError` when it holds no letter or digit (an
    empty, blank or punctuation-only query would return arbitrary hits from dense search alone) or is
    not valid Unicode text (a lone surrogate, which no tokenizer or store can encode)."""
    shown = query if len(query) <= QUOTED_QUERY_CHARS else query[:QUOTED_QUERY_CHARS] + "…"
    if lone_surrogate(query) is not None:
        raise QueryError(f"the query {shown!r} is not valid Unicode text (it holds a lone surrogate)")
    if not any(ch.isalnum() for ch in query):
        raise QueryError(f"the query {shown!r} holds no word to search for")
    return query
