"""Dense search over the stored vectors: exact (one matrix product) below a size threshold, HNSW above.

The exact path keeps every vector in one float32 matrix and scores a query with one matrix-vector product
and an ``argpartition``; at 100k × 384 that is a few milliseconds on two cores. Above
``hnsw_threshold`` vectors an HNSW graph (usearch, cosine metric) answers instead; it is built on first
use and saved next to the database with a stamp of the store generation it was built for (see
:mod:`.sidecar`), so another process reuses it. When the store changes, the saved graph follows it
(:meth:`DenseIndex.graph`): the removed chunks' nodes are removed and the added chunks' vectors added,
instead of the whole graph being built again (minutes at 100k chunks), as long as the stamp proves
that the store's history passed through the state the graph was built from (the token of its
generation) and that every chunk the graph and the store share still has the vector the graph was
given, and the changes since the graph was last built whole stay below :data:`UPDATE_SHARE`. Its
recall@10 against the exact search is measured in the tests and in ``bench/pipeline_latency.py``
(``bench/hnsw_update.py`` for a graph brought up to date). A graph may leave a few nodes that no search
reaches (:func:`strays`): they are found after each build or update, recorded in the stamp and scored
exactly beside every search's hits. A process that holds a graph in memory does not update it after a
write that only adds chunks: the added chunks are scored exactly beside its hits, as its strays are,
until :data:`PENDING_LIMIT` are pending (:meth:`DenseIndex.follow`), so that the first search after
each small write does not pay for an update and a search of every node. With passage
windows the graph of the chunks' vectors proposes candidates that are scored exactly by their windows
(see :meth:`DenseIndex.search`). Those windows (about eight 1.5 KB vectors per 2,000-character chunk) are
the bulk of the vectors, so a store above the threshold leaves them where they are stored and hands a
reader instead (``read_windows``): a search reads its candidates' windows, and the graph's pooled vectors
are built from blocks of windows read one after another.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.blas import one_blas_thread
from chunkwise.errors import ConfigError
from chunkwise.models.protocols import Vectors
from chunkwise.store.sidecar import (
    Keys,
    content_digest,
    keys_digest,
    publish,
    read_stamp,
    scratch_path,
    stamp_state,
)

#: The saved graph and its stamp, beside the database.
GRAPH, STAMP = "hnsw.usearch", "hnsw.json"
#: With passage windows, how many chunks per wanted hit the graph of the chunks' vectors proposes for
#: exact scoring by their best window (``bench/windows_search.py``).
WINDOW_BREADTH = 10
#: How many vectors start the graph one thread at a time: inserted in parallel into a graph that small,
#: some nodes end up poorly linked and are missed by searches (usearch 2.26: 9 of 1,200 searches for a
#: chunk's own pooled vector at 600 chunks, 3 at 5,000; none when the first 1,024 go in serially).
SERIAL_START = 1024
#: The stamp's variant of a graph built from the windows' means (:meth:`DenseIndex.graph_vectors`): a
#: graph saved before it, from the stored vectors, is rebuilt.
POOLED_GRAPH = "pooled windows"
#: How many chunks' windows are read at once when every window is needed from a reader (building the
#: graph, exact search): 4,096 chunks of 8 windows of 384 dimensions are 50 MB.
WINDOW_BLOCK = 4096
#: Reads the passage windows of the given chunk keys from where they are stored: the chunk key of each
#: window (each chunk's windows together, in their order) and their vectors. Keys without windows are
#: absent.
WindowReader = Callable[[Keys], tuple[Keys, Vectors]]
#: The token the store's history holds for an earlier generation than an index's ("" when it holds none):
#: the same token as a stamp's proves the store descends from the state the stamped graph was built
#: from (see :data:`.sqlite_schema.GENERATIONS_TABLE`).
Lineage = Callable[[int], str]
#: HNSW search breadth (usearch's ``expansion_search``; its default is 64): 128 buys recall for ~10% time.
EXPANSION_SEARCH = 128
#: The most chunks, as a share of the store's, that may have been removed or added since the graph was
#: last built whole for it to be brought up to date instead of built again. usearch removes a node by
#: marking it (it is still walked through, and saved and loaded as removed), so removals accumulate
#: over updates and cost recall where the graph has little to spare: on near-uniform 128-d vectors
#: (10k nodes, recall@10 0.803 built whole) 10% of the nodes replaced in 5% steps gave 0.789, 25% gave
#: 0.772 and 50% 0.726 (0.834 for the final vectors built whole); on clustered 384-d ones, as
#: embeddings lie, 0.994-0.999 throughout (``bench/hnsw_update.py``, part ``churn``). A tenth keeps the
#: loss within about a point, and lets a 100k-chunk store take 10,000 chunks of writes before its next
#: build.
UPDATE_SHARE = 0.1
#: The stamp's counts (:attr:`.sidecar.Stamp.counts`): the store's count of removed vectors at the
#: graph's generation, and the chunks removed or added since the graph was last built whole.
REMOVALS, CHANGED = "removals", "changed"
#: The stamp's list (:attr:`.sidecar.Stamp.lists`) of the graph's strays: chunks that no search of the
#: graph returns, not even one for the vector the graph holds for them (see :func:`strays`).
STRAYS = "strays"
#: The search breadth of the first, cheap pass of :func:`strays` over every node (about five times
#: faster than :data:`EXPANSION_SEARCH`; narrower gains nothing more); the nodes it misses are searched
#: again at the graph's own breadth.
STRAY_SCAN = 8
#: How many nodes :func:`strays` reads the vectors of and searches for at once (16,384 of 384
#: dimensions: 25 MB, and as much again in usearch's arrays of one vector each).
STRAY_BLOCK = 16384
#: How deep the second pass of :func:`strays` looks for a node among the hits of its own vector: deeper
#: than 1, so that one of two chunks of the same vector is not a stray for ranking second.
STRAY_DEPTH = 10
#: The most chunks added since a process loaded or built its HNSW graph that its searches score exactly
#: beside the graph's hits (:meth:`DenseIndex.follow`) before the graph is brought up to date (their
#: vectors' product with a query is under a millisecond at 4,096 × 384).
PENDING_LIMIT = 4096


def _no_keys() -> Keys:
    """No chunk keys."""
    return np.empty(0, dtype=np.int64)


def _no_rows(matrix: Vectors) -> Vectors:
    """No vectors, of ``matrix``'s width."""
    return np.empty((0, matrix.shape[1] if matrix.ndim == 2 else 0), dtype=np.float32)


def unit_means(vectors: Vectors, owners: npt.ArrayLike, count: int) -> Vectors:
    """For each of ``count`` owners, the mean of the rows of ``vectors`` that ``owners`` (a row index
    each) gives it, scaled to unit length as embeddings are (zeros for an owner of no row): a chunk's
    vector pooled from its passage windows' (their sum points where their mean does).

    The rows of each owner are summed run by run: one vectorised pass per position in a run (a chunk has
    a handful of windows), about three times faster than ``np.add.at``, which adds one row at a time
    (100,000 chunks of 1-15 windows: 1.6-1.9 s against 4.8-6.1 s here), with the same sums."""
    owned = np.asarray(owners, dtype=np.intp)
    sums = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    if owned.size:
        if np.any(owned[1:] < owned[:-1]):  # each owner's rows together, in their order
            order = np.argsort(owned, kind="stable")
            owned, vectors = owned[order], vectors[order]
        starts = np.flatnonzero(np.concatenate([[True], owned[1:] != owned[:-1]]))
        lengths = np.diff(np.append(starts, owned.size))
        run_sums = vectors[starts].astype(np.float32)
        for step in range(1, int(lengths.max())):
            longer = np.flatnonzero(lengths > step)
            run_sums[longer] += vectors[starts[longer] + step]
        sums[owned[starts]] = run_sums
    norms: Vectors = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return sums / norms


def best_per_chunk(owners: Keys, cosines: npt.NDArray[np.float32]) -> tuple[Keys, npt.NDArray[np.float32]]:
    """Each chunk's best of ``cosines``, one per window of ``owners`` (each chunk's windows together): the
    chunks, and their best cosine."""
    if not owners.size:
        return _no_keys(), np.empty(0, dtype=np.float32)
    starts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
    return owners[starts], np.maximum.reduceat(cosines, starts)


def top_k(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, best first, ties in index order (keys are sorted, so a tie
    goes to the lower chunk key, as PostgreSQL's ``ORDER BY best DESC, chunk_key`` has it: two copies of
    a text rank alike in both stores, and the top 1 is the first of the top 4)."""
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    cut = -np.partition(-scores, k - 1)[k - 1] if k < scores.size else np.nan  # the k-th highest score
    if np.isnan(cut):  # every score wanted (or too few are numbers): sort them all
        return np.argsort(-scores, kind="stable")[:k]
    above = np.flatnonzero(scores > cut)
    tied = np.flatnonzero(scores == cut)[: k - above.size]
    chosen = np.concatenate([above, tied])
    return chosen[np.argsort(-scores[chosen], kind="stable")]


@dataclass(frozen=True, slots=True)
class Graph:
    """An HNSW graph (usearch's ``Index``) with its ``strays`` (sorted keys of the nodes no search of it
    reaches, :func:`strays`) and the vectors it holds for them, row by row: one value, so that a
    search never pairs a graph with another's strays. ``generation``: the store generation it was loaded
    or built for (its saved stamp's). ``pending``: the sorted keys of chunks added to the store since,
    which the graph does not hold: they are among ``strays`` (with their graph vectors), scored exactly
    beside its hits (:meth:`extended`)."""

    index: Any
    strays: Keys
    stray_vectors: Vectors
    generation: int
    pending: Keys = field(default_factory=_no_keys)

    def extended(self, added: Keys, vectors: Vectors) -> Graph:
        """This graph with the chunks ``added`` to the store since (keys the graph does not hold, and
        the vectors :meth:`DenseIndex.graph_vectors` gives them) scored exactly beside its hits, as its
        strays are: nothing is inserted into the graph and no node searched for, so the first search
        after a small write costs what any other does (see :meth:`DenseIndex.follow`)."""
        keys = np.concatenate([self.strays, added])
        order = np.argsort(keys, kind="stable")
        merged = np.concatenate([self.stray_vectors, vectors.astype(np.float32)])
        return Graph(self.index, keys[order], merged[order], self.generation, np.union1d(self.pending, added))

    def nearest_strays(self, vector: Vectors, breadth: int) -> Keys:
        """The strays, or when there are more than ``breadth`` the ``breadth`` nearest to ``vector`` by
        the vectors the graph holds for them: as the graph itself proposes chunks, so that a store with
        many strays (thousands of copies of one text, all but a few stranded) does not score or read the
        windows of every one for every search."""
        if self.strays.size <= breadth:
            return self.strays
        with one_blas_thread():
            return self.strays[top_k(self.stray_vectors @ vector, breadth)]


class DenseIndex:
    """Vectors of one store generation: ``keys`` (sorted chunk keys) and the matching ``matrix`` rows,
    and ``windows``: the passage windows' chunk keys (``owners``, each chunk's windows together) and
    vectors, or ``read_windows``, which reads them from the store when they are needed (``windows`` then
    stays empty). A chunk scores its best cosine, whole or window. Its HNSW graph is saved in
    ``directory`` unless ``save`` is false (a read-only store). ``removals``: the store's count of vectors
    ever removed, read with ``generation``, ``token``: the random token the store holds for
    ``generation``, and ``lineage``: the tokens its history holds for earlier ones (``None``, or ``""``,
    when unknown: a saved graph of another generation is then never brought up to date, only built again;
    see :meth:`graph`). The graph is loaded or built once, by one thread, with its strays
    (:class:`Graph`)."""

    def __init__(
        self,
        keys: Keys,
        matrix: Vectors,
        generation: int,
        directory: Path,
        *,
        save: bool = True,
        windows: tuple[Keys, Vectors] | None = None,
        read_windows: WindowReader | None = None,
        store: str = "",
        removals: int | None = None,
        token: str = "",
        lineage: Lineage | None = None,
    ) -> None:
        self.keys = keys
        self.matrix = matrix
        self.generation = generation
        self.directory = directory
        self.save = save
        self.owners, self.windows = windows if windows is not None else (_no_keys(), _no_rows(matrix))
        if self.owners.size and np.any(np.diff(self.owners) < 0):  # each chunk's windows together
            order = np.argsort(self.owners, kind="stable")
            self.owners, self.windows = self.owners[order], self.windows[order]
        # each run of windows of one chunk: where it starts, and the row of its chunk
        changes = np.flatnonzero(np.diff(self.owners)) + 1 if self.owners.size else self.owners
        self._runs = np.concatenate([[0], changes]).astype(np.intp) if self.owners.size else changes
        self._run_rows = np.searchsorted(self.keys, self.owners[self._runs])
        # the runs ordered by their chunk key (and those keys), for looking up one chunk's windows
        self._run_order = np.argsort(self.owners[self._runs], kind="stable")
        self._run_keys = self.owners[self._runs][self._run_order]
        self._run_ends = np.append(self._runs[1:], self.owners.size).astype(np.intp)
        self.store = store
        self._read_windows = read_windows
        self.removals = removals
        self.token = token
        self._lineage = lineage
        self._graph: Graph | None = None
        self._graph_lock = threading.Lock()
        self._followed: tuple[Graph, int] | None = None  # an earlier generation's graph, and its size
        # the keys of an earlier generation whose graph (of the generation given) had chunks pending
        self._since_graph: tuple[int, Keys] | None = None

    def __len__(self) -> int:
        return int(self.keys.size)

    @property
    def windows_on_disk(self) -> bool:
        """The passage windows are read from the store when needed, not held here."""
        return self._read_windows is not None

    @property
    def has_windows(self) -> bool:
        """Some chunk has passage windows."""
        return bool(self.owners.size) or self.windows_on_disk

    def _window_blocks(self, keys: Keys | None = None) -> Iterator[tuple[Keys, Vectors]]:
        """The passage windows of ``keys`` (sorted; every chunk's when ``None``), as ``(owners,
        vectors)`` blocks of whole chunks: the held ones at once, or those of :data:`WINDOW_BLOCK` chunks
        at a time from the reader."""
        wanted = self.keys if keys is None else keys
        if self._read_windows is None:
            if self.owners.size and keys is None:
                yield self.owners, self.windows
            elif self.owners.size:
                held = np.isin(self.owners, wanted)
                yield self.owners[held], self.windows[held]
            return
        for start in range(0, wanted.size, WINDOW_BLOCK):
            yield self._read_windows(wanted[start : start + WINDOW_BLOCK])

    def vectors_of(self, keys: Keys) -> list[Vectors | None]:
        """The vector of each of ``keys``, ``None`` for a key this generation does not hold (its chunk
        was removed after the caller read it, or the store lost its vector)."""
        if not keys.size or not self.keys.size:
            return [None] * int(keys.size)
        rows = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        held = self.keys[rows] == keys
        return [self.matrix[row] if ok else None for row, ok in zip(rows, held, strict=True)]

    def exact(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest chunk keys by cosine (vectors are unit length), exactly."""
        if not len(self) or k <= 0:
            return []
        vector = query.astype(np.float32)
        with one_blas_thread():
            scores = self.matrix @ vector
            if self.owners.size:
                best_window = np.maximum.reduceat(self.windows @ vector, self._runs)
                scores[self._run_rows] = np.maximum(scores[self._run_rows], best_window)
            elif self.windows_on_disk:
                for owners, windows in self._window_blocks():
                    chunks, best_window = best_per_chunk(owners, windows @ vector)
                    rows = np.searchsorted(self.keys, chunks)
                    scores[rows] = np.maximum(scores[rows], best_window)
        best = top_k(scores, k)
        return [(int(self.keys[i]), float(scores[i])) for i in best]

    def window_scores(self, query: Vectors, keys: Sequence[int]) -> dict[int, float]:
        """The best window cosine to ``query`` of each of ``keys`` that has passage windows."""
        if not self.has_windows or not keys:
            return {}
        wanted = np.asarray(keys, dtype=np.int64)
        if self._read_windows is not None:
            owners, windows = self._read_windows(wanted)
            with one_blas_thread():
                chunks, best = best_per_chunk(owners, windows @ query.astype(np.float32))
            return dict(zip(chunks.tolist(), best.tolist(), strict=True))
        at = np.minimum(np.searchsorted(self._run_keys, wanted), self._run_keys.size - 1)
        held = self._run_keys[at] == wanted
        vector = query.astype(np.float32)
        scores = {}
        with one_blas_thread():
            for key, run in zip(wanted[held], self._run_order[at[held]], strict=True):
                scores[int(key)] = float((self.windows[self._runs[run] : self._run_ends[run]] @ vector).max())
        return scores

    def search(self, query: Vectors, k: int, *, approximate: bool = False) -> list[tuple[int, float]]:
        """Nearest chunk keys: exact, or through the HNSW graph of the chunks' vectors when
        ``approximate``: the graph proposes chunks, which are scored exactly with the graph's strays (the
        chunks no search of it reaches, :func:`strays`; a few in ten thousand; as many as the graph
        proposes at most, the nearest), so that every chunk can be found. With passage windows the graph
        proposes ``WINDOW_BREADTH`` times ``k`` chunks, each then scored exactly by its best vector,
        whole or window: a chunk's vector pooled from its windows (``retrieval.embed_whole = false``)
        lies near each of them, so the graph proposes the chunks its windows bring near
        (``bench/windows_search.py`` measures how many it finds)."""
        if not approximate or not len(self) or k <= 0:
            return self.exact(query, k)
        vector = query.astype(np.float32)
        graph = self._loaded()
        breadth = k if not self.has_windows else k * WINDOW_BREADTH
        proposed = np.asarray(graph.index.search(vector, min(breadth, len(self))).keys, dtype=np.int64)
        keys = np.union1d(proposed, graph.nearest_strays(vector, breadth))  # sorted: ties to the lower key
        with one_blas_thread():
            scores = self.matrix[np.searchsorted(self.keys, keys)] @ vector
        if self.has_windows:
            windows = self.window_scores(vector, keys.tolist())
            pairs = zip(keys.tolist(), scores.tolist(), strict=True)
            scores = np.array([max(whole, windows.get(key, whole)) for key, whole in pairs], dtype=np.float32)
        best = top_k(scores, k)
        return [(int(keys[i]), float(scores[i])) for i in best]

    def graph_vectors(self, keys: Keys | None = None) -> Vectors:
        """What the HNSW graph is built from, for ``keys`` (sorted keys this index holds; every chunk
        when ``None``): each chunk's vector, but for a chunk with passage windows their normalised mean,
        whatever its stored vector is (only the windows of ``keys`` are read). With
        ``retrieval.embed_whole = false`` that is its stored vector; with the whole chunk embedded (the
        ``quality`` preset) the whole vector lies farther from the windows the graph must lead to, and a
        graph of those vectors finds fewer of the exact top 10 (tested with whole vectors unrelated to
        the windows)."""
        if keys is None and not self.has_windows:
            return self.matrix
        wanted = self.keys if keys is None else keys
        vectors = self.matrix[np.searchsorted(self.keys, wanted)]  # a copy
        for owners, windows in self._window_blocks(keys):
            rows, local = np.unique(np.searchsorted(wanted, owners), return_inverse=True)
            vectors[rows] = unit_means(windows, local, rows.size)
        return vectors

    def graph(self) -> Any:
        """The HNSW graph (see :meth:`_loaded`); it does not hold the :meth:`pending` chunks."""
        return self._loaded().index

    def pending(self) -> Keys:
        """The sorted keys of the chunks the HNSW graph does not hold because they were added after this
        process loaded or built it (:meth:`follow`): searches score them exactly."""
        return self._loaded().pending

    def follow(self, earlier: DenseIndex) -> None:
        """Search with the HNSW graph of ``earlier``, the index of an earlier generation of the same store,
        when this one only adds chunks to it (``earlier``'s keys, vectors and passage windows as they
        were, which the caller vouches for: no vector removed since; the keys are checked) and
        ``earlier`` has its graph in memory: the chunks added since are scored exactly beside the
        graph's hits (:meth:`Graph.extended`) instead of being inserted into it and every node searched
        for strays, seconds at 100k chunks, in the first search after each write. Once more than
        :data:`PENDING_LIMIT` chunks are pending, the graph is brought up to date as usual
        (:meth:`_load_or_build`)."""
        followed = earlier._followed  # read first: loading the graph sets it and clears this
        graph = earlier._graph
        base = (graph, len(earlier)) if graph is not None else followed  # never searched: what it follows
        if (
            base is not None
            and earlier.has_windows == self.has_windows
            and len(earlier) <= len(self)
            and np.array_equal(self.keys[: len(earlier)], earlier.keys)
        ):
            self._followed = base

    def succeed(self, earlier: DenseIndex) -> None:
        """Take note of ``earlier``, the index of an earlier generation of the same store that this one
        cannot follow (a vector was removed since): when ``earlier`` searched with a graph with chunks
        pending, those chunks were never in the saved graph, and their removal since must not count
        against bringing the saved graph up to date (:meth:`_updated`), or removing a document just
        added would build the graph whole."""
        followed = earlier._followed
        graph = earlier._graph if earlier._graph is not None else (followed[0] if followed else None)
        if graph is not None and (graph.pending.size or (followed is not None and earlier._graph is None)):
            self._since_graph = (graph.generation, earlier.keys)

    def _loaded(self) -> Graph:
        """The HNSW graph with its strays, loaded or built once (one thread at a time: another waits for
        it rather than build it again), or the graph of an earlier generation extended with the chunks
        added since (:meth:`follow`)."""
        loaded = self._graph
        if loaded is None:
            with self._graph_lock:
                loaded = self._graph
                if loaded is None:
                    loaded = self._graph = self._followed_graph() or self._load_or_build()
                    self._followed = None
        return loaded

    def _followed_graph(self) -> Graph | None:
        """The graph of the earlier generation this index follows, extended with the chunks added since
        (:meth:`follow`); ``None`` when it follows none, or past :data:`PENDING_LIMIT` pending chunks."""
        if self._followed is None:
            return None
        graph, held = self._followed
        added = self.keys[held:]
        if graph.pending.size + added.size > PENDING_LIMIT:
            return None
        return graph.extended(added, self.graph_vectors(added)) if added.size else graph

    def _load_or_build(self) -> Graph:
        """The saved graph when its stamp says it is this generation's (its token too) and intact (the
        bytes checked are the bytes loaded), or the saved one of an earlier generation brought up to
        date when it can be (:meth:`_updated`), else built from the vectors; with its strays: those the
        stamp records, else found (:func:`strays`). Saved with its stamp, when it was not loaded as it
        is with valid strays (a stamp of an earlier release records none), unless the store is
        read-only."""
        path, stamp = self.directory / GRAPH, self.directory / STAMP
        variant = POOLED_GRAPH if self.has_windows else ""
        saved = _read(path)
        found = {GRAPH: content_digest(saved)} if saved is not None else {}
        state = (
            stamp_state(
                stamp,
                self.generation,
                self.keys,
                path,
                variant,
                store=self.store,
                found=found,
                token=self.token,
            )
            if saved is not None
            else None
        )
        recorded = state.stamp if state is not None else None
        if saved is not None and recorded is not None:
            index, changed, fresh = self._new_graph(), recorded.counts.get(CHANGED, 0), False
            index.load(saved)
            known = np.asarray(recorded.lists[STRAYS], dtype=np.int64) if STRAYS in recorded.lists else None
        else:  # absent or stale: brought up to date or built whole
            updated = self._updated(saved, found, stamp, variant) if saved is not None else None
            if updated is None:
                index, changed, known = self._new_graph(), 0, None
                _insert(index, self.keys, self.graph_vectors())
            else:
                index, changed, known = updated
            fresh = True
        if known is None or not np.isin(known, self.keys).all():  # none recorded, or not of this graph
            known, fresh = strays(index), True
        if fresh and self.save:
            built = scratch_path(path)
            index.save(str(built))
            counts = {CHANGED: changed} | ({REMOVALS: self.removals} if self.removals is not None else {})
            publish(
                built,
                path,
                stamp,
                self.generation,
                self.keys,
                variant=variant,
                store=self.store,
                counts=counts,
                lists={STRAYS: known.tolist()},
                token=self.token,
            )
        vectors = np.vstack(index.get(known)).astype(np.float32) if known.size else _no_rows(self.matrix)
        return Graph(index, known, vectors, self.generation)

    def _new_graph(self) -> Any:
        """An empty HNSW graph for this index's vectors."""
        return usearch_index()(
            ndim=self.matrix.shape[1], metric="cos", dtype="f32", expansion_search=EXPANSION_SEARCH
        )

    def _updated(
        self, saved: bytes, found: Mapping[str, str], stamp: Path, variant: str
    ) -> tuple[Any, int, Keys | None] | None:
        """The graph saved (``saved``, whose digests are ``found``) for an earlier generation of this
        store, brought up to this one: the removed chunks' nodes removed, the added chunks' vectors added;
        with the chunks removed or added since it was last built whole, and its strays when they are known
        without a search (only nodes removed, from a graph whose strays were recorded: a removed node is
        only marked, and still leads a search on, so no other node is stranded), else ``None``. ``None``
        (build it whole) unless its stamp vouches for these bytes, names this store, an earlier
        generation whose token the store's history holds (:data:`Lineage`) and this ``variant``, the
        graph is of this dimension and holds the keys its stamp names, the changes stay within
        :data:`UPDATE_SHARE`, and every chunk it shares with this index still has the vector it was
        given.

        The token proves the store's history passed through the state the graph was built from: a
        generation number and a count do not, as a database restored from a backup numbers its writes
        again as the lost ones were, and gives their chunks the lost ones' keys. Within that history, the
        last proof comes from the store's count of removed vectors (``removals``): SQLite gives an
        added chunk a new key unless the chunks of the largest keys were removed first, and a
        re-embedding replaces vectors under their keys, but both move the count (a re-embedding by one,
        without removing a key). So when the count moved by exactly the number of the graph's keys that
        the store no longer holds, no other vector was removed or replaced; otherwise (a re-embedding,
        a replaced last document whose keys were given again, a chunk added and removed again since the
        graph's generation) the graph is built whole."""
        try:
            recorded = read_stamp(stamp)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        before = recorded.counts.get(REMOVALS)
        if (
            before is None
            or self.removals is None
            or recorded.store != self.store
            or recorded.variant != variant
            or recorded.files != found
            or recorded.generation >= self.generation
            or not recorded.token
            or self._lineage is None
            or self._lineage(recorded.generation) != recorded.token
        ):
            return None
        index = self._new_graph()
        index.load(saved)
        held = np.sort(np.asarray(index.keys, dtype=np.int64))
        if index.ndim != self.matrix.shape[1] or keys_digest(held) != recorded.keys:
            return None
        removed = np.setdiff1d(held, self.keys, assume_unique=True)
        added = np.setdiff1d(self.keys, held, assume_unique=True)
        changed = recorded.counts.get(CHANGED, 0) + removed.size + added.size
        # the vectors removed since the graph's generation: the keys it held that the store lost, and
        # those of chunks pending beside it in this process, which it never held (:meth:`succeed`)
        expected = removed.size
        if self._since_graph is not None and self._since_graph[0] == recorded.generation:
            expected = np.setdiff1d(self._since_graph[1], self.keys, assume_unique=True).size
        if self.removals - before != expected or changed > UPDATE_SHARE * len(self):
            return None
        if removed.size:
            index.remove(removed)
        if not added.size and STRAYS in recorded.lists:
            return index, changed, np.setdiff1d(np.asarray(recorded.lists[STRAYS], dtype=np.int64), removed)
        _insert(index, added, self.graph_vectors(added))
        return index, changed, None


def strays(index: Any) -> Keys:
    """The keys (sorted) of the HNSW graph ``index``'s nodes that a search for the very vector the graph
    holds for them does not return among its first :data:`STRAY_DEPTH` hits: nodes left without links
    into them (their in-links pruned away as later nodes were linked), which no search can reach, and
    copies of one vector beyond the first :data:`STRAY_DEPTH`, which tie with those it returns. 4 of
    4,760 chunk vectors of real bge-small embeddings, 12 of 100,000 synthetic ones; a search scores
    them exactly beside the graph's hits (:meth:`DenseIndex.search`).

    Every node is first searched for at :data:`STRAY_SCAN` breadth for its single best hit (100,000
    synthetic 384-d nodes: about 4.5 s on two cores, a fifth of the build); the few thousand that this
    misses are searched again at the graph's breadth. The graph's search breadth is restored before it
    is returned. It runs after every build and every update: an update can strand a node of the graph
    it was given, by pruning the links into it to make room for an added node's. The graph's vectors
    are read :data:`STRAY_BLOCK` nodes at a time (usearch hands them one array per node)."""
    keys = np.asarray(index.keys, dtype=np.int64)
    found = [_no_keys()]
    for start in range(0, keys.size, STRAY_BLOCK):
        block = keys[start : start + STRAY_BLOCK]
        vectors = np.vstack(index.get(block)).astype(np.float32)
        index.expansion_search = STRAY_SCAN
        try:
            first = np.asarray(index.search(vectors, 1).keys, dtype=np.int64).reshape(-1)
        finally:
            index.expansion_search = EXPANSION_SEARCH
        suspects = np.flatnonzero(first != block)
        if suspects.size:
            again = index.search(vectors[suspects], min(STRAY_DEPTH, keys.size)).keys
            hits = np.asarray(again, dtype=np.int64).reshape(suspects.size, -1)
            found.append(block[suspects[~(hits == block[suspects, None]).any(axis=1)]])
    return np.sort(np.concatenate(found))


def _insert(index: Any, keys: Keys, vectors: Vectors) -> None:
    """Add ``keys`` with their ``vectors`` to the HNSW graph ``index``: one thread at a time until it
    holds :data:`SERIAL_START` nodes, in parallel after."""
    serial = max(0, min(keys.size, SERIAL_START - len(index)))
    if serial:
        index.add(keys[:serial], vectors[:serial], threads=1)
    if keys.size > serial:
        index.add(keys[serial:], vectors[serial:])


def _read(path: Path) -> bytes | None:
    """The bytes of ``path``, ``None`` when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def usearch_index() -> Any:
    """usearch's ``Index`` class, with onnxruntime (when installed) loaded first.

    With usearch 2.26 and onnxruntime 1.32 on Linux, loading onnxruntime's native module after usearch's
    kills the process with a segmentation fault, while the other order works. A process that opens a
    large store's HNSW graph before its first ONNX embedding (a server, a search that embeds the query
    after loading the index) would crash, so onnxruntime goes first.
    """
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401  (see the docstring: the load order matters)
    try:
        from usearch.index import Index
    except ImportError:
        raise ConfigError("HNSW search needs usearch: pip install 'chunkwise[hnsw]'") from None
    return Index
