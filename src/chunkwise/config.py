"""Pipeline configuration: typed dataclasses, loaded from TOML, with named presets.

A TOML file may name a preset (``preset = "chunkrag"``) and then override any field by section::

    preset = "default"

    [models]            # chunkwise.models.config.ModelsConfig, given to the model factories
    embedder = "local"
    llm = "openai:gpt-4o-mini"

    [chunking]
    name = "recursive"
    params = { max_size = 2000 }

    [retrieval]
    fusion = "rrf"

    [segments]
    enabled = true
    preset = "precision"

    [limits]            # per input document at ingest: bytes read, characters extracted, chunks
    max_chunks = 20000

Every stage has an ``enabled`` switch. Unknown sections or keys, values of the wrong type, and unknown or
out-of-range chunker parameters raise :class:`~chunkwise.errors.ConfigError` naming the key
(``retrieval.wieght``, ``chunking.params: recursive: unknown parameter(s) max_sise; known: ...``) when
the configuration is loaded, not at the first ingest.

Presets: ``default`` (BM25 + dense hybrid with the default local embedder, extractive answers: no LLM
anywhere), ``fast`` (the same with all-MiniLM-L6-v2, the quickest to ingest, on chunks of 800
characters that fit its 256-token window), ``quality`` (``default``
with passage windows of 64 tokens and BM25's fusion weight at 0.5, plus the bundled cross-encoder
reranking the best 10 fused candidates, its score blended with the fused one at weight 0.2; no LLM),
``chunkrag`` (ChunkRAG's Algorithm 1: rewrite, hybrid, redundancy, LLM relevance filter, rerank, LLM
answer) and ``dsrag`` (contextual headers with summaries, relevant segment extraction, LLM answer).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chunkwise.chunking import CHUNKING_REVISION, LLM_CHUNKERS, normalised_params
from chunkwise.chunking.limits import MAX_CHUNKS
from chunkwise.errors import ConfigError
from chunkwise.models.config import ModelsConfig
from chunkwise.parsing.limits import ParseLimits
from chunkwise.settings import build, read_toml
from chunkwise.store.pgurl import redact

#: The revision of how passage windows are cut (:func:`chunkwise.ingest.windows.window_spans`), part of
#: a windowed store's fingerprint, so that a change re-embeds them. 2: a window's end moves out to
#: whitespace by at most half a window (before, text without spaces made every window the whole chunk).
WINDOWS_REVISION = 2


@dataclass(frozen=True)
class ChunkingConfig:
    """The chunker (a name of ``chunkwise.chunking.CHUNKERS``) and its parameters.

    The default, ``recursive`` chunks of at most 2,000 characters, and BM25's fusion weight of 0.7
    (:class:`RetrievalConfig`) won ``bench/tune_defaults.py``: the best mean recall at a 1,000-token
    context over the tuning parts of the five dev sets, among sizes 400-2,400 and six fusions (the
    surface is flat: 1,600 and 0.6 scored 0.003 lower); on the held-back queries 0.766 against 0.761 for
    the former 800 characters and 0.5 (recall@5 +0 to +18 points, IoU lower: larger chunks carry more
    text around the answer). BM25's weight moved to 0.5 with the default's passage windows
    (:class:`RetrievalConfig`)."""

    name: str = "recursive"
    params: dict[str, Any] = field(default_factory=lambda: {"max_size": 2000})


@dataclass(frozen=True)
class HeadersConfig:
    """Contextual chunk headers. ``llm``: ask the LLM for missing titles and for the summary."""

    enabled: bool = True
    title: bool = True
    summary: bool = False
    section: bool = True
    llm: bool = False


@dataclass(frozen=True)
class RetrievalConfig:
    """First-stage retrieval: each retriever returns ``candidates`` chunks (or the hits a search asks
    for, when more), fused by ``fusion``. Stores of
    at least ``hnsw_threshold`` chunks search vectors by HNSW, of at least ``bm25s_threshold`` chunks
    answer BM25 from an index in memory (SQLite: the bm25s sidecar, FTS5 below; PostgreSQL: its
    postings, ranked as its SQL ranks them below). The retrievers read the first
    ``max_query_tokens`` tokens of a query (estimated at four characters a token, cut at a word), so a
    very long query costs the embedder and BM25 no more than that; the trace notes the cut.

    ``windows``: also embed each chunk longer than this many tokens as overlapping windows of this many
    tokens, and score a chunk in dense retrieval by its best vector, whole or window (0: off; see
    :mod:`chunkwise.ingest.windows`). Set when documents are ingested (a change re-embeds them); both
    stores keep them. ``window_overlap``: windows half a window apart (every token in two of them), or
    end to end when false (half as many). ``embed_whole``: embed a chunk that has windows whole as well;
    when false its vector is the normalised mean of its windows' vectors, not embedded, and the best of
    its windows and that mean ranks it. The defaults (64-token windows end to end without the whole chunk,
    BM25's weight 0.5) are what ``bench/tune_windows.py`` chose: held back, mean recall at 1,000 tokens
    0.798 against 0.766 with one vector a chunk and BM25 at 0.7, every dev set better; the whole vector
    adds nothing once windows exist, and without it the ingest takes 0.86-0.99 times as long as with no
    windows at all (``bench/windows_cost.py``: the whole chunk, one long sequence, is what costs). The
    ``quality`` preset embeds overlapping windows beside the whole chunk (``bench/tune_rerank.py`` tuned
    them with its reranker); ``fast`` embeds none."""

    bm25: bool = True
    dense: bool = True
    candidates: int = 50
    fusion: Literal["weighted", "rrf"] = "weighted"
    weight: float = 0.5
    rrf_k: int = 60
    hnsw_threshold: int = 50_000
    bm25s_threshold: int = 20_000
    embed_batch: int = 256
    max_query_tokens: int = 512
    windows: int = 64
    window_overlap: bool = False
    embed_whole: bool = False

    def validate(self, path: str) -> None:
        """Counts positive, the BM25 weight a share, windows 0 (off) or 2 to 512 tokens."""
        for name in ("candidates", "rrf_k", "embed_batch", "max_query_tokens"):
            _at_least(path, name, getattr(self, name), 1)
        for name in ("hnsw_threshold", "bm25s_threshold"):
            _at_least(path, name, getattr(self, name), 0)
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"{path}.weight: BM25's share of the fused score, 0 to 1, got {self.weight}")
        if self.windows not in range(2, 513) and self.windows != 0:
            raise ConfigError(f"{path}.windows: 0 (off) or 2 to 512 tokens, got {self.windows}")


@dataclass(frozen=True)
class StoreConfig:
    """Where the knowledge base lives when no location is given (``url``: a directory or
    ``postgresql://user@host:port/db?schema=NAME``, the password from ``PGPASSWORD`` or ``.pgpass``
    rather than the file), and the settings of a server store: its connection pool and HNSW index
    (``m`` and ``ef_construction`` apply when the index is created, ``ef_search`` to every search)."""

    url: str | None = None
    pool_size: int = 4
    hnsw_m: int = 16
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 100

    def validate(self, path: str) -> None:
        """A pool of at least one connection, and HNSW settings within pgvector's bounds (``m`` 2 to 100,
        ``ef_construction`` 4 to 1,000, ``ef_search`` 1 to 1,000), which refuses others at index time or
        at every search."""
        _at_least(path, "pool_size", self.pool_size, 1)
        for name, low, high in (
            ("hnsw_m", 2, 100),
            ("hnsw_ef_construction", 4, 1000),
            ("hnsw_ef_search", 1, 1000),
        ):
            value = getattr(self, name)
            if not low <= value <= high:
                raise ConfigError(f"{path}.{name}: {low} to {high} (pgvector's bounds), got {value}")


@dataclass(frozen=True)
class RewriteConfig:
    """ChunkRAG query rewriting."""

    enabled: bool = False


@dataclass(frozen=True)
class RedundancyConfig:
    """Drop candidates whose cosine to a better one exceeds ``threshold``.

    Off by default: on the dev sets it cost recall with bge-small (whose unrelated passages lie closer
    than 0.9: -2.9 to -6.9 points of recall@5 on chroma and anthropic_code) and changed MiniLM's by -0.8
    to +1.5; ``chunkrag`` turns it on, as ChunkRAG's algorithm has it."""

    enabled: bool = False
    threshold: float = 0.9

    def validate(self, path: str) -> None:
        """The threshold is a cosine of 0 to 1 (below 0 nearly every candidate would be dropped)."""
        _within(path, "threshold", self.threshold, 0.0, 1.0)


@dataclass(frozen=True)
class RelevanceConfig:
    """ChunkRAG's LLM relevance filter over the best ``max_candidates`` candidates."""

    enabled: bool = False
    threshold: Literal["dynamic", "llm"] = "dynamic"
    epsilon: float = 0.01
    neutral_score: float = 0.5
    weights: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])
    max_candidates: int = 20

    def validate(self, path: str) -> None:
        """Three non-negative weights (base, self-reflection, critic) with a positive sum, so that the
        combined score is a weighted mean in [0, 1]; ``neutral_score`` and ``epsilon`` (a variance of
        scores in [0, 1]) 0 to 1; at least one candidate scored."""
        if len(self.weights) != 3 or min(self.weights) < 0 or sum(self.weights) <= 0:
            raise ConfigError(
                f"{path}.weights: three weights (base, self-reflection, critic), none negative, with a "
                f"positive sum; got {self.weights}"
            )
        _within(path, "neutral_score", self.neutral_score, 0.0, 1.0)
        _within(path, "epsilon", self.epsilon, 0.0, 1.0)
        _at_least(path, "max_candidates", self.max_candidates, 1)


@dataclass(frozen=True)
class RerankConfig:
    """Rerank the best ``depth`` candidates (all when 0) with the configured reranker; keep the best
    ``top_n`` (all when 0). ``weight`` is the reranker's share of the final score (1: its order alone;
    below 1, blended with the incoming hybrid score; see :mod:`chunkwise.query.rerank`)."""

    enabled: bool = False
    top_n: int = 0
    depth: int = 0
    weight: float = 1.0

    def validate(self, path: str) -> None:
        """``top_n`` and ``depth`` 0 (all) or more; the reranker's share 0 to 1."""
        _at_least(path, "top_n", self.top_n, 0)
        _at_least(path, "depth", self.depth, 0)
        _within(path, "weight", self.weight, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class RSEParams:
    """Relevant segment extraction's parameters (:mod:`chunkwise.query.segments`), with dsRAG's
    ``balanced`` preset as defaults. Lengths count chunks."""

    max_length: int = 15
    overall_max_length: int = 30
    minimum_value: float = 0.5
    irrelevant_chunk_penalty: float = 0.18
    decay_rate: float = 30.0
    top_k_for_document_selection: int = 10
    chunk_length_adjustment: bool = True
    reference_length: int = 700


#: dsRAG's presets (``RSE_PARAMS_PRESETS`` in ``dsrag/rse.py``). They live here rather than with the
#: extraction (:mod:`chunkwise.query.segments`) so that ``segments.preset`` is checked when the
#: configuration is loaded: the query layer sits above this module and may not be imported by it.
RSE_PRESETS: dict[str, RSEParams] = {
    "balanced": RSEParams(),
    "precision": RSEParams(minimum_value=0.7, irrelevant_chunk_penalty=0.2),
    "find_all": RSEParams(
        max_length=40,
        overall_max_length=200,
        minimum_value=0.4,
        decay_rate=200.0,
        top_k_for_document_selection=200,
    ),
}


@dataclass(frozen=True)
class SegmentsConfig:
    """Relevant segment extraction: a dsRAG preset, with any of its parameters overridden.

    ``enabled`` makes answers use segments rather than chunks; ``KnowledgeBase.segments`` always runs it.
    """

    enabled: bool = False
    preset: str = "balanced"
    max_length: int | None = None
    overall_max_length: int | None = None
    minimum_value: float | None = None
    irrelevant_chunk_penalty: float | None = None
    decay_rate: float | None = None
    top_k_for_document_selection: int | None = None
    chunk_length_adjustment: bool | None = None

    def validate(self, path: str) -> None:
        """The preset one of :data:`RSE_PRESETS`, the lengths and the number of documents at least 1, the
        decay rate positive (ranks are divided by it)."""
        if self.preset not in RSE_PRESETS:
            raise ConfigError(
                f"{path}.preset: unknown RSE preset {self.preset!r}; choose one of {', '.join(RSE_PRESETS)}"
            )
        for name in ("max_length", "overall_max_length", "top_k_for_document_selection"):
            value = getattr(self, name)
            if value is not None:
                _at_least(path, name, value, 1)
        if self.decay_rate is not None and not self.decay_rate > 0:
            raise ConfigError(f"{path}.decay_rate: must be positive, got {self.decay_rate}")

    def overrides(self) -> dict[str, Any]:
        """The RSE parameters set here (the preset supplies the rest)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("enabled", "preset") and getattr(self, f.name) is not None
        }


@dataclass(frozen=True)
class AnswerConfig:
    """Answer generation: ``llm`` (grounded generation) or ``extractive`` (cited source sentences)."""

    mode: Literal["llm", "extractive"] = "extractive"
    sources: int = 5
    max_context_chars: int = 6000
    max_sentences: int = 2
    min_quote_chars: int = 10

    def validate(self, path: str) -> None:
        """Every count at least 1 (no sources, context or sentence could answer anything)."""
        for name in ("sources", "max_context_chars", "max_sentences", "min_quote_chars"):
            _at_least(path, name, getattr(self, name), 1)


#: The parser's default limits, the defaults of the ``[limits]`` section.
_PARSE_DEFAULTS = ParseLimits()


@dataclass(frozen=True)
class LimitsConfig:
    """Bounds on one input document at ingest (what ``--max-bytes``, ``--max-chars`` and ``--max-chunks``
    set for ``parse`` and ``chunk``): the bytes read, the characters extracted
    (:class:`~chunkwise.parsing.ParseLimits`) and the chunks it may become
    (:mod:`chunkwise.chunking.limits`). A document past one is refused with a typed error naming it."""

    max_bytes: int = _PARSE_DEFAULTS.max_bytes
    max_chars: int = _PARSE_DEFAULTS.max_chars
    max_chunks: int = MAX_CHUNKS

    def validate(self, path: str) -> None:
        """Every limit must be positive."""
        for name in ("max_bytes", "max_chars", "max_chunks"):
            _at_least(path, name, getattr(self, name), 1)

    def parse_limits(self) -> ParseLimits:
        """The parser's limits, with these bounds and the parser's defaults for the rest."""
        return ParseLimits(max_bytes=self.max_bytes, max_chars=self.max_chars)


@dataclass(frozen=True)
class PipelineConfig:
    """Everything a knowledge base needs to ingest, search and answer."""

    preset: str = "default"
    models: ModelsConfig = field(default_factory=ModelsConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    headers: HeadersConfig = field(default_factory=HeadersConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    rewrite: RewriteConfig = field(default_factory=RewriteConfig)
    redundancy: RedundancyConfig = field(default_factory=RedundancyConfig)
    relevance: RelevanceConfig = field(default_factory=RelevanceConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    segments: SegmentsConfig = field(default_factory=SegmentsConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    store: StoreConfig = field(default_factory=StoreConfig)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (reports print it): a store URL appears without its password."""
        data = dataclasses.asdict(self)
        if self.store.url is not None:
            data["store"]["url"] = redact(self.store.url)
        return data

    def ingest_uses_llm(self) -> bool:
        """Whether ingesting calls the LLM: an LLM chunker, or headers the LLM writes."""
        return self.chunking.name in LLM_CHUNKERS or (self.headers.enabled and self.headers.llm)

    def ingest_fingerprint(self, embedder: str) -> str:
        """A hash of what shapes stored chunks (chunker with its normalised parameters and the chunking
        code's revision, headers, embedder, and the LLM when ingesting calls one): a change re-ingests,
        a different spelling of the same settings does not."""
        shape: dict[str, Any] = {
            "chunking": {
                "name": self.chunking.name,
                "params": normalised_params(self.chunking.name, self.chunking.params),
                "revision": CHUNKING_REVISION,
            },
            "headers": dataclasses.asdict(self.headers),
            "embedder": embedder,
        }
        if self.ingest_uses_llm():  # absent otherwise, so stores made without an LLM keep their fingerprint
            shape["llm"] = self.models.llm
        if self.retrieval.windows:  # absent when off, so stores made before windows keep their fingerprint
            shape["windows"] = self.retrieval.windows
            shape["windows_revision"] = WINDOWS_REVISION
            if not self.retrieval.window_overlap:  # absent when true, the default when windows came in
                shape["window_overlap"] = False
            if not self.retrieval.embed_whole:
                shape["embed_whole"] = False
        return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]

    def with_budget(self, max_cost: float | None = None, max_tokens: int | None = None) -> PipelineConfig:
        """A copy whose model budget is replaced where an argument is given (the CLI's ``--max-cost``)."""
        models = self.models
        return dataclasses.replace(
            self,
            models=dataclasses.replace(
                models,
                max_cost=models.max_cost if max_cost is None else max_cost,
                max_tokens=models.max_tokens if max_tokens is None else max_tokens,
            ),
        )

    def to_stored(self) -> dict[str, Any]:
        """What a knowledge base records of its configuration: everything but the run budget, which
        belongs to one run, not to the store, and the store's own location, which may hold a password
        (keys are never part of a configuration)."""
        data = self.to_dict()
        data["models"] = {k: v for k, v in data["models"].items() if k not in ("max_cost", "max_tokens")}
        data["store"] = {k: v for k, v in data["store"].items() if k != "url"}
        return data


#: Named presets, as TOML-shaped overrides of the defaults.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    # MiniLM reads 256 tokens: chunks of 800 characters (about 200) fit, the default's 2,000 would not;
    # one vector a chunk, no passage windows
    "fast": {
        "models": {"embedder": "local:minilm-q8"},
        "chunking": {"params": {"max_size": 800}},
        "retrieval": {"windows": 0},
    },
    "chunkrag": {
        "chunking": {"name": "semantic", "params": {"max_size": 500}},
        "headers": {"enabled": False},
        "rewrite": {"enabled": True},
        "redundancy": {"enabled": True},
        "relevance": {"enabled": True},
        "rerank": {"enabled": True},
        "answer": {"mode": "llm"},
    },
    "quality": {
        "models": {"reranker": "local:ms-marco-minilm"},
        # window layout, BM25 and rerank weights tuned together on the dev sets with a held-back split
        # (bench/tune_rerank.py): overlapping windows beside the whole chunk, the default's size and weight;
        # the best 10 candidates reranked score as the best 20 did, at two thirds of the latency
        # (bench/tune_maxp.py, bench/pipeline_latency.py)
        "retrieval": {"window_overlap": True, "embed_whole": True},
        "rerank": {"enabled": True, "depth": 10, "weight": 0.2},
    },
    "dsrag": {
        "headers": {"summary": True, "llm": True},
        "retrieval": {"candidates": 100},
        "redundancy": {"enabled": False},
        "segments": {"enabled": True},
        "answer": {"mode": "llm"},
    },
}


def _at_least(path: str, name: str, value: int, low: int) -> None:
    """:class:`ConfigError` naming ``path.name`` unless ``value`` is at least ``low``."""
    if value < low:
        raise ConfigError(f"{path}.{name}: must be at least {low}, got {value}")


def _within(path: str, name: str, value: float, low: float, high: float) -> None:
    """:class:`ConfigError` naming ``path.name`` unless ``low <= value <= high``."""
    if not low <= value <= high:
        raise ConfigError(f"{path}.{name}: must be {low:g} to {high:g}, got {value}")


def _check_chunking(config: ChunkingConfig, path: str) -> None:
    """Validate the chunker name and parameters now, so a typo fails at load time, naming the key."""
    try:
        normalised_params(config.name, config.params)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def from_dict(data: dict[str, Any], preset: str | None = None) -> PipelineConfig:
    """A configuration from a TOML-shaped mapping: the preset (argument, else ``data["preset"]``, else
    ``default``) with ``data`` applied over it."""
    name = preset or data.get("preset", "default")
    if not isinstance(name, str) or name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    config = build(PipelineConfig, PRESETS[name], "", PipelineConfig())
    overrides = {k: v for k, v in data.items() if k != "preset"}
    built = build(PipelineConfig, overrides, "", dataclasses.replace(config, preset=name))
    check_config(built)
    return dataclasses.replace(built, models=built.models.with_env())


def check_config(config: PipelineConfig) -> None:
    """Every section's ranges and the chunker's parameters, as a file is checked when it is loaded;
    for a configuration changed in code (a tuning point), whose values no file went through.

    Raises:
        ConfigError: a value out of range, named by its key (``retrieval.weight: ...``).
    """
    config.models.validate("models")
    config.limits.validate("limits")
    config.retrieval.validate("retrieval")
    config.store.validate("store")
    config.redundancy.validate("redundancy")
    config.relevance.validate("relevance")
    config.rerank.validate("rerank")
    config.segments.validate("segments")
    config.answer.validate("answer")
    _check_chunking(config.chunking, "chunking")


def load_config(path: str | Path | None = None, preset: str | None = None) -> PipelineConfig:
    """Read a TOML file (or none) and apply it over the preset; :class:`ConfigError` names the problem,
    and the file (a command may read several)."""
    if path is None:
        return from_dict({}, preset)
    data = read_toml(path)
    try:
        return from_dict(data, preset)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
