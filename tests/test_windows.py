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
from chunkwise.errors import ConfigError, StoreError
from chunkwise.ingest.windows import reach, window_spans
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.query.candidate import Query
from chunkwise.query.retrieve import Retrieve
from chunkwise.query.trace import Trace
from chunkwise.store import StoreSettings, sqlite
from chunkwise.store.dense import DenseIndex
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.fakes import CountingEmbedder, HashEmbedder
from tests.support.store import best_windows, fixed_chunks, put, requires_usearch, unit_vectors

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
    for (start, end), (next_start, next_end) in itertools.pairwise(spans):
        assert (start, end) < (next_start, next_end)  # in order, none twice
        assert end <= next_end
        if overlap:
            assert next_start <= end  # consecutive windows overlap: every token is in one
        else:
            assert text[end:next_start].strip() == ""  # end to end: nothing but spaces between them
    step = size // 2 if overlap else size
    assert len(spans) <= -(-(tokens - size) // step) + 1  # a window every step, the last at the end
    out = reach(size)
    for start, end in spans:
        for cut in (start, end):
            if 0 < cut < len(text) and not text[cut - 1].isspace() and not text[cut].isspace():
                # a word is cut only when its whitespace lies beyond the reach of the window's end
                word = text[text.rfind(" ", 0, cut) + 1 : (text.find(" ", cut) + 1 or len(text) + 1) - 1]
                assert counter.count(word) > out
        assert counter.count(text[start:end]) <= size + 2 * out + 2


@settings(max_examples=20, deadline=None)
@given(st.integers(200, 900), st.sampled_from([16, 64, 128]), st.booleans())
def test_text_without_spaces_is_cut_between_tokens_not_into_whole_chunk_windows(
    length: int, size: int, overlap: bool
) -> None:
    # Chinese has no spaces between words: moving a window's ends out to whitespace would make every
    # window the whole text
    text = ("检索增强生成把文档切成块再按问题找回最相关的片段。" * 40)[:length]
    counter = get_counter("minilm")
    spans = window_spans(text, size, counter, overlap=overlap)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert len(set(spans)) == len(spans)
    for start, end in spans:
        assert counter.count(text[start:end]) <= size + 2 * reach(size)
    covered = sum(end - start for start, end in spans)
    assert covered <= (2.5 if overlap else 1.5) * len(text)


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


def test_window_scores_are_each_chunks_best_window(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, doc_from_markdown_lines("a.md", "# A\n" + "Some words. " * 40), windowed=True)
        keys = [int(key) for key in store.dense_index().keys]
        query = unit_vectors(1, seed=7)[0]
        best = best_windows(keys, 0, query)
        asked = [keys[5], keys[0], keys[4], keys[3], 10**9]  # chunk 0 and 3 have no windows; no such key
        scores = store.window_scores(query, asked)
        assert set(scores) == {keys[5], keys[4]}
        for key, score in scores.items():
            assert score == pytest.approx(best[key], rel=1e-5)
        assert store.window_scores(query, []) == {}


def test_a_candidate_only_bm25_found_is_scored_by_its_best_window(tmp_path: Path) -> None:
    """Dense retrieval scores a chunk by its best vector; a candidate that only BM25 brought in gets the
    same score, not its whole vector's cosine, so that the fusion compares like with like."""
    text = "# Guide\nZebras graze on the plains.\nLions sleep all day long.\nOkapi hide in the forest.\n"
    doc = doc_from_markdown_lines("guide.md", text)
    chunks = fixed_chunks(doc, 26)
    embedder = HashEmbedder()
    query = unit_vectors(1, dim=embedder.dim, seed=3)[0]
    vectors = unit_vectors(len(chunks), dim=embedder.dim, seed=4)
    okapi = next(i for i, c in enumerate(chunks) if "Okapi" in c.text)
    vectors[0] = query  # dense search's one hit
    vectors[okapi] = -query  # the whole vector points away from the question
    window = 0.9 * query + np.sqrt(1 - 0.9**2) * unit_vectors(1, dim=embedder.dim, seed=5)[0]
    window /= np.linalg.norm(window)
    with SQLiteStore(tmp_path / "kb") as store:
        store.check_embedder(embedder.name, embedder.dim)
        windows = ([okapi], window[None, :])
        store.put(doc, chunks, [""] * len(chunks), vectors, fingerprint="f", windows=windows)
        retrieved = Retrieve(store, embedder, candidates=1)(Query("okapi", vector=query), [], Trace())
    scores = {candidate.chunk.ordinal: candidate.scores for candidate in retrieved}
    assert set(scores) == {0, okapi}
    assert "bm25" in scores[okapi]  # BM25 found it, dense search did not
    assert "bm25" not in scores[0]
    assert scores[okapi]["dense"] == pytest.approx(float(window @ query), rel=1e-5)


def test_without_whole_vectors_a_windowed_chunk_is_embedded_as_its_windows_alone(
    tmp_path: Path, embedder: object
) -> None:
    """``embed_whole = false``: a chunk with windows is not embedded itself, its vector is its windows'
    normalised mean, and dense search still finds a passage inside it."""
    lines = [f"Paragraph {i} is about topic number {i} and nothing else. " * 8 for i in range(6)]
    lines[4] = "The night train to Vienna leaves from platform nine at 23:15. " + lines[4]
    (tmp_path / "long.md").write_text("# Long\n\n" + "\n\n".join(lines), encoding="utf-8")
    (tmp_path / "short.md").write_text("# Short\n\nOne line, shorter than a window.", encoding="utf-8")
    base = load_config(None)
    retrieval = dataclasses.replace(
        base.retrieval, bm25=False, windows=64, window_overlap=False, embed_whole=False
    )
    config = dataclasses.replace(
        base, chunking=dataclasses.replace(base.chunking, params={"max_size": 800}), retrieval=retrieval
    )
    whole = dataclasses.replace(config, retrieval=dataclasses.replace(retrieval, embed_whole=True))
    assert config.ingest_fingerprint("e") != whole.ingest_fingerprint("e")
    counting = CountingEmbedder(embedder)
    with KnowledgeBase(tmp_path / "kb", config, models=Models(embedder=counting)) as kb:
        assert len(kb.add([tmp_path / "long.md", tmp_path / "short.md"]).added) == 2
        index = kb.store.dense_index()
        windowed = {int(key) for key in index.owners}
        assert 0 < len(windowed) < len(index)  # short.md's chunk is embedded whole
        assert counting.texts == len(index) - len(windowed) + index.owners.size
        for row, key in enumerate(index.keys):
            if int(key) in windowed:
                mean = index.windows[index.owners == key].mean(axis=0)
                np.testing.assert_allclose(index.matrix[row], mean / np.linalg.norm(mean), atol=1e-6)
        hits = kb.search("when does the night train to Vienna leave", k=1)
        assert "Vienna" in hits[0].text


def test_ingest_embeds_windows_of_long_chunks_and_dense_search_finds_a_passage(tmp_path: Path) -> None:
    lines = [f"Paragraph {i} is about topic number {i} and nothing else. " * 8 for i in range(6)]
    lines[4] = "The night train to Vienna leaves from platform nine at 23:15. " + lines[4]
    (tmp_path / "long.md").write_text("# Long\n\n" + "\n\n".join(lines), encoding="utf-8")
    base = load_config(None)
    windowed = dataclasses.replace(
        base,
        retrieval=dataclasses.replace(
            base.retrieval, bm25=False, windows=64, window_overlap=True, embed_whole=True
        ),
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


def assert_same_hits(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    """The same chunk keys in the same order, with the same scores to float32 precision."""
    assert [key for key, _ in found] == [key for key, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=30), st.integers(0, 2**16))
@requires_usearch
def test_above_the_threshold_windows_stay_in_the_database_and_score_as_held_ones(
    tmp_path_factory: pytest.TempPathFactory, counts: list[int], seed: int
) -> None:
    """At or above ``hnsw_threshold`` chunks a store holds no window vectors: a search reads its
    candidates' windows, the graph's pooled vectors are built from windows read in blocks. Every answer
    is the one the windows held in memory give, for chunks of any number of windows (none included):
    exact search, window scores, the graph's vectors (bit for bit) and the search through the graph."""
    directory = tmp_path_factory.mktemp("kb")
    doc = doc_from_markdown_lines("a.md", "# A\n" + "Windows stay on disk. " * 40)
    chunks = fixed_chunks(doc, max(1, len(doc.text) // len(counts)))
    owners = [i for i, count in enumerate(counts[: len(chunks)]) for _ in range(count)]
    rng = np.random.default_rng(seed)
    with SQLiteStore(directory, StoreSettings(hnsw_threshold=1)) as on_disk:
        on_disk.check_embedder("test", 8)
        windows = (owners, unit_vectors(len(owners), seed=seed + 1))
        on_disk.put(
            doc,
            chunks,
            [""] * len(chunks),
            unit_vectors(len(chunks), seed=seed),
            fingerprint="f",
            windows=windows,
        )
        index = on_disk.dense_index()
        assert index.windows.size == 0
        assert index.owners.size == 0
        assert index.windows_on_disk == bool(owners)
        with SQLiteStore(directory, StoreSettings(hnsw_threshold=10**9), read_only=True) as in_memory:
            held = in_memory.dense_index()
            assert held.owners.size == len(owners)
            assert not held.windows_on_disk
            np.testing.assert_array_equal(index.graph_vectors(), held.graph_vectors())
            for query in unit_vectors(3, seed=int(rng.integers(2**16))):
                assert_same_hits(index.exact(query, len(chunks)), held.exact(query, len(chunks)))
                keys = [int(key) for key in held.keys] + [10**9]
                assert index.window_scores(query, keys) == pytest.approx(
                    held.window_scores(query, keys), abs=1e-6
                )
                found = on_disk.dense(query, 3)  # through the graph, saved by the first search
                assert_same_hits(found, held.search(query, 3, approximate=True))


@requires_usearch
def test_a_search_reads_windows_of_its_own_generation_while_another_process_writes(tmp_path: Path) -> None:
    """A search whose windows stay in the database reads them in the read transaction its index was
    brought up to date in, so a write between searches never mixes generations: the next search sees
    the new chunks and no window of a removed one; an index kept past the write refuses to read another
    generation's windows (a key may by then name another chunk)."""
    at_one = StoreSettings(hnsw_threshold=1)
    with SQLiteStore(tmp_path / "kb", at_one) as reader, SQLiteStore(tmp_path / "kb", at_one) as writer:
        put(writer, doc_from_markdown_lines("a.md", "# A\n" + "Some words. " * 40), windowed=True)
        query = unit_vectors(1, seed=7)[0]
        stale = reader.dense_index()
        before = reader.dense(query, 3)
        assert writer.delete("a.md")
        put(writer, doc_from_markdown_lines("b.md", "# B\n" + "Other words. " * 40), seed=5, windowed=True)
        with SQLiteStore(tmp_path / "kb", StoreSettings(hnsw_threshold=10**9), read_only=True) as fresh:
            expected = fresh.dense(query, 3)  # exact; the graph proposes all 13 chunks for 3 hits
            keys = [int(key) for key in fresh.dense_index().keys]
            assert reader.window_scores(query, keys) == pytest.approx(
                fresh.window_scores(query, keys), abs=1e-6
            )
        assert_same_hits(reader.dense(query, 3), expected)
        assert reader.dense_index().generation > stale.generation
        with pytest.raises(StoreError, match="changed since"):
            stale.window_scores(query, [key for key, _ in before])


@requires_usearch
def test_a_write_landing_before_a_search_reads_its_windows_restarts_the_search(tmp_path: Path) -> None:
    """The search reads its windows without the store's lock: a write that lands between the index and
    its window reads makes it start again on the new generation (the answer is the new store's), and
    writes landing before every try are met by a last try that holds the lock throughout."""
    at_one = StoreSettings(hnsw_threshold=1)
    with SQLiteStore(tmp_path / "kb", at_one) as reader, SQLiteStore(tmp_path / "kb", at_one) as writer:
        put(writer, doc_from_markdown_lines("a.md", "# A\n" + "Some words. " * 40), windowed=True)
        query = unit_vectors(1, seed=7)[0]
        reader.dense(query, 3)
        writes = iter(range(10, 10 + sqlite.SEARCH_TRIES - 1))
        indexes = []
        plain = reader.dense_index

        def index_then_a_write() -> DenseIndex:
            """The index, then a write by another connection before the search can read its windows."""
            index = plain()
            indexes.append(index.generation)
            seed = next(writes, None)
            if seed is not None:
                put(
                    writer,
                    doc_from_markdown_lines(f"{seed}.md", f"# {seed}\n" + "More. " * 40),
                    seed=seed,
                    windowed=True,
                )
            return index

        reader.dense_index = index_then_a_write  # type: ignore[method-assign]
        found = reader.dense(query, 3)
        del reader.dense_index
        with SQLiteStore(tmp_path / "kb", StoreSettings(hnsw_threshold=10**9), read_only=True) as fresh:
            assert_same_hits(found, fresh.dense(query, 3))
        assert next(writes, None) is None  # every try but the last met a write
        assert indexes[-1] > indexes[0]
