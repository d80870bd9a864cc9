"""Copying a knowledge base into another store (``kb copy``): SQLite to PostgreSQL for production, or back
for a laptop, without the source files and without calling any model.

Everything a knowledge base holds comes from its files through parsing, chunking, headers (an LLM's,
maybe), summaries and embedding; ingesting the files again into another store would pay for all of it
again. A copy instead reads each stored document whole
(:meth:`~chunkwise.store.protocol.Store.stored_document`: text, units, metadata, content hash, chunks
with their headers and ordinals, summary, fingerprint, each chunk's vector and its passage windows'
vectors in order) and writes it as it is with :meth:`~chunkwise.store.protocol.Store.put`, one
transaction a document, so a document is in the target whole or not at all. The target records the
source's embedder (name, dimension, version) before anything is written, and the settings the caller
names (the knowledge base's recorded configuration, replacing the target's as an ingest's does), so that
a search of the target embeds its queries as the source's were, and a later ingest of the same files
computes the fingerprints the documents carry and skips them.

A target that records another embedder is refused before anything is written: its vectors and the
source's could not be compared. A target that is the source itself (the same location, or its directory by
another path) is refused likewise: every document would be skipped, and the report would read as if a
copy had been made. A document the target already holds with the same content, fingerprint
and stored fields is ``skipped`` by ``put`` itself, so a copy that was interrupted goes on where it
stopped when run again. A document that cannot be read whole or stored (a damaged row, a string the
target cannot hold) fails alone and is named; a store that cannot be reached or written ends the copy.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chunkwise.errors import ChunkwiseError, ConfigError, CorruptStoreError, StoreError, failure_reason
from chunkwise.ingest.pipeline import unexpected
from chunkwise.ingest.report import IngestEvent, ProgressFn, Status
from chunkwise.store.protocol import Store, embedder_label, recorded_embedder, same_embedder

#: The ``meta`` keys of the recorded embedder: name, dimension, version.
_EMBEDDER_KEYS = ("embedder", "dim", "embedder_version")


@dataclass(slots=True)
class CopyReport:
    """What a copy did: the documents copied (added to the target or replacing another version there),
    skipped (the target held them already) and failed (with the reason), the chunks and passage windows
    copied, the time it took, and the target's counts afterwards (documents, chunks, vectors)."""

    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    windows: int = 0
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the numbers of documents, each failed one with its reason, and the target's
        counts."""
        return {
            "copied": len(self.copied),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "failures": [{"doc_id": doc_id, "error": reason} for doc_id, reason in self.failed],
            "chunks": self.chunks,
            "windows": self.windows,
            "seconds": round(self.seconds, 3),
            "counts": self.counts,
        }


def copy_store(
    source: Store, target: Store, settings: Iterable[str] = (), on_progress: ProgressFn | None = None
) -> CopyReport:
    """Copy every document of ``source`` into ``target`` as it is stored, with the recorded embedder and
    the ``meta`` values of ``settings`` (see the module docstring); no model is called. ``on_progress``
    gets an ingest's events, one a document (``added``, ``replaced``, ``skipped`` or ``failed``).

    Raises:
        ConfigError: ``target`` is ``source`` (the same location, or the same directory by another
            path), or records another embedder than ``source`` (both named); nothing was written.
        StoreError: ``source`` holds documents but records no embedder, or a store cannot be reached or
            written (the documents copied before stay copied).
    """
    if same_location(source.location, target.location):
        raise ConfigError(
            f"{target.location}: is the knowledge base being copied; nothing was copied: copy into another "
            "directory or schema"
        )
    began = time.perf_counter()
    report = CopyReport()
    documents = source.documents()
    embedder = _embedder(source, target, bool(documents))
    if embedder is not None:
        target.check_embedder(*embedder)  # records it in a target that has none
    for key in settings:
        value = source.meta(key)
        if value is not None:
            target.set_meta(key, value)
    try:
        for done, info in enumerate(documents, 1):
            status, chunks = _copy_one(source, target, info.doc_id, embedder, report)
            if on_progress is not None:
                on_progress(IngestEvent(info.doc_id, status, done, len(documents), chunks))
    finally:
        report.seconds = time.perf_counter() - began
    report.counts = target.counts()
    return report


def same_location(first: str, second: str) -> bool:
    """Whether two store locations name one store: the same text, or one directory reached by two paths
    (a relative path, a symbolic link). URLs are compared as written, without their passwords."""
    if first == second:
        return True
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # a URL, or a path that does not exist or holds a NUL
        return False


def _embedder(source: Store, target: Store, filled: bool) -> tuple[str, int, str] | None:
    """The embedder ``source`` records (name, dimension, version), checked against the one ``target``
    records; ``None`` for a source that records none and holds no document (``filled`` says whether it
    holds any)."""
    recorded = _recorded(source)
    if recorded is None:
        if filled:
            raise StoreError(source.location, "holds documents but records no embedder; nothing was copied")
        return None
    name, dim, version = recorded
    if not dim.isdigit():
        raise StoreError(source.location, f"records embedder {name!r} without its dimension ({dim!r})")
    embedder = (name, int(dim), version)
    held = _recorded(target)
    if held is not None and not same_embedder(held, embedder):
        raise ConfigError(
            f"{target.location}: holds vectors of embedder {embedder_label(*held)}, "
            f"{source.location} of {embedder_label(*recorded)}; their vectors cannot be compared and "
            "nothing was copied: copy into a new directory or schema, or move one of them to the other's "
            "embedder first with `chunkwise kb reembed`"
        )
    return embedder


def _recorded(store: Store) -> tuple[str, str, str] | None:
    """The embedder ``store`` records (name, dimension, version as stored), ``None`` when none."""
    return recorded_embedder((key, value) for key in _EMBEDDER_KEYS if (value := store.meta(key)) is not None)


def _copy_one(
    source: Store,
    target: Store,
    doc_id: str,
    embedder: tuple[str, int, str] | None,
    report: CopyReport,
) -> tuple[Status, int]:
    """Copy one document in its own transaction, recorded in ``report``; what became of it and the
    chunks copied. A document that cannot be read whole or stored fails alone; a store that cannot be
    reached or written (a :class:`StoreError` other than damage) ends the copy."""
    try:
        stored = source.stored_document(doc_id)
        status = target.put(
            stored.doc,
            stored.chunks,
            stored.headers,
            stored.vectors,
            fingerprint=stored.fingerprint,
            summary=stored.summary,
            windows=stored.windows,
            embedder=embedder,
        )
    except KeyError:
        reason = f"no longer stored in {source.location} (deleted while it was copied)"
    except StoreError as exc:
        if not isinstance(exc, CorruptStoreError):
            raise
        reason = failure_reason(exc)
    except (ChunkwiseError, ValueError) as exc:
        reason = failure_reason(exc)
    except Exception as exc:  # a driver's error about this document's rows must not end the batch
        reason = unexpected(exc)
    else:
        if status == "skipped":
            report.skipped.append(doc_id)
            return status, 0
        report.copied.append(doc_id)
        report.chunks += len(stored.chunks)
        report.windows += len(stored.windows[0]) if stored.windows is not None else 0
        return status, len(stored.chunks)
    report.failed.append((doc_id, reason))
    return "failed", 0
