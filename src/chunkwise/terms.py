"""Query terms: lower-cased word tokens without common English function words.

Shared by the BM25 query builder (an OR of every function word would match nearly every chunk and make
the lexical search slow without changing its ranking much) and the extractive answer's sentence scoring.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i"),
        *("in", "is", "it", "of", "on", "or", "the", "to", "was", "what", "when", "where", "which", "who"),
        *("why", "with", "you", "your", "my", "me", "we", "our", "this", "that", "these", "those", "they"),
    }
)


def query_terms(text: str) -> list[str]:
    """The distinct content words of ``text``, lower-cased, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group().lower()
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)
