"""The evaluation runner end to end: real chunkers, the knowledge base, the bundled MiniLM embedder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from chunkwise.chunking import get_chunker
from chunkwise.config import from_dict
from chunkwise.errors import ConfigError
from chunkwise.evaluation import load_dataset, verify
from chunkwise.evaluation.html_report import render_html
from chunkwise.evaluation.metrics.budget import items_to_fill
from chunkwise.evaluation.runner import EvalProgress, evaluate
from chunkwise.models import Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.managed import ManagedEmbedder
from tests.support.fakes import CountingEmbedder

pytestmark = pytest.mark.slow


def config(chunker: str, size: int, **sections: Any) -> Any:
    return from_dict({"chunking": {"name": chunker, "params": {"max_size": size}}, **sections})


def test_span_dataset_two_configurations(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    events: list[EvalProgress] = []
    report = evaluate(
        dataset,
        [("recursive-400", config("recursive", 400)), ("fixed-200", config("fixed", 200))],
        workdir=tmp_path,
        models=Models(embedder=embedder),
        meta={"limit": None},
        on_progress=events.append,
    )
    data = report.to_dict()
    assert verify(data) == []
    assert report.metrics[:4] == ("recall@5", "precision@5", "iou@5", "precision_omega")
    for result in report.configs:
        assert len(result.queries) == len(dataset.queries)
        assert result.chunks is not None
        # 20 items, or as many as the shortest chunks take to fill recall@1000t's 4,000 characters
        depth = max(20, items_to_fill(result.chunks.lengths, 1000))
        assert all(len(q.retrieved) <= depth for q in result.queries)
        # every retrieved item is a real slice of a corpus document
        texts = {d.id: d.text for d in dataset.documents}
        assert all(0 <= r.start < r.end <= len(texts[r.doc_id]) for q in result.queries for r in q.retrieved)
        # the oracle chunks hold every gold span's text: the recursive and fixed chunkers lose no text
        assert all(q.oracle for q in result.queries)
        assert {c.stage for c in result.costs} >= {"index", "embed", "bm25", "dense"}
        assert result.chunks.count > 0
        # retrieval on three short articles finds the right document almost always
        assert result.metrics["doc_recall@5"] > 0.8
    assert result.chunks.lengths[-1] <= 200
    assert {e.phase for e in events} == {"index", "retrieve"}
    assert events[-1] == EvalProgress("fixed-200", "retrieve", len(dataset.queries), len(dataset.queries))
    assert "recursive-400" in render_html(report, resamples=100)


def test_retrieval_settings_reuse_the_index(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    dataset = load_dataset(data_dir / "eval" / "rmc_mini")
    counting = CountingEmbedder(embedder)
    # one vector a chunk (no passage windows), so that the texts an index embeds are its chunks
    one = {"windows": 0}
    first = evaluate(
        dataset,
        [("hybrid", config("recursive", 600, retrieval=one))],
        workdir=tmp_path,
        models=Models(embedder=counting),
    )
    indexed = first.configs[0].chunks
    assert indexed is not None
    assert counting.texts == indexed.count + len(dataset.queries)
    counting.texts = 0
    second = evaluate(
        dataset,
        [("rrf", config("recursive", 600, retrieval={**one, "fusion": "rrf"}))],
        workdir=tmp_path,
        models=Models(embedder=counting),
    )
    # only the queries were embedded: the chunks came from the cached index
    assert counting.texts == len(dataset.queries)
    assert second.metrics == ("doc_recall@5", "doc_precision@5", "mrr@5", "ndcg@5")
    assert verify(second.to_dict()) == []
    assert len(list((tmp_path / "indexes").iterdir())) == 1


class Built(CountingEmbedder):
    """The counting embedder, naming the graph it runs as a bundled INT8 model does."""

    def __init__(self, inner: Any, build: str) -> None:
        super().__init__(inner)
        self.build = build


def test_another_build_of_the_embedder_indexes_anew(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    """Same name, other graph: its vectors are not scored against the former graph's cached index."""
    dataset = load_dataset(data_dir / "eval" / "rmc_mini")
    one = config("recursive", 600, retrieval={"windows": 0})
    embedded = []
    for build in ("a", "b", "a"):
        counting = Built(embedder, build)
        report = evaluate(dataset, [("hybrid", one)], workdir=tmp_path, models=Models(embedder=counting))
        chunks = report.configs[0].chunks
        assert chunks is not None
        embedded.append(counting.texts - len(dataset.queries))
    assert embedded == [chunks.count, chunks.count, 0]  # the first build's index is still there
    assert len(list((tmp_path / "indexes").iterdir())) == 2


def test_sets_in_folders_of_one_name_keep_an_index_each(
    data_dir: Path, tmp_path: Path, embedder: Any
) -> None:
    """Two data sets whose folders share a name (``a/dev``, ``b/dev``) are indexed apart: evaluating one
    does not delete the other's documents from a shared index, so going back re-embeds nothing."""
    for parent, source in (("a", "rmc_mini"), ("b", "xquad_mini")):
        shutil.copytree(data_dir / "eval" / source, tmp_path / parent / "dev")
    counting = CountingEmbedder(embedder)
    one = config("recursive", 600, retrieval={"windows": 0})
    first, second = (load_dataset(tmp_path / parent / "dev") for parent in ("a", "b"))
    for dataset in (first, second):
        evaluate(dataset, [("hybrid", one)], workdir=tmp_path / "work", models=Models(embedder=counting))
    counting.texts = 0
    evaluate(first, [("hybrid", one)], workdir=tmp_path / "work", models=Models(embedder=counting))
    assert counting.texts == len(first.queries)
    assert len(list((tmp_path / "work" / "indexes").iterdir())) == 2


def test_small_chunks_are_retrieved_deep_enough_to_fill_a_token_budget(
    data_dir: Path, tmp_path: Path, embedder: Any
) -> None:
    """recall@400t reads 1,600 characters: 20 chunks of at most 40 would hold half of it, so the runner
    retrieves more and the small chunking is scored on a full context."""
    dataset = load_dataset(data_dir / "eval" / "xquad_mini", limit=4, seed=1)
    report = evaluate(
        dataset,
        [("fixed-40", config("fixed", 40))],
        workdir=tmp_path,
        metrics=["recall@400t"],
        models=Models(embedder=embedder),
    )
    for query in report.configs[0].queries:
        assert len(query.retrieved) > 20
        assert sum(r.end - r.start for r in query.retrieved) >= 400 * 4
    assert verify(report.to_dict()) == []


def test_a_document_that_fails_to_index_stops_the_run(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    """Three chunks at most a document refuses these 50-character chunks: without every document in the
    index the scores would be silent misses, so the configuration and the document are named instead."""
    dataset = load_dataset(data_dir / "eval" / "xquad_mini", limit=2)
    tiny = config("fixed", 50, limits={"max_chunks": 3})
    with pytest.raises(ConfigError, match=r"configuration 'tiny': document '.+' could not be indexed"):
        evaluate(
            dataset,
            [("tiny", tiny)],
            workdir=tmp_path,
            metrics=["recall@5"],
            models=Models(embedder=embedder),
        )


def test_a_lower_limit_is_enforced_on_an_index_built_without_it(
    data_dir: Path, tmp_path: Path, embedder: Any
) -> None:
    """The index of a configuration without limits was reused for the same configuration with
    ``max_chunks = 3``: its documents were skipped as stored, so the run passed on a cached index and
    failed on a fresh one. Limits other than the defaults name an index of their own."""
    dataset = load_dataset(data_dir / "eval" / "xquad_mini", limit=2)
    models = Models(embedder=embedder)
    evaluate(dataset, [("open", config("fixed", 50))], workdir=tmp_path, metrics=["recall@5"], models=models)
    tiny = config("fixed", 50, limits={"max_chunks": 3})
    with pytest.raises(ConfigError, match=r"configuration 'tiny': document '.+' could not be indexed"):
        evaluate(dataset, [("tiny", tiny)], workdir=tmp_path, metrics=["recall@5"], models=models)
    loose = config("fixed", 50, limits={"max_chunks": 10_000})  # above any document here: passes
    evaluate(dataset, [("loose", loose)], workdir=tmp_path, metrics=["recall@5"], models=models)


def test_segments_are_evaluated_as_spans(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini", limit=6, seed=1)
    report = evaluate(
        dataset,
        [("rse", config("recursive", 300, segments={"enabled": True}))],
        workdir=tmp_path,
        metrics=["recall@3", "iou@3", "mrr@3"],
        models=Models(embedder=embedder),
    )
    assert verify(report.to_dict()) == []
    # each retrieved item is a segment: it starts where a chunk starts and ends where a chunk ends
    chunker = get_chunker("recursive", max_size=300)
    starts, ends = set(), set()
    for doc in dataset.documents:
        for chunk in chunker.chunk(doc):
            starts.add((doc.id, chunk.start))
            ends.add((doc.id, chunk.end))
    items = [r for q in report.configs[0].queries for r in q.retrieved]
    assert items
    assert all((r.doc_id, r.start) in starts and (r.doc_id, r.end) in ends for r in items)


def test_span_metrics_on_document_gold_fail_before_any_work(data_dir: Path, tmp_path: Path) -> None:
    dataset = load_dataset(data_dir / "eval" / "rmc_mini")
    with pytest.raises(ConfigError, match="span gold"):
        evaluate(dataset, [("x", config("recursive", 600))], workdir=tmp_path, metrics=["iou@5"])
    assert not (tmp_path / "indexes").exists()


def test_model_calls_are_accounted_per_stage(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    dataset = load_dataset(data_dir / "eval" / "rmc_mini", limit=4, seed=0)
    ledger = Ledger()
    report = evaluate(
        dataset,
        [("managed", config("recursive", 600))],
        workdir=tmp_path,
        models=Models(embedder=ManagedEmbedder(embedder, ledger), ledger=ledger),
    )
    costs = {c.stage: c for c in report.configs[0].costs}
    # chunks embedded while indexing; the four queries in one prefetched batch while retrieving
    assert costs["embed"].calls >= 1
    assert costs["embed"].input_tokens > 0
    assert costs["dense"].calls == 1
    assert sum(c.calls for c in report.configs[0].costs) == len(ledger.records)
