"""First-stage retrieval (ChunkRAG's hybrid search): BM25 and dense candidates from the store.

Each retriever returns its ``candidates`` best chunk keys (or as many as the hits asked for, when more:
a search for 100 hits is not cut to 50 candidates); the union is loaded once, and every candidate
gets both scores where it can: its BM25 score when BM25 found it (0 otherwise, its true BM25 value
among the candidates is unknown), and its exact cosine to the query from its stored vector, whichever
retriever found it. :class:`~chunkwise.query.fusion.Fusion` then combines them.

Both retrievers read at most ``max_query_tokens`` tokens of the query (estimated, as the model layer
estimates for budgets, at four characters a token; the cut falls at a word): an embedder reads a few
hundred tokens at most anyway, a remote one refuses more than its limit, and FTS5's query time grows with
the number of distinct terms (a 200,000-word query took 25 s). A cut query is noted in each retriever's
trace report as ``truncated: "kept/total"`` (tokens).

The query is embedded on the query side (:func:`~chunkwise.models.protocols.embed_queries`: bge-small's
instruction, e5's ``"query: "``), unless the caller gave its vector; before every dense search the store
checks that its vectors come from this embedder (name, dimension and version), and refuses otherwise.
"""

from __future__ import annotations

import time

from chunkwise.errors import ConfigError
from chunkwise.models.managed import CHARS_PER_TOKEN, estimate_tokens
from chunkwise.models.protocols import Embedder, embed_queries, embedder_version
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace
from chunkwise.store.protocol import Store

#: How much higher than a candidate's own cosine a found score must be to come from a passage window
#: rather than float rounding in another engine (pgvector, HNSW).
WINDOW_MARGIN = 1e-5


class Retrieve:
    """Stage: BM25 and/or dense search over the store (traced as ``bm25`` and ``dense``)."""

    name = "retrieve"

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        *,
        bm25: bool = True,
        candidates: int = 50,
        max_query_tokens: int = 512,
    ) -> None:
        if not (bm25 or embedder is not None):
            raise ConfigError("retrieval needs bm25 or dense (or both) switched on")
        self.store = store
        self.embedder = embedder
        self.bm25 = bm25
        self.candidates = candidates
        self.max_query_tokens = max_query_tokens

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """The union of the BM25 and dense results for ``query.text`` (incoming candidates are ignored)."""
        found: dict[int, dict[str, float]] = {}
        best_window: dict[int, float] = {}
        text, truncated = truncate_query(query.text, self.max_query_tokens)
        depth = max(self.candidates, query.wanted)
        if self.bm25:
            with trace.stage("bm25") as report:
                if truncated:
                    report.notes["truncated"] = truncated
                hits = self.store.bm25(text, depth)
                for key, score in hits:
                    found.setdefault(key, {})["bm25"] = score
                report.outputs = len(hits)
        if self.embedder is not None:
            embedder = self.embedder
            self.store.check_embedder(embedder.name, embedder.dim, embedder_version(embedder), record=False)
            with trace.stage("dense") as report:
                if query.vector is None:
                    if truncated:
                        report.notes["truncated"] = truncated
                    began = time.perf_counter()
                    query.vector = embed_queries(embedder, [text])[0]
                    report.notes["embed_seconds"] = time.perf_counter() - began
                report.notes["index"] = self.store.dense_method()
                hits = self.store.dense(query.vector, depth)
                for key, score in hits:
                    found.setdefault(key, {})
                    best_window[key] = score
                report.outputs = len(hits)
                # a chunk that only BM25 found is scored by its best vector as well, window or whole
                best_window.update(
                    self.store.window_scores(query.vector, [k for k in found if k not in best_window])
                )
        retrieved = [
            Candidate(chunk, scores=dict(found[chunk.key])) for chunk in self.store.chunks(list(found))
        ]
        if query.vector is not None:
            for cand in retrieved:
                if cand.vector is not None:
                    cand.scores["dense"] = dense_score(
                        float(cand.vector @ query.vector), best_window.get(cand.key)
                    )
        return retrieved


def dense_score(whole: float, found: float | None) -> float:
    """A candidate's dense score: the cosine of its whole vector, or the score dense retrieval found it
    with when that is higher (a passage window's: :mod:`chunkwise.ingest.windows`). Without windows the
    two are one cosine computed twice, and the candidate's own is kept, so every store scores alike."""
    return found if found is not None and found > whole + WINDOW_MARGIN else whole


def truncate_query(text: str, limit: int) -> tuple[str, str | None]:
    """``text`` cut to about ``limit`` tokens at the last whitespace before the cut (mid-word only when a
    single word is longer), and ``"kept/total"`` estimated tokens when it was cut (``None`` when not)."""
    total = estimate_tokens(text)
    if total <= limit:
        return text, None
    cut = max(1, limit) * CHARS_PER_TOKEN
    space = max(text.rfind(blank, 0, cut + 1) for blank in " \t\n\r")
    kept = text[: space if space > 0 else cut].rstrip()
    return kept, f"{estimate_tokens(kept)}/{total}"
