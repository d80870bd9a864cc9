"""How closely two parses of the same document agree: text similarity and heading order.

Used to check that a DOCX, PDF, PPTX or HTML rendering of a document parses to the same content as its
Markdown original (``bench/parse_consistency.py``, ``tests/test_parse_consistency.py``).

Measures, all computed on *normalised tokens*: the text is lower-cased, Unicode-normalised (NFKC, so
ligatures and full-width forms fold), and split into maximal runs of letters and digits; punctuation,
Markdown markers and whitespace only separate tokens and never count themselves.

* ``f1``: token-level F1 over **multisets** of tokens (order ignored). With ``overlap`` the size of
  the multiset intersection, precision = overlap / |candidate|, recall = overlap / |reference|,
  F1 = 2PR / (P + R). It is 1.0 exactly when both texts hold the same words the same number of times.
* ``headings_identical``: the heading titles, normalised the same way (each title becomes its token
  sequence joined by spaces), form exactly the same sequence in both documents.
* ``heading_lcs``: the longest common subsequence of the two title sequences divided by the number of
  reference headings: the share of the reference's headings found, in order, in the candidate.
  1.0 when the reference has no headings and the candidate has none either.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from chunkwise.document import Document

_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The normalised tokens of ``text``: NFKC, lower-cased, maximal runs of letters and digits."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def token_f1(candidate: str, reference: str) -> float:
    """Multiset token F1 between two texts (see the module docstring); 1.0 when both are empty."""
    cand, ref = Counter(tokens(candidate)), Counter(tokens(reference))
    if not cand and not ref:
        return 1.0
    overlap = sum((cand & ref).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(cand.values())
    recall = overlap / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def heading_titles(doc: Document) -> list[str]:
    """The document's heading titles in order, each normalised to its tokens joined by spaces."""
    return [" ".join(tokens(unit.title)) for unit in doc.headings()]


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two sequences (O(len(a)·len(b)) dynamic programme)."""
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if item == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


@dataclass(frozen=True, slots=True)
class Consistency:
    """Agreement of a candidate parse with a reference parse of the same document."""

    f1: float
    headings_identical: bool
    heading_lcs: float
    candidate_headings: int
    reference_headings: int


def compare(candidate: Document, reference: Document) -> Consistency:
    """Compare ``candidate`` (say, the PDF parse) with ``reference`` (the Markdown parse)."""
    cand_titles, ref_titles = heading_titles(candidate), heading_titles(reference)
    if ref_titles:
        lcs = lcs_length(cand_titles, ref_titles) / len(ref_titles)
    else:
        lcs = 1.0 if not cand_titles else 0.0
    return Consistency(
        f1=token_f1(candidate.text, reference.text),
        headings_identical=cand_titles == ref_titles,
        heading_lcs=lcs,
        candidate_headings=len(cand_titles),
        reference_headings=len(ref_titles),
    )
