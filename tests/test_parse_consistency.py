"""Cross-format consistency on the committed fixtures, and the properties of the measure itself.

The thresholds sit just under what the parsers reach on ``tests/data/formats/`` (measured when they were
written: HTML, DOCX and PPTX 1.000 mean F1 with identical headings; PDF 0.994 mean F1, 0.982 min, three of
four documents with identical headings and all Markdown headings found in order), so a regression in any
parser fails here. ``bench/parse_consistency.py`` gives the figures on the full data set.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.parsing import parse_file
from chunkwise.parsing.builder import DocumentBuilder
from chunkwise.parsing.consistency import compare, lcs_length, token_f1, tokens

#: format -> (least mean F1, least min F1, least share of identical heading order, least mean LCS)
THRESHOLDS: dict[str, tuple[float, float, float, float]] = {
    "html": (0.995, 0.99, 1.0, 1.0),
    "docx": (0.995, 0.99, 1.0, 1.0),
    "pptx": (0.995, 0.99, 1.0, 1.0),
    "pdf": (0.99, 0.98, 0.75, 0.99),
}


@pytest.fixture(scope="module")
def markdown_parses(data_dir: Path) -> dict[str, Document]:
    return {path.stem: parse_file(path) for path in sorted((data_dir / "formats").glob("*.md"))}


@pytest.mark.parametrize("fmt", sorted(THRESHOLDS))
def test_each_format_parses_like_its_markdown_original(
    fmt: str, data_dir: Path, markdown_parses: dict[str, Document]
) -> None:
    results = [
        compare(parse_file(data_dir / "formats" / f"{stem}.{fmt}"), reference)
        for stem, reference in markdown_parses.items()
    ]
    assert len(results) == 4
    mean_f1, min_f1, identical, lcs = THRESHOLDS[fmt]
    assert statistics.mean(r.f1 for r in results) >= mean_f1
    assert min(r.f1 for r in results) >= min_f1
    assert statistics.mean(r.headings_identical for r in results) >= identical
    assert statistics.mean(r.heading_lcs for r in results) >= lcs


def _doc(*headings: str, body: str = "") -> Document:
    builder = DocumentBuilder()
    for title in headings:
        builder.heading(title, 2)
    builder.paragraph(body)
    return builder.build("d")


def test_tokens_drop_punctuation_case_and_markup() -> None:
    assert tokens("## Hello, **World**!  CloudWay24.com/x — ﬁne") == [
        "hello",
        "world",
        "cloudway24",
        "com",
        "x",
        "fine",
    ]


def test_f1_counts_repeated_tokens_as_a_multiset() -> None:
    assert token_f1("a a b", "a b") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert token_f1("", "") == 1.0
    assert token_f1("x", "y") == 0.0


def test_heading_measures() -> None:
    reference = _doc("Intro", "Scope", "Terms")
    same = compare(_doc("intro", "Scope!", "TERMS"), reference)
    assert same.headings_identical
    assert same.heading_lcs == 1.0
    swapped = compare(_doc("Scope", "Intro", "Terms"), reference)
    assert not swapped.headings_identical
    assert swapped.heading_lcs == pytest.approx(2 / 3)
    assert compare(_doc(), _doc()).heading_lcs == 1.0
    assert compare(_doc("Extra"), _doc()).heading_lcs == 0.0


words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "Alpha!", "x1"]), max_size=30)


@given(words, words)
def test_f1_is_symmetric_bounded_and_one_on_identity(a: list[str], b: list[str]) -> None:
    left, right = " ".join(a), " ".join(b)
    assert token_f1(left, right) == pytest.approx(token_f1(right, left))
    assert 0.0 <= token_f1(left, right) <= 1.0
    assert token_f1(left, left) == 1.0


@given(words, words)
def test_lcs_is_a_common_subsequence_length(a: list[str], b: list[str]) -> None:
    length = lcs_length(a, b)
    assert length == lcs_length(b, a)
    assert length <= min(len(a), len(b))
    assert lcs_length(a, a) == len(a)
