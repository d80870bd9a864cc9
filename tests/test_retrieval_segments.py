"""Relevant segment extraction: golden values and segments computed by hand, and dsRAG's own O(n·L²)
greedy search as the reference on random small inputs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.config import RSE_PRESETS, RSEParams
from chunkwise.errors import ConfigError
from chunkwise.query import Candidate, Trace
from chunkwise.query.segments import SegmentExtraction, best_segments, chunk_values, rse_params
from chunkwise.store.protocol import StoredChunk


def reference_segments(values, doc_ends, max_length, overall_max_length, minimum_value):
    """dsRAG's ``get_best_segments`` for one query, written out loop for loop."""
    chosen: list[tuple[int, int, float]] = []
    total = 0
    while total < overall_max_length:
        best, best_value = None, -1000.0
        for start in range(len(values)):
            if values[start] < 0:
                continue
            for end in range(start + 1, min(start + max_length + 1, len(values) + 1)):
                if values[end - 1] < 0:
                    continue
                if any(start < e and end > s for s, e, _ in chosen):
                    continue
                if any(start < split < end for split in doc_ends):
                    continue
                if total + end - start > overall_max_length:
                    continue
                value = sum(values[start:end])
                if value > best_value:
                    best, best_value = (start, end), value
        if best is None or best_value < minimum_value:
            break
        chosen.append((best[0], best[1], best_value))
        total += best[1] - best[0]
    return chosen


def test_presets_are_dsrag_values():
    assert RSE_PRESETS["balanced"] == RSEParams(15, 30, 0.5, 0.18, 30.0, 10, True)
    assert RSE_PRESETS["precision"].minimum_value == 0.7
    assert RSE_PRESETS["precision"].irrelevant_chunk_penalty == 0.2
    assert (RSE_PRESETS["find_all"].max_length, RSE_PRESETS["find_all"].overall_max_length) == (40, 200)
    assert RSE_PRESETS["find_all"].decay_rate == 200.0
    assert rse_params("precision", max_length=3).max_length == 3
    with pytest.raises(ConfigError, match="unknown RSE preset"):
        rse_params("everything")
    with pytest.raises(ConfigError, match="'decay'"):
        rse_params("balanced", decay=3)


def test_chunk_values_by_hand():
    params = RSEParams()
    values = chunk_values([0, 30, math.nan, 0], [1.0, 0.5, 0.9, 1.0], [100, 100, 5000, 1400], params)
    assert values[0] == pytest.approx(0.82)
    assert values[1] == pytest.approx(math.exp(-1) * 0.5 - 0.18)
    assert values[2] == pytest.approx(-0.18)  # unranked: the penalty, never length-scaled
    assert values[3] == pytest.approx(0.82 * 2)  # 1400 characters is twice the reference length
    flat = chunk_values([0], [1.0], [1400], RSEParams(chunk_length_adjustment=False))
    assert flat[0] == pytest.approx(0.82)


def test_golden_two_segments():
    values = [-0.2, 0.5, -0.1, 0.4, -0.2, -0.2, 0.3, -0.2]
    # (1,4) = 0.8 beats (1,2) = 0.5; (3,7) overlaps it; then (6,7) = 0.3.
    got = best_segments(values, [8], max_length=5, overall_max_length=10, minimum_value=0.2)
    assert [(s, e) for s, e, _ in got] == [(1, 4), (6, 7)]
    assert [v for *_, v in got] == pytest.approx([0.8, 0.3])
    assert [(s, e) for s, e, _ in best_segments(values, [8], 5, 10, 0.35)] == [(1, 4)]
    assert best_segments(values, [8], 5, 10, 0.9) == []


def test_golden_document_split_and_budget():
    assert [(s, e) for s, e, _ in best_segments([0.5, 0.5, 0.5, 0.5], [2, 4], 4, 10, 0.1)] == [(0, 2), (2, 4)]
    # Budget 3: (4,6) = 1.8 first, leaving 1 chunk; ties among single chunks go to the earliest.
    values = [0.3, 0.3, 0.3, -0.5, 0.9, 0.9]
    assert [(s, e) for s, e, _ in best_segments(values, [6], 6, 3, 0.2)] == [(4, 6), (0, 1)]
    assert best_segments([-0.1, -0.2], [2], 5, 10, 0.0) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-8, 8), min_size=1, max_size=24),
    st.lists(st.integers(1, 23), max_size=3),
    st.integers(1, 6),
    st.integers(1, 12),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]),
)
def test_matches_dsrag_greedy(quarters, splits, max_length, overall, minimum):
    values = [q / 4 for q in quarters]  # multiples of 1/4 add exactly, so ties agree too
    doc_ends = sorted({s for s in splits if s < len(values)} | {len(values)})
    fast = best_segments(values, doc_ends, max_length, overall, minimum)
    slow = reference_segments(values, doc_ends, max_length, overall, minimum)
    assert fast == slow


class _Source:
    def __init__(self, texts: dict[str, str], size: int) -> None:
        self.texts = texts
        self.size = size

    def chunk_spans(self, doc_id):
        text = self.texts[doc_id]
        return [(i, min(i + self.size, len(text))) for i in range(0, len(text), self.size)]

    def document_text(self, doc_id, start, end):
        return self.texts[doc_id][start:end]


def _cand(texts, doc_id, ordinal, score, size=10):
    start, end = ordinal * size, ordinal * size + size
    chunk = StoredChunk(
        doc_id, start, end, 0, f"{doc_id}-{ordinal}", texts[doc_id][start:end], ordinal=ordinal
    )
    return Candidate(chunk, score=score)


def test_stage_maps_segments_to_exact_document_spans():
    texts = {"a": "".join(chr(65 + i) * 10 for i in range(8)), "b": "x" * 40}
    source = _Source(texts, 10)
    ranked = [
        _cand(texts, "a", 3, 1.0),
        _cand(texts, "a", 4, 0.9),
        _cand(texts, "b", 0, 0.3),
        _cand(texts, "a", 2, 0.8),
    ]
    trace = Trace()
    segments = SegmentExtraction(source, RSEParams()).extract(ranked, trace)
    top = segments[0]
    assert (top.doc_id, top.first, top.last) == ("a", 2, 4)
    assert top.text == texts["a"][top.start : top.end] == "C" * 10 + "D" * 10 + "E" * 10
    assert trace.get("segments").notes == {"documents": 2, "meta_document_chunks": 12}
    assert all(s.doc_id == "a" for s in segments)  # b's one weak chunk is worth less than minimum_value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-8, 8), min_size=1, max_size=30), st.integers(1, 8), st.integers(1, 15))
def test_matches_installed_dsrag(quarters, max_length, overall):
    rse = pytest.importorskip("dsrag.rse")
    values = [q / 4 for q in quarters]
    theirs, scores = rse.get_best_segments([values], [len(values)], max_length, overall, 0.5)
    ours = best_segments(values, [len(values)], max_length, overall, 0.5)
    assert [(s, e) for s, e, _ in ours] == [tuple(t) for t in theirs]
    assert [v for *_, v in ours] == scores
