"""BM25 for large PostgreSQL stores: the postings table held in memory, kept current by chunk key.

:class:`~.postgres.PostgresStore` ranks BM25 in SQL (``_BM25``), which scores every posting of the query
terms on every search: about linear in the store (``bench/scale.py``: 29 ms p50 at 100k chunks). At or
above ``bm25s_threshold`` chunks it answers from a :class:`PostingsIndex` instead: the same postings
(term, chunk key, term frequency, chunk length) copied into this process's memory and ranked with the
same arithmetic, so both give the same chunks, scores and order (ties by key).

Why not the bm25s index of the SQLite store (:mod:`.lexical`): bm25s floors the IDF of a term found in
more than half of the chunks at 0 where the SQL (as FTS5) floors it at 1e-6, scores in float32, breaks
ties otherwise, and cannot take documents one at a time: the rankings would differ, and every write
would cost a rebuild.

**Consistency.** Every write bumps ``stats.generation`` in its transaction (under the statistics row
lock), and :meth:`~.postgres.PostgresStore.repair`, which rewrites postings in place, also bumps
``stats.epoch``. A search reads that row (one cheap query); when the generation moved, the index is
brought up to date in one repeatable-read snapshot: the committed chunk keys are compared with the held
ones, postings of new keys are fetched and appended, keys no longer committed are masked. A new epoch,
or masked rows outnumbering live ones, rebuilds it from scratch. The statistics (chunks, terms) are
those of that snapshot's row, and document frequencies count the live postings, so ``N``, ``avgdl`` and
``df`` are what the SQL computes. Keys come from a sequence, so commit order is not key order: the
comparison of key sets (not a high-water mark) is what makes a document committed late by a slow writer
appear. Reads take no lock in PostgreSQL, so a search never waits for an ingest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.terms import K1, B

#: One posting as the aggregate below sends it: chunk key, term frequency, chunk length (big-endian).
_POSTING = np.dtype([("key", ">i8"), ("tf", ">i4"), ("dl", ">i4")])

#: The postings of each term, each posting packed into 16 bytes (``_POSTING``).
_POSTINGS = """
SELECT term, string_agg(int8send(chunk_key) || int4send(tf) || int4send(dl), ''::bytea)
FROM {s}.postings {where} GROUP BY term
"""

#: Postings of a term: the row of each chunk in the index, its term frequency and its length (12 bytes
#: a posting: about 100 MB for the 9M postings of 100k chunks of 120 words).
Postings = tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]
#: A term's postings are kept in the segments that successive refreshes appended, so that a refresh
#: copies only the new postings (a common term holds postings in most chunks); past this many segments
#: they are joined into one, which bounds what a search spends joining them.
MAX_SEGMENTS = 16


class PostingsIndex:
    """The postings of one snapshot of a store. Row ``i`` is chunk ``keys[i]``, searched while
    ``live[i]``. Never changed once built (:meth:`refresh` returns a new one), so threads may search one
    while another refreshes."""

    def __init__(
        self,
        stamp: tuple[int, int],
        stats: tuple[int, int],
        keys: npt.NDArray[np.int64],
        live: npt.NDArray[np.bool_],
        terms: dict[str, tuple[Postings, ...]],
    ) -> None:
        self.stamp = stamp
        self.stats = stats
        self.keys = keys
        self.live = live
        self.terms = terms

    @classmethod
    def empty(cls) -> PostingsIndex:
        """An index of nothing, stamped so that the first search fills it."""
        return cls((-1, -1), (0, 0), np.empty(0, np.int64), np.empty(0, bool), {})

    def refresh(self, conn: Any, schema: str) -> PostingsIndex:
        """This index brought to the store's committed state, read on ``conn`` in one repeatable-read,
        read-only transaction (``schema`` quoted); ``self`` when nothing changed since it was built."""
        conn.commit()  # a fresh transaction, so that its snapshot is taken below
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            generation, epoch, chunks, terms = conn.execute(
                f"SELECT generation, epoch, chunks, terms FROM {schema}.stats"
            ).fetchone()
            if (generation, epoch) == self.stamp:
                return self
            blob = conn.execute(
                f"SELECT coalesce(string_agg(int8send(chunk_key), ''::bytea), ''::bytea) FROM {schema}.chunks"
            ).fetchone()[0]
            committed = np.sort(np.frombuffer(blob, dtype=">i8").astype(np.int64))
            held = self.keys[self.live]
            start = self
            if epoch != self.stamp[1] or self.live.size - held.size > held.size:
                start, held = PostingsIndex.empty(), held[:0]  # postings rewritten, or mostly dead rows
            fresh = np.setdiff1d(committed, held, assume_unique=True)
            gone = np.setdiff1d(held, committed, assume_unique=True)
            where = "" if not held.size else "WHERE chunk_key = ANY(%s)"
            params = (fresh.tolist(),) if held.size else None
            added = (
                conn.execute(_POSTINGS.format(s=schema, where=where), params).fetchall() if fresh.size else []
            )
        finally:
            conn.rollback()
        return start._extended((int(generation), int(epoch)), (int(chunks), int(terms)), fresh, gone, added)

    def _extended(
        self,
        stamp: tuple[int, int],
        stats: tuple[int, int],
        fresh: npt.NDArray[np.int64],
        gone: npt.NDArray[np.int64],
        added: Sequence[tuple[str, bytes]],
    ) -> PostingsIndex:
        """A copy with rows for the ``fresh`` keys (sorted) and their ``added`` postings appended and the
        rows of the ``gone`` keys masked."""
        base = self.keys.size
        keys = np.concatenate([self.keys, fresh])
        live = np.concatenate([self.live, np.ones(fresh.size, bool)])
        if gone.size:
            live[:base] &= ~np.isin(self.keys, gone)
        terms = dict(self.terms)
        # decoded all at once, then cut into each term's slice (numpy calls per term are what cost)
        packed = np.frombuffer(b"".join(blob for _, blob in added), dtype=_POSTING)
        rows = (base + np.searchsorted(fresh, packed["key"].astype(np.int64))).astype(np.int32)
        tf, dl = packed["tf"].astype(np.int32), packed["dl"].astype(np.int32)
        end = 0
        for term, blob in added:
            start, end = end, end + len(blob) // _POSTING.itemsize
            segments = (*terms.get(term, ()), (rows[start:end], tf[start:end], dl[start:end]))
            terms[term] = (_joined(segments),) if len(segments) > MAX_SEGMENTS else segments
        return PostingsIndex(stamp, stats, keys, live, terms)

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys by Okapi BM25 (positive scores, best first, ties by key): the
        arithmetic of the SQL ranking, term by term, in float64."""
        chunks, total = self.stats
        if not chunks or k <= 0:
            return []
        n, avgdl = float(chunks), float(total) / float(chunks)
        scores = np.zeros(self.keys.size)
        for term in dict.fromkeys(terms):
            segments = self.terms.get(term)
            if segments is None:
                continue
            held = segments[0] if len(segments) == 1 else _joined(segments)
            live = self.live[held[0]]
            rows, f, d = held[0][live], held[1][live].astype(np.float64), held[2][live].astype(np.float64)
            if not rows.size:
                continue
            idf = math.log((n - rows.size + 0.5) / (rows.size + 0.5))
            weight = 1e-6 if idf <= 0 else idf
            scores[rows] += weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
        found = np.flatnonzero(scores)
        if found.size > k:
            cut = np.partition(scores[found], found.size - k)[found.size - k]
            found = found[scores[found] >= cut]
        order = found[np.lexsort((self.keys[found], -scores[found]))][:k]
        return [(int(self.keys[row]), float(scores[row])) for row in order]


def _joined(segments: Sequence[Postings]) -> Postings:
    """The segments of a term's postings as one, in order."""
    rows, tf, dl = (np.concatenate(parts) for parts in zip(*segments, strict=True))
    return rows, tf, dl
