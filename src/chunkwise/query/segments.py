"""Relevant segment extraction (dsRAG RSE): from ranked chunks to the best contiguous runs of chunks.

dsRAG (D-Star-AI/dsRAG, ``dsrag/rse.py``) gives each chunk of the top documents a value

    value = exp(-rank / decay_rate) * relevance - irrelevant_chunk_penalty

(unranked chunks: ``-irrelevant_chunk_penalty``; with length adjustment a ranked chunk longer than 700
characters is scaled by ``length / 700``), so a segment's value is the sum of its chunks' values: a
maximum-subarray problem. Segments are then picked greedily: repeatedly the highest-valued segment that
(a) is at most ``max_length`` chunks, (b) starts and ends on a chunk of non-negative value, (c) stays in
one document, (d) overlaps no segment already picked and (e) fits the remaining ``overall_max_length``
budget; stop when the best value is below ``minimum_value``.

dsRAG searches every (start, end) pair in every round, O(n·L²) per round. Here, with prefix sums a
segment's value is O(1), only the m chunks of non-negative value can be endpoints (the ranked ones, m ≪
n), and since a pair that is invalid in one round stays invalid in every later round, one pass over the
candidate pairs sorted by (value desc, start, end) picks exactly dsRAG's segments. Cost: O(n) for the
prefix sums plus O(m·L log(m·L)) for the pairs, with an O(log k) overlap test against the k picked
segments (bisection over their sorted starts). Single query only: dsRAG's round robin over several
queries (and its ``overall_max_length_extension``) is not used.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from chunkwise.config import RSE_PRESETS, RSEParams
from chunkwise.errors import ConfigError
from chunkwise.query.candidate import Candidate
from chunkwise.query.trace import Trace
from chunkwise.spans import Span

Floats = npt.NDArray[np.float64]


def rse_params(preset: str = "balanced", **overrides: Any) -> RSEParams:
    """The named preset with ``overrides`` applied; :class:`ConfigError` for an unknown name or key."""
    if preset not in RSE_PRESETS:
        raise ConfigError(f"unknown RSE preset {preset!r}; choose one of {sorted(RSE_PRESETS)}")
    unknown = set(overrides) - set(RSEParams.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown RSE parameter {sorted(unknown)[0]!r}")
    return replace(RSE_PRESETS[preset], **overrides)


def chunk_values(
    ranks: Sequence[float] | Floats,
    relevances: Sequence[float] | Floats,
    lengths: Sequence[int],
    params: RSEParams,
) -> Floats:
    """dsRAG's chunk values; ``ranks[i]`` is the 0-based rank of chunk i, or NaN when it was not ranked."""
    rank = np.asarray(ranks, dtype=np.float64)
    ranked = ~np.isnan(rank)
    relevance = np.where(ranked, np.asarray(relevances, dtype=np.float64), 0.0)
    values = (
        np.exp(-np.where(ranked, rank, 0.0) / params.decay_rate) * relevance - params.irrelevant_chunk_penalty
    )
    if params.chunk_length_adjustment:
        length = np.maximum(np.asarray(lengths, dtype=np.float64), params.reference_length)
        values = np.where(ranked, values * length / params.reference_length, values)
    return values


def best_segments(
    values: Sequence[float] | Floats,
    doc_ends: Sequence[int],
    max_length: int,
    overall_max_length: int,
    minimum_value: float,
) -> list[tuple[int, int, float]]:
    """dsRAG's greedy segment choice over one meta-document, as ``(start, end, value)``, end exclusive.

    ``doc_ends`` are the exclusive end indices of the documents concatenated into ``values`` (the last
    one equals ``len(values)``); no segment crosses one.
    """
    vals = np.asarray(values, dtype=np.float64)
    limit = min(max_length, overall_max_length)
    pos = np.flatnonzero(vals >= 0)
    if pos.size == 0 or limit <= 0:
        return []
    prefix = np.concatenate(([0.0], np.cumsum(vals)))
    ends_sorted = np.asarray(doc_ends, dtype=np.int64)
    doc_last = ends_sorted[np.searchsorted(ends_sorted, pos, side="right")] - 1
    last = np.minimum(pos + limit - 1, doc_last)
    hi = np.searchsorted(pos, last, side="right") - 1
    counts = hi - np.arange(pos.size) + 1
    first = np.repeat(np.arange(pos.size), counts)
    offsets = np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts)
    starts = pos[first]
    ends = pos[first + offsets] + 1
    seg_values = prefix[ends] - prefix[starts]
    keep = seg_values >= minimum_value
    starts, ends, seg_values = starts[keep], ends[keep], seg_values[keep]
    order = np.lexsort((ends, starts, -seg_values))
    picked_starts: list[int] = []
    picked_ends: list[int] = []
    chosen: list[tuple[int, int, float]] = []
    budget = overall_max_length
    for idx in order:
        start, end = int(starts[idx]), int(ends[idx])
        if end - start > budget:
            continue
        slot = bisect.bisect_left(picked_starts, end)
        if slot > 0 and picked_ends[slot - 1] > start:
            continue
        picked_starts.insert(slot, start)
        picked_ends.insert(slot, end)
        chosen.append((start, end, float(seg_values[idx])))
        budget -= end - start
        if budget <= 0:
            break
    return chosen


@dataclass(frozen=True, slots=True)
class Segment(Span):
    """A run of consecutive chunks of one document: ``text == document.text[start:end]``.

    ``first``/``last`` are the ordinals of its first and last chunk; ``value`` its RSE value.
    """

    id: str
    text: str
    first: int
    last: int
    value: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "chunks": [self.first, self.last],
            "value": round(self.value, 6),
        }


def _holds_its_chunks(text: str, offset: int, chunks: Iterable[Candidate]) -> bool:
    """Whether ``text``, read from ``offset`` of its document, holds each of ``chunks`` where the search
    found it (the text the search ranked, not another version's)."""
    return all(text[c.start - offset : c.end - offset] == c.chunk.text for c in chunks)


class ChunkSource(Protocol):
    """What segment extraction needs from a store: chunk spans in document order, and document text."""

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each chunk of ``doc_id``, by ordinal."""
        ...

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        """``document.text[start:end]``."""
        ...


class SegmentExtraction:
    """Stage: turn the ranked candidates into segments. A candidate's relevance is its final score,
    clipped to [0, 1] (every scoring stage of the pipeline scores in [0, 1] except a reranker, whose
    scores pass through a logistic function when they leave that range). A candidate whose document
    another writer replaced or removed since the search read it (its chunk is not at its ordinal any
    more, or the document's text is gone, or no longer holds the chunk's text) is left out, with its
    segment when the text of that was read, and counted as ``stale`` in the trace."""

    name = "segments"

    def __init__(self, source: ChunkSource, params: RSEParams | None = None) -> None:
        self.source = source
        self.params = params or RSEParams()

    def extract(self, candidates: list[Candidate], trace: Trace) -> list[Segment]:
        """Segments for the ranked ``candidates``, best first."""
        params = self.params
        with trace.stage(self.name, len(candidates)) as report:
            doc_ids: list[str] = []
            for cand in candidates:
                if cand.doc_id not in doc_ids:
                    doc_ids.append(cand.doc_id)
            doc_ids = doc_ids[: params.top_k_for_document_selection]
            offsets: dict[str, int] = {}
            spans: list[tuple[int, int]] = []
            doc_ends: list[int] = []
            for doc_id in doc_ids:
                offsets[doc_id] = len(spans)
                spans.extend(self.source.chunk_spans(doc_id))
                doc_ends.append(len(spans))
            ranks = np.full(len(spans), math.nan)
            relevances = np.zeros(len(spans))
            ends = dict(zip(doc_ids, doc_ends, strict=True))
            ranked: dict[int, Candidate] = {}  # the candidate of each ranked chunk
            stale = 0
            for rank, cand in enumerate(candidates):
                if cand.doc_id in offsets:
                    index = offsets[cand.doc_id] + cand.ordinal
                    if index >= ends[cand.doc_id] or spans[index] != (cand.start, cand.end):
                        stale += 1  # its document was replaced or removed since the search read it
                    elif math.isnan(ranks[index]):
                        ranks[index] = rank
                        relevances[index] = min(max(cand.score, 0.0), 1.0)
                        ranked[index] = cand
            lengths = [end - start for start, end in spans]
            values = chunk_values(ranks, relevances, lengths, params)
            picked = best_segments(
                values, doc_ends, params.max_length, params.overall_max_length, params.minimum_value
            )
            segments = []
            for start, end, value in picked:
                doc_index = int(np.searchsorted(doc_ends, start, side="right"))
                doc_id = doc_ids[doc_index]
                first, last = start - offsets[doc_id], end - 1 - offsets[doc_id]
                char_start, char_end = spans[start][0], max(e for _, e in spans[start:end])
                try:
                    text = self.source.document_text(doc_id, char_start, char_end)
                except KeyError:  # removed since its spans were read
                    stale += 1
                    continue
                found = (ranked[i] for i in range(start, end) if i in ranked)
                if not _holds_its_chunks(text, char_start, found):
                    stale += 1  # replaced since its spans were read: the text is another version's
                    continue
                segments.append(
                    Segment(
                        id=f"{doc_id}#{first}-{last}",
                        doc_id=doc_id,
                        start=char_start,
                        end=char_end,
                        text=text,
                        first=first,
                        last=last,
                        value=value,
                    )
                )
            report.outputs = len(segments)
            report.scores = {s.id: s.value for s in segments}
            report.notes = {"documents": len(doc_ids), "meta_document_chunks": len(spans)}
            if stale:
                report.notes["stale"] = stale
            return segments
