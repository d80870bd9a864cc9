"""The cluster segmentation keeps pieces together where cutting gains nothing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.chunking.semantic import cluster_segments
from chunkwise.document import Document

_VECTOR = st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
    lambda v: sum(x * x for x in v) > 1e-3
)


def _unit(rows: list[list[float]]) -> np.ndarray:  # type: ignore[type-arg]
    vectors = np.asarray(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@settings(max_examples=100, deadline=None)
@given(first=_VECTOR, second=_VECTOR)
def test_two_pieces_that_fit_together_are_one_segment(first: list[float], second: list[float]) -> None:
    # With two pieces the one pair is the mean: its centred similarity is zero, whatever the vectors.
    assert cluster_segments(_unit([first, second]), [0, 0]) == [0]


@settings(max_examples=100, deadline=None)
@given(vector=_VECTOR, n=st.integers(2, 80), width=st.integers(1, 12))
def test_pieces_all_alike_fill_every_chunk(vector: list[float], n: int, width: int) -> None:
    fits = [max(0, i - width + 1) for i in range(n)]  # at most ``width`` pieces per chunk
    starts = cluster_segments(_unit([vector] * n), fits)
    assert len(starts) == -(-n // width)  # as few segments as the size allows
    assert starts[0] == 0
    assert all(b - a <= width for a, b in zip(starts, [*starts[1:], n], strict=True))


@pytest.mark.slow
def test_a_repeated_phrase_is_not_cut_into_pieces(embedder) -> None:  # type: ignore[no-untyped-def]
    doc = Document(id="d", text="Hello world. " * 30)
    chunks = get_chunker("semantic", max_size=100, method="cluster", embedder=embedder).chunk(doc)
    assert len(chunks) == 5  # 30 pieces of 13 characters, at most 7 in 100
    assert all(len(c.text) >= 25 for c in chunks)


def _splits_made(starts: list[int], splits: list[bool]) -> int:
    return sum(splits[s] for s in starts[1:])


def _fewest_splits(n: int, fits: list[int], splits: list[bool]) -> int:
    """The fewest sentence splits of any segmentation that respects ``fits`` (every one, enumerated)."""
    fewest = [0] + [n] * n  # fewest[i]: over segmentations of the first i pieces
    for i in range(n):
        for j in range(fits[i], i + 1):
            fewest[i + 1] = min(fewest[i + 1], fewest[j] + (j > 0 and splits[j]))
    return fewest[n]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(2, 9))
def test_the_segmentation_splits_as_few_sentences_as_the_size_allows(data: st.DataObject, n: int) -> None:
    vectors = _unit(data.draw(st.lists(_VECTOR, min_size=n, max_size=n)))
    fits: list[int] = []
    for i in range(n):  # non-decreasing, and piece i alone always fits
        fits.append(data.draw(st.integers(fits[-1] if fits else 0, i)))
    splits = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    starts = cluster_segments(vectors, fits, splits)
    ends = [*starts[1:], n]
    assert starts[0] == 0
    assert all(fits[end - 1] <= start for start, end in zip(starts, ends, strict=True))
    assert _splits_made(starts, splits) == _fewest_splits(n, fits, splits)


@settings(max_examples=100, deadline=None)
@given(vectors=st.lists(_VECTOR, min_size=2, max_size=12))
def test_pieces_of_one_sentence_that_fits_are_one_segment(vectors: list[list[float]]) -> None:
    n = len(vectors)
    assert cluster_segments(_unit(vectors), [0] * n, [False] + [True] * (n - 1)) == [0]


_SENTENCES = [
    "The committee reviewed the quarterly budget, discussed the new hiring plan for the engineering "
    "department, debated the merits of moving the annual conference to a different city, and finally "
    "agreed that the marketing team should prepare a detailed proposal on social media outreach before "
    "the next meeting in March",
    "Photosynthesis converts light energy into chemical energy stored in glucose while the stock market "
    "fell sharply on fears of rising interest rates and the football team won its third championship in "
    "a row after a dramatic penalty shootout.",
]


@pytest.mark.slow
@pytest.mark.parametrize("text", _SENTENCES)
def test_one_sentence_that_fits_is_one_chunk(embedder, text: str) -> None:  # type: ignore[no-untyped-def]
    # Its pieces once became two or three chunks, cut mid-sentence where centred similarities dipped.
    chunks = get_chunker("semantic", max_size=500, method="cluster", embedder=embedder).chunk(
        Document(id="d", text=text)
    )
    assert [c.text for c in chunks] == [text]


@pytest.mark.slow
def test_the_cluster_method_cuts_between_sentences_that_fit(embedder) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(s.removesuffix(".") + "." for s in _SENTENCES * 3)
    chunks = get_chunker("semantic", max_size=500, method="cluster", embedder=embedder).chunk(
        Document(id="d", text=text)
    )
    assert all(c.text.endswith(".") for c in chunks)
