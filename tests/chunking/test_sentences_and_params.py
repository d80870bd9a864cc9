"""The offline sentence splitter, the token counters, and parameter validation."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking import CHUNKERS, get_chunker, get_counter
from chunkwise.chunking.measure import RunTokenMeasure, TokenMeasure
from chunkwise.chunking.sentences import split_sentences
from chunkwise.chunking.tokens import BLOCK_CHARS, CHINESE_CHARACTERS, HFTokenCounter, TiktokenCounter
from chunkwise.config import from_dict
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.models.bundled import minilm_dir
from tests.support.contract import hostile_text, non_space


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Smith paid $3.14 for it. Then he left! Did he? Yes.",
            ["Dr. Smith paid $3.14 for it.", "Then he left!", "Did he?", "Yes."],
        ),
        (
            "He joined the U.S. Army in 1990. It was cold.",
            ["He joined the U.S. Army in 1990.", "It was cold."],
        ),
        ("J. K. Rowling wrote it, e.g. this one. Fine.", ["J. K. Rowling wrote it, e.g. this one.", "Fine."]),
        ('He said "Stop." Then he went.', ['He said "Stop."', "Then he went."]),
        ("Wait... what? Visit example.com today.", ["Wait... what?", "Visit example.com today."]),
        ("今天很好。明天呢？好的！", ["今天很好。", "明天呢？", "好的！"]),
        ("「走吧。」他说。", ["「走吧。」", "他说。"]),
        ("Title\n\nBody text here.", ["Title", "Body text here."]),
        ("Intro:\n- one\n- two\n1. three", ["Intro:", "- one", "- two", "1. three"]),
        ("This is a hard\nwrapped sentence. Next.", ["This is a hard\nwrapped sentence.", "Next."]),
    ],
)
def test_sentence_rules(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@settings(max_examples=200, deadline=None)
@given(text=hostile_text)
def test_sentences_are_trimmed_and_cover_the_text(text: str) -> None:
    spans = split_sentences(text)
    assert all(text[a:b] == text[a:b].strip() and b > a for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    assert non_space("".join(text[a:b] for a, b in spans)) == non_space(text)


def test_minilm_counter_matches_the_tokenizer_and_blocks() -> None:
    counter = get_counter("minilm")
    direct = HFTokenCounter(minilm_dir() / "tokenizer.json")
    text = "Chunking splits documents; 分块 splits them too. " * (BLOCK_CHARS // 20)
    assert counter.count("hello world") == 2  # no [CLS]/[SEP]
    starts, ends = counter.token_spans(text)
    assert len(starts) == direct.count(text) == counter.count_batch([text])[0]
    assert (starts[1:] >= starts[:-1]).all()
    assert (ends >= starts).all()
    assert get_counter(f"hf:{minilm_dir() / 'tokenizer.json'}").count(text) == len(starts)


def test_a_tiktoken_encoding_neither_cached_nor_fetchable_is_named_with_the_cache_and_the_reason(
    offline_tiktoken: Path,
) -> None:
    """tiktoken fetches an encoding missing from its cache: the error says it was not cached (naming the
    cache directory) and could not be fetched, with the first line of the fetch's error."""
    pytest.importorskip("tiktoken")
    with pytest.raises(ConfigError) as caught:
        TiktokenCounter("p50k_base")
    cause = caught.value.__cause__
    assert cause is not None
    assert str(caught.value) == (
        f"tiktoken:p50k_base: the encoding is not in tiktoken's cache ({offline_tiktoken}) and could not "
        f"be fetched ({type(cause).__name__}: {str(cause).strip().splitlines()[0]})"
    )
    with pytest.raises(ConfigError, match=r"^tiktoken:no_such_encoding: tiktoken knows no such encoding"):
        TiktokenCounter("no_such_encoding")
    assert list(offline_tiktoken.iterdir()) == []


def test_counter_errors_are_config_errors(tmp_path, offline_tiktoken) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="tiktoken"):
        get_counter("tiktoken:cl100k_base")
    with pytest.raises(ConfigError, match="unknown size unit"):
        get_counter("bytes")
    with pytest.raises(ConfigError, match="not found"):
        get_counter(f"hf:{tmp_path / 'missing.json'}")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_sise": 10}, r"recursive: unknown setting\(s\) max_sise; known: max_size, min_size"),
        ({"max_size": "ten"}, "recursive.max_size: expected int, got 'ten'"),
        ({"max_size": 0}, "at least 1"),
        ({"max_size": 10, "min_size": 11}, "min_size"),
        ({"max_size": 10, "overlap": 10}, "overlap"),
        ({"max_size": 10, "overlap": -0.5}, "overlap"),
        ({"unit": "parsecs"}, "unknown size unit"),
        ({"max_size": 5, "overlap": 2, "unit": "minilm"}, "at least 4 tokens"),
    ],
)
def test_bad_params(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        get_chunker("recursive", **params)


def test_a_counter_is_loaded_once_per_process() -> None:
    """Every document an ingest prepares asks for the windows' counter: loading MiniLM's tokenizer
    each time (about 14 ms) is what the cache saves."""
    assert get_counter("minilm") is get_counter("minilm")
    assert get_counter("chars") is get_counter("chars")


@pytest.mark.parametrize("unit", ["words", "hf:", "tiktoken: ", "bytes:cl100k_base"])
def test_an_unknown_unit_fails_when_the_configuration_is_read(unit: str) -> None:
    """A misspelt unit was accepted by ``load_config`` and failed every document at ingest; it is a
    ``ConfigError`` naming the setting when the configuration is read now, before any model loads."""
    with pytest.raises(ConfigError, match=rf"^chunking: recursive: unknown size unit '{re.escape(unit)}'"):
        from_dict({"chunking": {"name": "recursive", "params": {"max_size": 800, "unit": unit}}})


def test_semantic_and_registry_params() -> None:
    with pytest.raises(ConfigError, match="breakpoint"):
        get_chunker("semantic", breakpoint="median")
    with pytest.raises(ConfigError, match="method"):
        get_chunker("semantic", method="kmeans")
    with pytest.raises(ConfigError, match="unknown chunker"):
        get_chunker("magic")
    with pytest.raises(ConfigError, match="cannot load"):
        get_chunker("chunkwise.chunking.fixed:Nope")
    assert get_chunker("chunkwise.chunking.fixed:FixedChunker", max_size=3).name == "fixed"
    # Strings from the command line are typed by the params dataclass.
    chunker = get_chunker("semantic", max_size="80", overlap="0.25", threshold="0.5")
    assert chunker.describe()["params"]["max_size"] == 80  # type: ignore[attr-defined]
    assert set(CHUNKERS) >= {"fixed", "recursive", "sentence", "semantic", "structure"}


def test_chunk_ids_depend_on_content_and_offsets() -> None:
    chunker = get_chunker("recursive", max_size=10)
    first = chunker.chunk(Document(id="a", text="alpha beta gamma"))
    again = chunker.chunk(Document(id="a", text="alpha beta gamma"))
    other = chunker.chunk(Document(id="a", text="alpha beta gammb"))
    assert [c.id for c in first] == [c.id for c in again]
    assert first[0].id != other[0].id


@settings(max_examples=150, deadline=None)
@given(text=hostile_text, data=st.data())
def test_run_measure_agrees_with_full_tokenisation(text: str, data: st.DataObject) -> None:
    """The word-run measure (counts per distinct word) answers exactly like token offsets would."""
    counter = get_counter("minilm")
    runs, tokens = RunTokenMeasure(text, counter), TokenMeasure(text, counter)
    for _ in range(10):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        budget = data.draw(st.integers(1, 8))
        assert runs.size(start, end) == tokens.size(start, end)
        assert runs.forward(start, budget) == tokens.forward(start, budget)
        assert runs.backward(end, budget) == tokens.backward(end, budget)
        if end > start:
            assert runs.exact_sizes([start], [end]) == [counter.count(text[start:end])]


def test_chinese_characters_are_the_ones_the_tokenizer_sets_apart() -> None:
    """Each range of ``CHINESE_CHARACTERS``, and the code points just outside it, against MiniLM."""
    counter = get_counter("minilm")
    assert counter.isolated == CHINESE_CHARACTERS
    edges = [(low - 1, low, low + 1, (low + high) // 2, high, high + 1) for low, high in CHINESE_CHARACTERS]
    probes = sorted({code for group in edges for code in group})
    for code in probes:
        char = chr(code)
        inside = any(low <= code <= high for low, high in CHINESE_CHARACTERS)
        # Set apart, a character between two letters is a token of its own: "a", char, "a".
        assert (counter.count(f"a{char}a") == 3) == inside, hex(code)
        if inside:
            assert counter.count(char) == 1


_MIXED = st.lists(
    st.one_of(
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0x20000, max_codepoint=0x2000F),
        st.sampled_from(["，", "。", " ", "\n", "iPhone", "3.5", "\u0301", "é", "ｶﾀｶﾅ", "한국어"]),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=_MIXED, data=st.data())
def test_run_measure_agrees_on_text_without_spaces(text: str, data: st.DataObject) -> None:
    """Chinese characters as runs of their own, between Latin words, marks and other scripts."""
    counter = get_counter("minilm")
    runs, tokens = RunTokenMeasure(text, counter), TokenMeasure(text, counter)
    assert runs.size(0, len(text)) == counter.count(text)
    for _ in range(10):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        budget = data.draw(st.integers(1, 8))
        assert runs.forward(start, budget) == tokens.forward(start, budget)
        assert runs.backward(end, budget) == tokens.backward(end, budget)
        if end > start:
            assert runs.exact_sizes([start], [end]) == [counter.count(text[start:end])]
