"""Property tests: every chunker keeps the size and coverage contract on hostile text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker, get_counter
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.parsing.builder import DocumentBuilder
from tests.support.contract import check_contract, hostile_text, small_text

FAST_CHUNKERS = ("fixed", "recursive", "sentence", "structure")
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _doc(text: str) -> Document:
    return Document(id="doc", text=text)


@pytest.mark.parametrize("name", FAST_CHUNKERS)
@PROPERTY
@given(text=hostile_text, max_size=st.integers(1, 300), min_size=st.integers(0, 40))
def test_chars_contract(name: str, text: str, max_size: int, min_size: int) -> None:
    doc = _doc(text)
    chunker = get_chunker(name, max_size=max_size, min_size=min(min_size, max_size))
    chunks = chunker.chunk(doc)
    check_contract(doc, chunks, get_counter("chars"), max_size)
    assert [c.id for c in chunker.chunk(doc)] == [c.id for c in chunks]


@pytest.mark.parametrize("name", FAST_CHUNKERS)
@PROPERTY
@given(text=hostile_text, max_size=st.integers(4, 64))
def test_token_contract(name: str, text: str, max_size: int) -> None:
    doc = _doc(text)
    chunks = get_chunker(name, max_size=max_size, unit="minilm").chunk(doc)
    check_contract(doc, chunks, get_counter("minilm"), max_size)


@pytest.mark.parametrize("name", FAST_CHUNKERS)
@PROPERTY
@given(text=hostile_text, max_size=st.integers(2, 200), fraction=st.floats(0.05, 0.5))
def test_overlap_is_bounded(name: str, text: str, max_size: int, fraction: float) -> None:
    doc = _doc(text)
    chunker = get_chunker(name, max_size=max_size, overlap=fraction)
    overlap = round(fraction * max_size)
    check_contract(doc, chunker.chunk(doc), get_counter("chars"), max_size, overlap=overlap)


_UNIT = st.one_of(
    st.tuples(st.just("heading"), st.text(max_size=30), st.integers(1, 4)),
    st.tuples(st.just("paragraph"), st.one_of(hostile_text, small_text), st.just(0)),
    st.tuples(st.just("item"), small_text, st.integers(0, 2)),
    st.tuples(st.just("code"), small_text, st.just(0)),
    st.tuples(st.just("table"), small_text, st.integers(1, 6)),
)


def _structured(units: list[tuple[str, str, int]]) -> Document:
    builder = DocumentBuilder()
    for kind, text, level in units:
        if kind == "heading":
            builder.heading(text, level)
        elif kind == "paragraph":
            builder.paragraph(text)
        elif kind == "item":
            builder.list_item(text, depth=level, number=level or None)
        elif kind == "code":
            builder.code(text)
        else:
            builder.table([[f"h{i}" for i in range(2)], *[[text, str(r)] for r in range(level)]])
    return builder.build("structured")


@PROPERTY
@given(units=st.lists(_UNIT, max_size=12), max_size=st.integers(1, 200), min_size=st.integers(0, 30))
def test_structure_contract_on_units(units: list[tuple[str, str, int]], max_size: int, min_size: int) -> None:
    doc = _structured(units)
    chunks = get_chunker("structure", max_size=max_size, min_size=min(min_size, max_size)).chunk(doc)
    check_contract(doc, chunks, get_counter("chars"), max_size)
    for chunk in chunks:
        assert set(chunk.unit_ids) <= {u.id for u in doc.units}


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [{}, {"breakpoint": "percentile", "percentile": 60.0}, {"method": "cluster"}],
    ids=["threshold", "percentile", "cluster"],
)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=small_text, max_size=st.integers(8, 120))
def test_semantic_contract(embedder, options: dict[str, object], text: str, max_size: int) -> None:  # type: ignore[no-untyped-def]
    doc = _doc(text)
    chunks = get_chunker("semantic", max_size=max_size, embedder=embedder, **options).chunk(doc)
    check_contract(doc, chunks, get_counter("chars"), max_size)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("os.path:join", {}, r"chunker 'os.path:join' is not a class \(a function\)"),
        ("json:JSONDecoder", {"foo": 1}, r"cannot build chunker 'json:JSONDecoder' with \['foo'\]"),
        ("json:JSONDecoder", {}, r"json:JSONDecoder is not a chunker \(it needs a name and chunk\(doc\)\)"),
        ("json:Nothing", {}, "cannot load chunker 'json:Nothing'"),
    ],
)
def test_a_chunker_named_by_module_that_is_none_is_a_config_error(
    name: str, params: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        get_chunker(name, **params)
