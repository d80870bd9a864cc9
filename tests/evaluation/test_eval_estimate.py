"""``--dry-run`` estimates: model calls and tokens per stage, computed without loading any model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from chunkwise.chunking import get_chunker
from chunkwise.config import from_dict
from chunkwise.evaluation import Dataset, load_dataset
from chunkwise.evaluation.estimate import (
    CHARS_PER_TOKEN,
    RELEVANCE_STEPS,
    RERANK_PAIR_TOKENS,
    RunEstimate,
    estimate_ingest,
    estimate_queries,
    estimate_run,
    expected_chunks,
    tokens_of,
)


@pytest.fixture(scope="module")
def xquad(data_dir: Path) -> Dataset:
    return load_dataset(data_dir / "eval" / "xquad_mini")


def fixed(size: int, overlap: float = 0.0, **sections: Any) -> Any:
    params = {"max_size": size, "overlap": overlap, "unit": "chars"}
    return from_dict({"chunking": {"name": "fixed", "params": params}, **sections})


@pytest.mark.parametrize("size", [100, 250, 1000])
def test_expected_chunks_match_the_fixed_chunker(xquad: Dataset, size: int) -> None:
    chunker = get_chunker("fixed", max_size=size)
    actual = sum(len(chunker.chunk(doc)) for doc in xquad.documents)
    assert expected_chunks({"max_size": size}, [d.text for d in xquad.documents]) == actual


def test_fast_pipeline_calls_no_llm(xquad: Dataset) -> None:
    config = fixed(200, headers={"enabled": False})
    estimate = estimate_run(xquad, [config])
    assert estimate.total("llm").calls == 0
    stages = {s.stage: s for s in estimate.stages}
    chars = sum(len(d.text) for d in xquad.documents)
    chunks = expected_chunks(config.chunking.params, [d.text for d in xquad.documents])
    assert stages["embed"].calls == math.ceil(chunks / config.retrieval.embed_batch)
    assert stages["embed"].input_tokens == tokens_of(chars)
    assert stages["dense"].calls == 1  # the runner embeds the queries in one batch
    queries = [q.query for q in xquad.queries]
    unbatched = {s.stage: s for s in estimate_queries(queries, config, batched=False)}
    assert unbatched["dense"].calls == len(xquad.queries)
    assert stages["dense"].input_tokens == sum(
        math.ceil(len(q.query) / CHARS_PER_TOKEN) for q in xquad.queries
    )


def embed_tokens(estimate: RunEstimate) -> int:
    return next(s.input_tokens for s in estimate.stages if s.stage == "embed")


def test_overlap_embeds_more(xquad: Dataset) -> None:
    plain = estimate_run(xquad, [fixed(200, headers={"enabled": False})])
    half = estimate_run(xquad, [fixed(200, 0.5, headers={"enabled": False})])
    headed = estimate_run(xquad, [fixed(200)])
    assert embed_tokens(half) == pytest.approx(2 * embed_tokens(plain), abs=1)
    assert embed_tokens(headed) > embed_tokens(plain)


def test_passage_windows_are_counted(xquad: Dataset) -> None:
    def embed(**retrieval: Any) -> tuple[int, int]:
        config = fixed(800, headers={"enabled": False}, retrieval=retrieval)
        stage = {s.stage: s for s in estimate_run(xquad, [config]).stages}["embed"]
        return stage.calls, stage.input_tokens

    chars = sum(len(d.text) for d in xquad.documents)
    chunks = expected_chunks({"max_size": 800}, [d.text for d in xquad.documents])
    assert tokens_of(chars) / chunks > 64  # the chunks are longer than a window
    plain = embed(windows=0)
    overlapping = embed(windows=64, window_overlap=True, embed_whole=True)
    end_to_end = embed(windows=64, window_overlap=False, embed_whole=True)
    alone = embed(windows=64, window_overlap=False, embed_whole=False)
    assert embed(windows=512) == plain  # no chunk is longer than a window: nothing added
    assert plain[1] < end_to_end[1] < overlapping[1]
    assert alone[1] == end_to_end[1] - plain[1]  # the windows alone: the whole chunks' tokens spared
    assert overlapping[1] - plain[1] == pytest.approx(2 * (end_to_end[1] - plain[1]), rel=0.25)
    assert alone[0] <= end_to_end[0]


def test_chunkrag_counts_every_llm_stage(xquad: Dataset) -> None:
    config = from_dict({}, "chunkrag")
    stages = {s.stage: s for s in estimate_run(xquad, [config], answers=True).stages}
    queries = len(xquad.queries)
    assert stages["rewrite"].calls == queries
    candidates = min(config.relevance.max_candidates, config.retrieval.candidates)
    assert stages["relevance"].calls == queries * RELEVANCE_STEPS * candidates
    assert stages["relevance"].output_tokens == stages["relevance"].calls * 8
    assert stages["answer"].calls == queries
    # the semantic chunker embeds each document's sentences (one call per document) before the chunks
    assert stages["chunking.embed"].calls == len(xquad.documents)
    assert stages["chunking.embed"].model == "embedder"
    assert "chunking" not in stages
    # without answers (what eval runs) there is no answer stage
    assert "answer" not in {s.stage for s in estimate_queries([q.query for q in xquad.queries], config)}


def test_the_reranker_is_counted_a_call_a_query_a_pair_a_candidate(xquad: Dataset) -> None:
    """The ``quality`` and ``chunkrag`` presets rerank: their dry runs showed no reranker use at all."""
    queries = [q.query for q in xquad.queries]
    query_tokens = sum(tokens_of(len(q)) for q in queries)
    quality = from_dict({}, "quality")
    (rerank,) = [s for s in estimate_queries(queries, quality) if s.stage == "rerank"]
    depth = quality.rerank.depth
    assert depth > 0
    assert (rerank.model, rerank.calls) == ("reranker", len(queries))
    assert rerank.input_tokens == len(queries) * depth * RERANK_PAIR_TOKENS + depth * query_tokens
    # every candidate when no depth is set: each retriever's, both retrievers' with BM25 beside dense
    everything = from_dict(
        {"rerank": {"enabled": True, "depth": 0}, "chunking": {"params": {"max_size": 200}}}
    )
    (rerank,) = [s for s in estimate_queries(queries, everything) if s.stage == "rerank"]
    pairs = 2 * everything.retrieval.candidates
    assert rerank.input_tokens == len(queries) * pairs * (tokens_of(200) + 40) + pairs * query_tokens
    assert "rerank" not in {s.stage for s in estimate_queries(queries, from_dict({}))}
    assert estimate_run(xquad, [quality]).to_dict()["reranker"]["calls"] == len(queries)


def test_llm_headers_two_calls_per_document(xquad: Dataset) -> None:
    config = from_dict({}, "dsrag")
    stages = {s.stage: s for s in estimate_ingest([d.text for d in xquad.documents], config)}
    assert stages["headers"].calls == 2 * len(xquad.documents)


@pytest.mark.parametrize("chunker", ["agentic", "wrac", "logprob", "sections"])
def test_llm_chunkers_are_counted(xquad: Dataset, chunker: str) -> None:
    config = from_dict({"chunking": {"name": chunker, "params": {"max_size": 400}}})
    stage = {s.stage: s for s in estimate_ingest([d.text for d in xquad.documents], config)}["chunking"]
    assert stage.model == "llm"
    assert stage.calls >= len(xquad.documents)
    doc_tokens = sum(tokens_of(len(d.text)) for d in xquad.documents)
    if chunker == "agentic":  # every source token is written back out
        assert stage.output_tokens == doc_tokens
        assert stage.calls == sum(max(1, math.ceil(tokens_of(len(d.text)) / 1024)) for d in xquad.documents)
    if chunker == "logprob":  # a forward pass, nothing generated
        assert stage.output_tokens == 0


def test_shared_index_is_estimated_once(xquad: Dataset) -> None:
    one = estimate_run(xquad, [fixed(200)])
    weights = estimate_run(xquad, [fixed(200, retrieval={"weight": w}) for w in (0.2, 0.5, 0.8)])
    sizes = estimate_run(xquad, [fixed(200), fixed(400)])
    assert embed_tokens(weights) == embed_tokens(one)
    assert embed_tokens(sizes) > embed_tokens(one)
    dense = {s.stage: s for s in weights.stages}["dense"]
    assert dense.calls == 3
    assert weights.to_dict()["embedder"]["calls"] == weights.total("embedder").calls
