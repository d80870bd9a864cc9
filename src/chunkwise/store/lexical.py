"""BM25 for large stores: a bm25s index over the chunks of one store generation, kept beside the database.

SQLite FTS5 (in :mod:`.sqlite`) is the lexical index of record: it is written in the same transaction as
the chunks, so it is always consistent. But an FTS5 query scores every chunk that holds any query term,
which grows with the store: ``bench/pipeline_latency.py`` measured it well above bm25s (a precomputed
sparse score matrix) at 10k chunks and two orders of magnitude above at 100k. So at or above
``bm25s_threshold`` chunks, searches go to a bm25s index built from the same header + text rows, saved
next to the database with a stamp of the generation it was built for and of that generation's random token
(another process reuses it; see :mod:`.sidecar`) and rebuilt after a write. Both rank the same analysed
terms (the FTS5 rows hold :func:`chunkwise.terms.index_terms`, split here on spaces; queries are
:func:`chunkwise.terms.search_terms`) by Okapi BM25 with the same ``K1`` and ``B`` (bm25s's ``robertson``
variant); they differ only where FTS5 floors the IDF of a term found in more than half of the chunks at
1e-6 and bm25s at 0, and in bm25s's float32 scores.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.store.sidecar import Keys, publish, scratch_path, stamp_state
from chunkwise.terms import K1, B, search_terms

#: The saved index (a folder) and its stamp, beside the database.
FOLDER, STAMP = "bm25s", "bm25s.json"


class LexicalIndex:
    """A bm25s index of one generation: row ``i`` of the index is chunk ``keys[i]``."""

    def __init__(self, keys: Keys, retriever: Any, generation: int) -> None:
        self.keys = keys
        self.retriever = retriever
        self.generation = generation

    @classmethod
    def saved(
        cls, directory: Path, generation: int, keys: Keys, *, store: str = "", token: str = ""
    ) -> LexicalIndex | None:
        """The index saved in ``directory`` when its stamp says it covers ``keys`` of ``generation``
        (whose random token is ``token``, "" for none: a database restored from a backup numbers its next
        generations and chunk keys as the lost ones were, with other tokens) of database ``store``
        intact, else ``None``: the caller then reads the rows and builds one (:meth:`build`). A saved index
        that another process replaces while this one loads it is not trusted: what was loaded must
        cover ``keys``."""
        import bm25s

        folder, stamp = directory / FOLDER, directory / STAMP
        if not stamp_state(stamp, generation, keys, folder, store=store, token=token).usable:
            return None
        try:
            loaded = np.load(folder / "keys.npy")
            retriever = bm25s.BM25.load(str(folder), show_progress=False)
        except (OSError, ValueError):
            return None
        return cls(loaded, retriever, generation) if np.array_equal(loaded, keys) else None

    @classmethod
    def build(
        cls,
        directory: Path,
        generation: int,
        rows: Iterable[tuple[int, str]],
        *,
        save: bool = True,
        store: str = "",
        token: str = "",
    ) -> LexicalIndex:
        """The index of ``rows`` (``(chunk key, analysed terms joined by spaces)`` pairs) and, with
        ``save``, saved in ``directory`` for other processes (a read-only store keeps it in memory),
        stamped as covering their keys in ``generation`` (token ``token``) of database ``store``. The
        rows must be those of that generation, read in the same snapshot as it: the stamp tells every
        process which state of the store the saved rows are."""
        import bm25s

        pairs = list(rows)
        built = np.array([key for key, _ in pairs], dtype=np.int64)
        retriever = bm25s.BM25(k1=K1, b=B, method="robertson")
        retriever.index([text.split() for _, text in pairs], show_progress=False)
        if save:
            folder = directory / FOLDER
            tmp = scratch_path(folder)
            shutil.rmtree(tmp, ignore_errors=True)
            retriever.save(str(tmp), show_progress=False)
            np.save(tmp / "keys.npy", built)
            publish(tmp, folder, directory / STAMP, generation, built, store=store, token=token)
        return cls(built, retriever, generation)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys with a positive BM25 score, best first."""
        terms = search_terms(query)
        if not terms or not self.keys.size:
            return []
        found = self.retriever.retrieve([terms], k=min(k, int(self.keys.size)), show_progress=False)
        rows, scores = found.documents[0], found.scores[0]
        return [(int(self.keys[r]), float(s)) for r, s in zip(rows, scores, strict=True) if s > 0]
