"""Length-sorted batches under a token budget, and the cross-encoder's passage window (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chunkwise.models.cross_encoder import best_window
from chunkwise.models.onnx_session import length_batches


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
