"""Passage windows: how a long chunk is cut into windows (property tests), how a store keeps their
vectors and scores a chunk by its best one (against numpy), and an ingest that embeds them with the
bundled embedder."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking.tokens import get_counter
from chunkwise.config import load_config
from chunkwise.errors import ConfigError
from chunkwise.ingest.windows import window_spans
from chunkwise.kb import KnowledgeBase
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import fixed_chunks, unit_vectors

WORDS = st.lists(
    st.sampled_from(["cabin", "bags", "refund", "a", "23kg", "naïve", "x-ray", "\n\n"]), max_size=400
)


@settings(max_examples=60, deadline=None)
@given(WORDS, st.integers(2, 64), st.booleans())
def test_windows_cover_the_text_in_whole_words_each_within_its_size(
    words: list[str], size: int, overlap: bool
) -> None:
    text = " ".join(words)
    counter = get_counter("minilm")
    spans = window_spans(text, size, counter, overlap=overlap)
    tokens = counter.count(text)
    if tokens <= size:
        assert spans == []
        return
    assert spans[0][0] == len(text) - len(text.lstrip())
    assert spans[-1][1] == len(text.rstrip())
    for (_, end), (next_start, _) in itertools.pairwise(spans):
        if overlap:
            assert next_start <= end  # consecutive windows overlap: every token is in one
        else:
            assert text[end:next_start].strip() == ""  # end to end: nothing but spaces between them
    step = size // 2 if overlap else size
    assert len(spans) == -(-(tokens - size) // step) + 1  # a window every step, the last at the end
    for start, end in spans:
        assert start == 0 or text[start - 1].isspace()  # no word cut
        assert end == len(text) or text[end].isspace()
        longest_word = max((counter.count(w) for w in text[start:end].split()), default=0)
        assert counter.count(text[start:end]) <= size + 2 * longest_word


def test_a_chunk_scores_its_best_vector_whole_or_window(tmp_path: Path) -> None:
    doc = doc_from_markdown_lines("a.md", "# A\n" + "Windows find the passage inside a chunk. " * 6)
    chunks = fixed_chunks(doc, 60)
    vectors = unit_vectors(len(chunks), seed=1)
    owners = [0, 0, 2, 3, 3, 3]
    window_vectors = unit_vectors(len(owners), seed=2)
    with SQLiteStore(tmp_path / "kb") as store:
        store.check_embedder("test", 8)
        store.put(doc, chunks, [""] * len(chunks), vectors, fingerprint="f", windows=(owners, window_vectors))
        index = store.dense_index()
        for seed in range(5):
            query = unit_vectors(1, seed=10 + seed)[0]
            expected = vectors @ query
            for owner, vector in zip(owners, window_vectors, strict=True):
                expected[owner] = max(expected[owner], float(vector @ query))
            order = np.argsort(-expected, kind="stable")[:4]
            found = index.search(query, 4)
            assert [key for key, _ in found] == [int(index.keys[i]) for i in order]
            np.testing.assert_allclose([score for _, score in found], expected[order], rtol=1e-5)
        assert store.delete("a.md")
        assert len(store.dense_index().owners) == 0  # the windows went with their chunks


def test_ingest_embeds_windows_of_long_chunks_and_dense_search_finds_a_passage(tmp_path: Path) -> None:
    lines = [f"Paragraph {i} is about topic number {i} and nothing else. " * 8 for i in range(6)]
    lines[4] = "The night train to Vienna leaves from platform nine at 23:15. " + lines[4]
    (tmp_path / "long.md").write_text("# Long\n\n" + "\n\n".join(lines), encoding="utf-8")
    base = load_config(None)
    windowed = dataclasses.replace(
        base, retrieval=dataclasses.replace(base.retrieval, bm25=False, windows=64)
    )
    with KnowledgeBase(tmp_path / "kb", windowed) as kb:
        report = kb.add([tmp_path / "long.md"])
        assert len(report.added) == 1
        index = kb.store.dense_index()
        assert index.owners.size > len(index)  # several windows a chunk
        hits = kb.search("when does the night train to Vienna leave", k=1)
        assert "Vienna" in hits[0].text
        overlapping = int(index.owners.size)
    end_to_end = dataclasses.replace(
        windowed, retrieval=dataclasses.replace(windowed.retrieval, window_overlap=False)
    )
    assert end_to_end.ingest_fingerprint("e") != windowed.ingest_fingerprint("e")
    with KnowledgeBase(tmp_path / "kb", end_to_end) as kb:
        report = kb.add([tmp_path / "long.md"])
        assert len(report.replaced) == 1  # another window layout: embedded again
        index = kb.store.dense_index()
        assert len(index) < index.owners.size < overlapping  # about half as many windows
        hits = kb.search("when does the night train to Vienna leave", k=1)
        assert "Vienna" in hits[0].text


def test_windows_out_of_range_are_refused() -> None:
    from chunkwise.config import from_dict

    with pytest.raises(ConfigError, match=r"retrieval\.windows"):
        from_dict({"retrieval": {"windows": 1}})
