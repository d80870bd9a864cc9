"""The semantic chunker's default: breaks calibrated to the size target, percentile and gradient rules."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.chunking.measure import measure_for
from chunkwise.chunking.semantic import calibrated_breaks, gap_scores, group_scored
from chunkwise.chunking.tokens import get_counter
from chunkwise.document import Document
from chunkwise.models.protocols import Vectors

STATE_OF_THE_UNION = Path(__file__).resolve().parents[3] / "shared" / "data" / "chroma" / "corpus.jsonl"


class AngleEmbedder:
    """Sentence ``S<i>`` lies on the unit circle at the angle given for it: a deterministic topic drift."""

    name = "test:angles"
    dim = 2

    def __init__(self, degrees: Sequence[float]) -> None:
        self._angles = np.radians(np.cumsum([0.0, *degrees]))

    def embed(self, texts: Sequence[str]) -> Vectors:
        angles = [self._angles[int(t.split()[0][1:])] for t in texts]
        return np.asarray([[math.cos(a), math.sin(a)] for a in angles], dtype=np.float32)


def sentences(n: int) -> str:
    return " ".join(f"S{i} is sentence number {i}." for i in range(n))


def chunk_texts(text: str, **params: object) -> list[str]:
    return [c.text for c in get_chunker("semantic", **params).chunk(Document(id="d", text=text))]


def test_default_breaks_at_the_strongest_shifts_until_the_size_target() -> None:
    # 12 sentences of 25-27 characters; three clear topic shifts (60°) among small steps (5°)
    steps = [5.0, 5.0, 60.0, 5.0, 5.0, 60.0, 5.0, 5.0, 60.0, 5.0, 5.0]
    text = sentences(12)
    by_topic = [
        "S0 is sentence number 0. S1 is sentence number 1. S2 is sentence number 2.",
        "S3 is sentence number 3. S4 is sentence number 4. S5 is sentence number 5.",
        "S6 is sentence number 6. S7 is sentence number 7. S8 is sentence number 8.",
        "S9 is sentence number 9. S10 is sentence number 10. S11 is sentence number 11.",
    ]
    # 320 characters averaging at most 0.5 x 200: three breaks, at the three shifts
    assert chunk_texts(text, embedder=AngleEmbedder(steps), max_size=200, target=0.5) == by_topic
    # the default 0.7 x 200 is met by the size limit alone, and its cuts fall on the shifts, not after
    # the last sentence that fits (S6, 181 characters in)
    assert chunk_texts(text, embedder=AngleEmbedder(steps), max_size=200) == [
        by_topic[0],
        by_topic[1],
        f"{by_topic[2]} {by_topic[3]}",
    ]
    # a smaller target takes the next strongest gaps too: never a weaker gap before a stronger one
    smaller = chunk_texts(text, embedder=AngleEmbedder(steps), max_size=200, target=0.2)
    assert len(smaller) > 4
    assert all(any(c.startswith(f"S{i} ") for c in smaller) for i in (3, 6, 9))


def test_threshold_rule_is_kept_for_chunkrag() -> None:
    steps = [5.0, 5.0, 60.0, 5.0]
    text = sentences(5)
    assert len(chunk_texts(text, embedder=AngleEmbedder(steps), breakpoint="threshold", threshold=0.9)) == 2
    assert len(chunk_texts(text, embedder=AngleEmbedder(steps), breakpoint="threshold", threshold=0.999)) == 5


def test_gradient_scores_a_jump_above_a_steady_distance() -> None:
    similarities = np.asarray([0.5, 0.5, 0.5, 0.9, 0.2, 0.9], dtype=np.float32)
    distances = gap_scores(similarities, "percentile")
    gradient = gap_scores(similarities, "gradient")
    assert np.allclose(distances, 1 - similarities)
    assert np.allclose(gradient, np.gradient(1 - similarities.astype(np.float64)))
    assert int(np.argmax(gradient)) in (3, 4)  # around the jump, not the steady 0.5 run
    assert len(gap_scores(np.asarray([0.3], dtype=np.float32), "gradient")) == 1


def spans_of(lengths: Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """A text of words of the given lengths (each followed by a space) and the word spans."""
    text = "".join("x" * (n - 1) + " " for n in lengths)
    spans, start = [], 0
    for n in lengths:
        spans.append((start, start + n - 1))
        start += n
    return text, spans


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(5, 60), min_size=2, max_size=40),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=39, max_size=39),
    st.integers(60, 300),
    st.floats(0.2, 1.0),
)
def test_calibration_meets_the_target_at_the_strongest_gaps(
    lengths: list[int], raw_scores: list[float], budget: int, target: float
) -> None:
    text, spans = spans_of(lengths)
    measure = measure_for(text, get_counter("chars"))
    scores = np.asarray(raw_scores[: len(spans) - 1], dtype=np.float64)
    breaks = np.asarray(calibrated_breaks(scores, spans, measure, budget, target), dtype=bool)
    assert breaks.shape == scores.shape
    if breaks.any() and not breaks.all():  # the breaks are the strongest gaps
        assert scores[breaks].min() >= scores[~breaks].max()
    pieces = group_scored(spans, breaks.tolist(), scores, measure, budget)
    mean = sum(measure.size(a, b) for a, b, _ in pieces) / len(pieces)
    every = group_scored(spans, [True] * len(scores), scores, measure, budget)
    floor = sum(measure.size(a, b) for a, b, _ in every) / len(every)  # the smallest mean there is
    assert mean <= max(target * budget, floor) + 1e-9


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(5, 60), min_size=1, max_size=40),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=39, max_size=39),
    st.lists(st.booleans(), min_size=39, max_size=39),
    st.integers(60, 300),
)
def test_scored_grouping_tiles_the_spans_under_the_budget(
    lengths: list[int], raw_scores: list[float], raw_breaks: list[bool], budget: int
) -> None:
    text, spans = spans_of(lengths)
    measure = measure_for(text, get_counter("chars"))
    scores = np.asarray(raw_scores[: len(spans) - 1], dtype=np.float64)
    breaks = raw_breaks[: len(spans) - 1]
    pieces = group_scored(spans, breaks, scores, measure, budget)
    starts = {a for a, _ in spans}
    ends = {b for _, b in spans}
    assert pieces[0][0] == spans[0][0]
    assert pieces[-1][1] == spans[-1][1]
    for (a, b, _), (c, _, _) in itertools.pairwise(pieces):
        assert a in starts
        assert b in ends
        assert c in starts
        assert b < c
    for a, b, _ in pieces:  # a piece over the budget is a single span
        assert measure.size(a, b) <= budget or (a, b) in spans
    for gap, brk in enumerate(breaks):  # every requested break is honoured
        if brk:
            assert any(b == spans[gap][1] for _, b, _ in pieces)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(2, 30), min_size=1, max_size=60),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=59, max_size=59),
    st.integers(60, 300),
)
def test_a_cut_forced_by_the_size_leaves_the_chunk_a_quarter_full(
    lengths: list[int], raw_scores: list[float], budget: int
) -> None:
    # Sentences of at most 30 characters, no requested break: every chunk but the last ends at a cut
    # forced by the size, which may take the strongest gap only where the chunk is a quarter full.
    text, spans = spans_of(lengths)
    measure = measure_for(text, get_counter("chars"))
    scores = np.asarray(raw_scores[: len(spans) - 1], dtype=np.float64)
    pieces = group_scored(spans, [False] * (len(spans) - 1), scores, measure, budget)
    assert all(budget / 4 <= measure.size(a, b) <= budget for a, b, _ in pieces[:-1])


@pytest.mark.slow
@pytest.mark.skipif(not STATE_OF_THE_UNION.is_file(), reason="needs the shared chroma corpus")
def test_state_of_the_union_gets_chunks_near_the_size_target(embedder) -> None:  # type: ignore[no-untyped-def]
    texts = {json.loads(line)["doc_id"]: json.loads(line)["text"] for line in STATE_OF_THE_UNION.open()}
    doc = Document(id="sotu", text=texts["state_of_the_union"][:20_000])
    for breakpoint in ("percentile", "gradient"):
        sizes = [
            len(c.text) for c in get_chunker("semantic", embedder=embedder, breakpoint=breakpoint).chunk(doc)
        ]
        assert np.mean(sizes) <= 0.7 * 500 + 1
        assert np.median(sizes) >= 0.5 * 500  # not one sentence per chunk, as θ = 0.8 gave
        assert min(sizes) >= 100  # no chunk of a few words cut off by a forced cut
    threshold = get_chunker("semantic", embedder=embedder, breakpoint="threshold").chunk(doc)
    assert np.median([len(c.text) for c in threshold]) < 150


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"breakpoint": "gradient"}, {"breakpoint": "threshold"}])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(min_size=0, max_size=400), max_size=st.integers(8, 120))
def test_every_rule_keeps_the_chunk_contract(
    embedder, options: dict[str, object], text: str, max_size: int
) -> None:  # type: ignore[no-untyped-def]
    doc = Document(id="d", text=text)
    chunks = get_chunker("semantic", max_size=max_size, embedder=embedder, **options).chunk(doc)
    assert all(len(c.text) <= max_size and doc.text[c.start : c.end] == c.text for c in chunks)


def test_string_parameters_from_the_command_line() -> None:
    chunker = get_chunker("semantic", percentile="90", target="0.5")
    assert chunker.describe()["params"]["percentile"] == 90.0  # type: ignore[attr-defined]
    assert chunker.describe()["params"]["target"] == 0.5  # type: ignore[attr-defined]
