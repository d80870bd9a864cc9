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
