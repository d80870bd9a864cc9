"""The compiled helper gives exactly what its pure-Python reference gives, on hostile text."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker, speedups
from chunkwise.chunking.boundaries import (
    LINE_LEVELS,
    RECURSIVE_LEVELS,
    SENTENCE,
    SENTENCE_SCAN,
    WITHIN_SENTENCE_LEVELS,
    Level,
    RegexLevel,
)
from chunkwise.chunking.chunk import ChunkBuilder, chunk_ids, id_keys
from chunkwise.chunking.enforce import Spans, add_overlap, pack
from chunkwise.chunking.measure import CharMeasure
from chunkwise.document import Document
from chunkwise.parsing.builder import DocumentBuilder
from tests.support.contract import hostile_text

NATIVE = speedups.native
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled helper is not built")
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T = TypeVar("T")

#: Every level kind the helper knows, one it calls back (a custom regex), and none (a fixed cut).
LEVEL_SETS: dict[str, tuple[Level, ...]] = {
    "recursive": RECURSIVE_LEVELS,
    "sentence": (SENTENCE_SCAN, *WITHIN_SENTENCE_LEVELS),
    "lines": LINE_LEVELS,
    "fixed": (),
    "callback": (RegexLevel("dash", "-+"), SENTENCE),
}


@contextmanager
def pure_python() -> Iterator[None]:
    """Run the block without the compiled helper."""
    speedups.native = None
    try:
        yield
    finally:
        speedups.native = NATIVE


def both(compute: Callable[[], T]) -> tuple[T, T]:
    """``compute()`` with the compiled helper, then without it."""
    native = compute()
    with pure_python():
        return native, compute()


def test_the_helper_is_built_by_the_package_build() -> None:
    """``make`` (an editable install) compiles the helper unless told not to."""
    if not os.environ.get("CHUNKWISE_PURE_PYTHON"):
        assert NATIVE is not None


@pytest.mark.parametrize("levels", LEVEL_SETS.values(), ids=LEVEL_SETS.keys())
@PROPERTY
@given(text=hostile_text, budget=st.integers(1, 300), data=st.data())
def test_pack_is_identical(levels: tuple[Level, ...], text: str, budget: int, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    native, python = both(lambda: pack(text, start, end, CharMeasure(text), budget, levels=levels))
    assert native == python


@PROPERTY
@given(text=hostile_text, budget=st.integers(2, 200), overlap=st.integers(1, 120), snap=st.booleans())
def test_overlap_is_identical(text: str, budget: int, overlap: int, snap: bool) -> None:
    spans = pack(text, 0, len(text), CharMeasure(text), budget, levels=RECURSIVE_LEVELS)
    groups = [i // 3 for i in range(len(spans))]  # some neighbours in different groups
    layout = Spans([a for a, _ in spans], [b for _, b in spans], groups)
    native, python = both(lambda: add_overlap(text, layout, CharMeasure(text), overlap, snap))
    assert native == python


@PROPERTY
@given(text=st.text(), spans=st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), max_size=20))
def test_ids_are_identical(text: str, spans: list[tuple[int, int]]) -> None:
    starts, ends = [a for a, _ in spans], [b for _, b in spans]
    native, python = both(lambda: (id_keys(text), chunk_ids(id_keys(text), starts, ends)))
    assert native == python
    assert all(len(i) == 20 and int(i, 16) >= 0 for i in native[1])


def test_ids_separate_spans_and_documents() -> None:
    keys, other = id_keys("one text"), id_keys("one texu")
    spans = [(s, e) for s in range(50) for e in range(s, 60)]
    ids = chunk_ids(keys, [s for s, _ in spans], [e for _, e in spans])
    assert len(set(ids)) == len(spans)
    assert chunk_ids(other, [0], [8]) != chunk_ids(keys, [0], [8])


def _document(paragraphs: Sequence[str]) -> Document:
    """Headings, paragraphs and pages, so that chunks carry unit ids, sections and page ranges."""
    builder = DocumentBuilder()
    for i, paragraph in enumerate(paragraphs):
        if i % 3 == 0:
            builder.heading(f"Part {i}", 1 + i % 2)
        builder.paragraph(paragraph, page=i // 2 + 1 if i % 4 else None)
    return builder.build("units")


@PROPERTY
@given(paragraphs=st.lists(hostile_text, max_size=6), data=st.data())
def test_built_chunks_are_identical(paragraphs: list[str], data: st.DataObject) -> None:
    doc = _document(paragraphs)
    n = len(doc.text)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=8)))
    starts, ends = [0, *cuts], [*cuts, n]
    sizes = [b - a for a, b in zip(starts, ends, strict=True)]
    contexts = data.draw(st.none() | st.just([f"c{i}" for i in range(len(starts))]))
    native, python = both(lambda: ChunkBuilder(doc).build_all(starts, ends, sizes, contexts))
    assert native == python
    assert [type(c) for c in native] == [type(c) for c in python]
    for chunk in native:
        assert doc.text[chunk.start : chunk.end] == chunk.text


@pytest.mark.parametrize("name", ["fixed", "recursive", "sentence", "structure"])
@PROPERTY
@given(text=hostile_text, max_size=st.integers(2, 300), fraction=st.sampled_from([0, 0.1, 0.3]))
def test_chunkers_give_identical_chunks(name: str, text: str, max_size: int, fraction: float) -> None:
    chunker = get_chunker(name, max_size=max_size, overlap=fraction)
    doc = Document(id="d", text=text)
    native, python = both(lambda: chunker.chunk(doc))
    assert native == python


@PROPERTY
@given(
    text=hostile_text,
    budget=st.integers(2**62, 2**100),
    overlap=st.integers(2**62, 2**100),
    snap=st.booleans(),
)
def test_limits_past_c_integers_are_what_the_text_allows(
    text: str, budget: int, overlap: int, snap: bool
) -> None:
    """A budget or an overlap larger than any text (``max_size=10**30``) is clamped, not an OverflowError
    from the helper's C integers nor a wrapped sum."""
    start = 1 if text[:1].isspace() else 0  # a first span starting past 0: pos + budget would wrap
    native, python = both(lambda: pack(text, start, len(text), CharMeasure(text), budget, levels=()))
    assert native == python
    spans = pack(text, 0, len(text), CharMeasure(text), 7, levels=RECURSIVE_LEVELS)
    layout = Spans([a for a, _ in spans], [b for _, b in spans], [0] * len(spans))
    native_starts, python_starts = both(lambda: add_overlap(text, layout, CharMeasure(text), overlap, snap))
    assert native_starts == python_starts


@pytest.mark.parametrize("name", ["fixed", "recursive", "sentence", "structure"])
def test_a_maximum_past_c_integers_chunks_with_overlap(name: str) -> None:
    doc = Document(id="d", text="One sentence here. Another one\n\nand a paragraph.")
    native, python = both(lambda: get_chunker(name, max_size=10**30, overlap=0.5).chunk(doc))
    assert native == python
    assert [(c.start, c.end) for c in native] == [(0, len(doc.text))]
