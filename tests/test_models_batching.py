"""Length-sorted batches under a token budget, run side by side on several threads, and the
cross-encoder's passage window (hypothesis; the bundled models for the threads)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.models.cross_encoder import OnnxCrossEncoder, best_window
from chunkwise.models.onnx_embedder import BGE_SMALL, MINILM, OnnxEmbedder, OnnxRecipe
from chunkwise.models.onnx_session import length_batches, run_batches

#: Passages of 3 to 120 words, so that one call makes batches of many widths.
PASSAGES = [" ".join(f"cabin{i} seat{j % 7} fare" for j in range(3 + (i * 37) % 118)) for i in range(60)]


@given(st.lists(st.integers(1, 600), max_size=80), st.integers(1, 40), st.integers(1, 5000))
def test_batches_cover_every_text_once_within_the_budget(lengths: list[int], rows: int, tokens: int) -> None:
    batches = length_batches(lengths, rows, tokens)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for batch in batches:
        assert 1 <= len(batch) <= rows
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= tokens or len(batch) == 1


@given(st.lists(st.integers(1, 600), max_size=80), st.integers(1, 12), st.integers(1, 4))
def test_batches_side_by_side_fill_every_row_with_its_own_result(
    lengths: list[int], rows: int, threads: int
) -> None:
    batches = length_batches(lengths, rows, 1000)
    out = np.full(len(lengths), -1)
    run_batches(batches, lambda batch: np.asarray(batch) * 10, out, threads)
    assert out.tolist() == [i * 10 for i in range(len(lengths))]


@pytest.mark.parametrize("recipe", [MINILM, BGE_SMALL], ids=lambda r: r.name)
def test_an_embedder_on_several_threads_gives_the_vectors_of_one(recipe: OnnxRecipe) -> None:
    one = OnnxEmbedder(recipe=recipe, threads=1).embed(PASSAGES)
    several = OnnxEmbedder(recipe=recipe, threads=3).embed(PASSAGES)
    assert len(length_batches([len(p) for p in PASSAGES], 8, 512)) > 3
    np.testing.assert_array_equal(several, one)  # the same batches, each on one thread: the same bits


def test_the_cross_encoder_on_several_threads_gives_the_scores_of_one() -> None:
    query = "which fare includes a cabin seat"
    one = OnnxCrossEncoder(threads=1).score(query, PASSAGES)
    np.testing.assert_array_equal(OnnxCrossEncoder(threads=3).score(query, PASSAGES), one)


@given(st.lists(st.booleans(), max_size=300), st.integers(1, 100))
def test_the_window_holds_the_most_matches(matches: list[bool], width: int) -> None:
    start = best_window(matches, width)
    assert 0 <= start <= max(0, len(matches) - width)
    best = max((sum(matches[s : s + width]) for s in range(max(1, len(matches) - width + 1))), default=0)
    assert sum(matches[start : start + width]) == best
    if not any(matches):
        assert start == 0


def test_the_window_centres_on_a_single_match() -> None:
    matches = [False] * 100
    matches[50] = True
    start = best_window(matches, 21)
    assert start == 40  # the match sits in the middle of its window
