"""What a run will spend, estimated before anything is spent: the engine of ``--dry-run``.

For one configuration on one data set, per stage: model calls and input/output tokens of the LLM
(chunking by an LLM chunker, contextual headers written by the LLM, query rewriting, ChunkRAG's relevance
scoring of each candidate, answers), of the embedder (chunks at ingest; the sentences or pieces a
semantic chunker embeds, one call per document; queries) and of the reranker (the pairs it scores).
Nothing is loaded and nothing is called: token counts come from character counts at
:data:`CHARS_PER_TOKEN` (about right for English under the common BPE and WordPiece vocabularies), chunk
counts from the size limit and overlap, and call counts from each stage's own rules (one call per
window, per document, per query, three per scored candidate).

The figures are upper bounds in one sense: the model cache, and the evaluation's index cache, make a
repeated run cheaper; they are not bounds on retries a remote service may cause.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chunkwise.chunking import LLM_CHUNKERS
from chunkwise.config import PipelineConfig
from chunkwise.evaluation.datasets import Dataset

#: Characters per token assumed for every count (LLM and embedder alike).
CHARS_PER_TOKEN = 4.0
#: Tokens of instructions around the text in one LLM prompt.
PROMPT_TOKENS = 300
#: The relevance filter's LLM calls per candidate: base score, self-reflection, critic (ChunkRAG).
RELEVANCE_STEPS = 3
#: Reply length limits of the retrieval stages (as their modules set them).
RELEVANCE_REPLY_TOKENS = 8
REWRITE_REPLY_TOKENS = 64
SUMMARY_REPLY_TOKENS = 80
TITLE_REPLY_TOKENS = 20
ANSWER_REPLY_TOKENS = 512
#: Characters of a document the header prompts show the LLM.
HEADER_PROMPT_CHARS = 4000
#: Tokens of a chunk header (title, summary, section path) prepended to each embedded chunk.
HEADER_TOKENS = 40
#: Tokens of a passage a reranker reads (the bundled cross-encoder's window).
RERANK_PAIR_TOKENS = 192


@dataclass(frozen=True, slots=True)
class StageEstimate:
    """What one stage is expected to spend; ``model`` is ``"llm"``, ``"embedder"`` or ``"reranker"``."""

    stage: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int = 0

    def plus(self, other: StageEstimate) -> StageEstimate:
        """The sum of two estimates of the same stage."""
        return StageEstimate(
            self.stage,
            self.model,
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "stage": self.stage,
            "model": self.model,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """Per-stage estimates of a whole run (one or more configurations), in first-seen stage order; a
    stage's model is ``llm``, ``embedder`` or ``reranker``."""

    stages: tuple[StageEstimate, ...]

    def total(self, model: str) -> StageEstimate:
        """All stages of ``model`` (``"llm"`` or ``"embedder"``) added up."""
        total = StageEstimate("total", model, 0, 0, 0)
        for stage in self.stages:
            if stage.model == model:
                total = total.plus(stage)
        return total

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping with the totals."""
        return {
            "stages": [s.to_dict() for s in self.stages],
            "llm": self.total("llm").to_dict(),
            "embedder": self.total("embedder").to_dict(),
            "reranker": self.total("reranker").to_dict(),
        }


def tokens_of(chars: float) -> int:
    """Tokens of ``chars`` characters at :data:`CHARS_PER_TOKEN`."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def estimate_ingest(texts: Sequence[str], config: PipelineConfig) -> list[StageEstimate]:
    """Model use of indexing documents of ``texts`` under ``config``: chunking, headers, embedding the
    chunks."""
    stages: list[StageEstimate] = []
    params = config.chunking.params
    name = config.chunking.name
    chars = sum(len(text) for text in texts)
    if name in LLM_CHUNKERS:
        stages.append(_llm_chunking(name, params, texts))
    if name == "semantic":
        stages.append(StageEstimate("chunking.embed", "embedder", len(texts), tokens_of(chars)))
    chunks = expected_chunks(params, texts)
    step = 1.0 - _overlap_fraction(params)
    header_tokens = HEADER_TOKENS if config.headers.enabled else 0
    if config.headers.enabled and config.headers.llm:
        prompt = PROMPT_TOKENS + tokens_of(HEADER_PROMPT_CHARS)
        docs = len(texts)
        calls = docs * (int(config.headers.title) + int(config.headers.summary))
        output = docs * (TITLE_REPLY_TOKENS * int(config.headers.title))
        output += docs * SUMMARY_REPLY_TOKENS * int(config.headers.summary)
        stages.append(StageEstimate("headers", "llm", calls, calls * prompt, output))
    embedded, tokens = _embedded(config, chunks, tokens_of(chars / step), header_tokens)
    stages.append(
        StageEstimate("embed", "embedder", math.ceil(embedded / max(1, config.retrieval.embed_batch)), tokens)
    )
    return stages


def _embedded(config: PipelineConfig, chunks: int, chunk_tokens: int, header_tokens: int) -> tuple[int, int]:
    """Texts and tokens an ingest embeds: each chunk with its header, and with ``retrieval.windows`` the
    passage windows of chunks longer than a window (counted for a chunk of the mean length), each with
    the header, the whole chunks left out when ``retrieval.embed_whole`` is false."""
    texts, tokens = chunks, chunk_tokens + chunks * header_tokens
    size = config.retrieval.windows
    if not size or not chunks or chunk_tokens / chunks <= size:
        return texts, tokens
    stride = size // 2 if config.retrieval.window_overlap else size
    windows = chunks * (math.ceil((chunk_tokens / chunks - size) / stride) + 1)
    if not config.retrieval.embed_whole:
        texts, tokens = 0, 0
    return texts + windows, tokens + windows * (size + header_tokens)


def estimate_queries(
    queries: Sequence[str], config: PipelineConfig, *, answers: bool = False, batched: bool = True
) -> list[StageEstimate]:
    """Model use of asking every one of ``queries`` (and answering it when ``answers``). ``batched``:
    the queries are embedded in one call, as the evaluation runner does (else one call per query)."""
    count = len(queries)
    query_tokens = sum(tokens_of(len(q)) for q in queries)
    stages: list[StageEstimate] = []
    if config.rewrite.enabled:
        stages.append(
            StageEstimate(
                "rewrite", "llm", count, count * PROMPT_TOKENS + query_tokens, count * REWRITE_REPLY_TOKENS
            )
        )
    if config.retrieval.dense:
        rewritten = count if config.rewrite.enabled else 0
        calls = (min(count, 1) if batched else count) + rewritten
        embedded = query_tokens + rewritten * REWRITE_REPLY_TOKENS
        stages.append(StageEstimate("dense", "embedder", calls, embedded))
    if config.relevance.enabled:
        candidates = min(config.relevance.max_candidates, config.retrieval.candidates)
        chunk_tokens = _mean_chunk_tokens(config)
        per_query = RELEVANCE_STEPS * candidates
        calls = count * per_query
        prompt = PROMPT_TOKENS + chunk_tokens
        input_tokens = calls * prompt + per_query * query_tokens
        output = calls * RELEVANCE_REPLY_TOKENS
        if config.relevance.threshold == "llm":
            calls += count
            input_tokens += count * (PROMPT_TOKENS + candidates * 4)
            output += count * RELEVANCE_REPLY_TOKENS
        stages.append(StageEstimate("relevance", "llm", calls, input_tokens, output))
    if config.rerank.enabled:
        stages.append(_rerank(config, count, query_tokens))
    if answers and config.answer.mode == "llm":
        context = tokens_of(config.answer.max_context_chars)
        stages.append(
            StageEstimate(
                "answer",
                "llm",
                count,
                count * (PROMPT_TOKENS + context) + query_tokens,
                count * ANSWER_REPLY_TOKENS,
            )
        )
    return stages


def estimate_run(
    dataset: Dataset,
    configs: Iterable[PipelineConfig],
    *,
    queries: Dataset | None = None,
    answers: bool = False,
) -> RunEstimate:
    """All configurations on ``dataset``; configurations sharing an ingest shape (chunking, headers,
    models) are indexed once, as the evaluation's index cache does. ``queries`` (default ``dataset``)
    gives the queries each configuration asks."""
    merged: dict[str, StageEstimate] = {}
    indexed: set[str] = set()
    texts = [doc.text for doc in dataset.documents]
    asked = [q.query for q in (queries or dataset).queries]
    for config in configs:
        shape = config.ingest_fingerprint(config.models.embedder)
        ingest = [] if shape in indexed else estimate_ingest(texts, config)
        indexed.add(shape)
        for stage in (*ingest, *estimate_queries(asked, config, answers=answers)):
            merged[stage.stage] = merged[stage.stage].plus(stage) if stage.stage in merged else stage
    return RunEstimate(tuple(merged.values()))


def _rerank(config: PipelineConfig, count: int, query_tokens: int) -> StageEstimate:
    """The reranker's use: one call a query scoring a pair per candidate it reranks (``rerank.depth``,
    else every candidate: each retriever's, both when both run, or those the relevance filter keeps),
    each pair the query and at most :data:`RERANK_PAIR_TOKENS` of the chunk."""
    retrieval = config.retrieval
    pairs = retrieval.candidates * (2 if retrieval.bm25 and retrieval.dense else 1)
    if config.relevance.enabled:
        pairs = min(pairs, config.relevance.max_candidates)
    if config.rerank.depth:
        pairs = min(pairs, config.rerank.depth)
    chunk = min(_mean_chunk_tokens(config) + HEADER_TOKENS * config.headers.enabled, RERANK_PAIR_TOKENS)
    return StageEstimate("rerank", "reranker", count, count * pairs * chunk + pairs * query_tokens)


def _overlap_fraction(params: dict[str, Any]) -> float:
    """The chunker's overlap as a fraction of its maximum size (capped below one)."""
    size = float(params.get("max_size") or 500)
    overlap = float(params.get("overlap") or 0.0)
    fraction = overlap if overlap < 1 else overlap / size
    return min(max(fraction, 0.0), 0.9)


def _size_chars(params: dict[str, Any]) -> float:
    """The chunker's maximum size in characters (token units at :data:`CHARS_PER_TOKEN`)."""
    size = float(params.get("max_size") or 500)
    return size if params.get("unit", "chars") == "chars" else size * CHARS_PER_TOKEN


def expected_chunks(params: dict[str, Any], texts: Sequence[str]) -> int:
    """Chunks a size-bound chunker gives: each document over the step (size less overlap), at least one."""
    step = _size_chars(params) * (1.0 - _overlap_fraction(params))
    return sum(max(1, math.ceil(len(text) / step)) for text in texts if text.strip())


def _mean_chunk_tokens(config: PipelineConfig) -> int:
    """A chunk's tokens, taken as the maximum size (an upper bound for relevance prompts)."""
    return tokens_of(_size_chars(config.chunking.params))


def _llm_chunking(name: str, params: dict[str, Any], texts: Sequence[str]) -> StageEstimate:
    """LLM calls of an LLM chunker: one per window, sized by the chunker's own window parameter."""
    calls = input_tokens = output_tokens = 0
    for text in texts:
        doc_tokens = tokens_of(len(text))
        if name == "agentic":
            windows = math.ceil(doc_tokens / int(params.get("window_size", 1024)))
            output_tokens += doc_tokens
            shown = doc_tokens
        elif name == "wrac":
            # the skeleton: per paragraph-sized unit about preview_words words and ten tokens of fields
            units = max(1, text.count("\n\n") + 1)
            shown = units * (int(params.get("preview_words", 12)) + 10)
            windows = math.ceil(shown / int(params.get("window_size", 1500)))
            output_tokens += units * 3
        elif name == "logprob":
            window = int(params.get("window_chars", 4000))
            overlap = int(params.get("overlap_chars", 400))
            windows = max(1, math.ceil((len(text) - overlap) / max(window - overlap, 1)))
            shown = windows * tokens_of(window)
        else:  # sections: numbered lines, window by window
            windows = math.ceil(len(text) / int(params.get("window_chars", 20_000)))
            shown = doc_tokens + tokens_of(text.count("\n") * 4)
            output_tokens += windows * 100
        windows = max(windows, 1)
        calls += windows
        input_tokens += shown + windows * PROMPT_TOKENS
    return StageEstimate("chunking", "llm", calls, input_tokens, output_tokens)
