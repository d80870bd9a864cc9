"""Re-embedding a knowledge base in place: every stored chunk and passage window embedded again with
another embedder (or another release of the same one), without the source files and without chunking
again.

A store's documents, chunks and headers do not depend on the embedder; only the vectors do. So moving a
knowledge base to another embedder needs neither the files (which may be gone) nor the chunkers (an LLM
chunker's calls cost money): each stored document's chunks and headers go through the ingest pipeline's
own :meth:`~.pipeline.IngestPipeline.assemble` (passage windows, pooled chunks), so the embedder reads
exactly what an ingest with the new configuration would have it read, in the same calls
(:meth:`~.pipeline.IngestPipeline.embed_prepared`: the documents in the order of their ids, as an
ingest of them in that order would batch them, since a batch's texts can change a quantized model's
vectors in the last digits), and the store swaps the vectors and its embedder record in one
transaction (:meth:`~chunkwise.store.protocol.Store.reembedding`): an embedder error, a document whose
text the embedder refuses, a spent budget or Ctrl-C leaves the store as it was, searchable with the old
embedder.

A document stored with the fingerprint this configuration gives the old embedder gets the one it gives
the new embedder, so an ingest of its unchanged file afterwards skips it. A document stored under
another configuration (another fingerprint) is re-embedded as this configuration embeds (its passage
windows too), which is not what that configuration stored: its fingerprint is marked stale
(:data:`STALE`), so that any later ingest of its file chunks and embeds it again, whatever the
configuration.

The embedder's calls are recorded in the pipeline's model context (its ledger and budget) like an
ingest's, and the report carries their accounting (calls, tokens, cost where the embedder is priced).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from chunkwise.errors import ModelError
from chunkwise.ingest.pipeline import IngestPipeline, Prepared
from chunkwise.ingest.report import ProgressFn, Status
from chunkwise.models.protocols import Embedder, Vectors, embedder_version
from chunkwise.store.protocol import Reembedded, Reembedding

#: Prefixed to the fingerprint of a document re-embedded under another configuration than it was stored
#: with: no configuration's fingerprint starts with it, so no ingest skips the document.
STALE = "stale:"


@dataclass(slots=True)
class ReembedReport:
    """What a re-embedding did: the embedder before (``None`` for a store that recorded none) and now,
    the documents, chunks and passage windows embedded, the time it took (embedding alone too), and the
    accounting of its model calls (:meth:`~chunkwise.models.accounting.Ledger.to_dict`: calls, cache
    hits, tokens, cost and seconds, in total, per stage and per role), as an ingest reports its own."""

    previous: str | None
    embedder: str
    documents: int = 0
    chunks: int = 0
    windows: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    accounting: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "previous": self.previous,
            "embedder": self.embedder,
            "documents": self.documents,
            "chunks": self.chunks,
            "windows": self.windows,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "accounting": self.accounting,
        }


def reembed(
    pipeline: IngestPipeline,
    embedder: Embedder,
    on_progress: ProgressFn | None = None,
    meta: Mapping[str, str] | None = None,
) -> ReembedReport:
    """Embed every document stored in ``pipeline.store`` again with ``embedder``, as ``pipeline``'s
    configuration has an ingest embed it, and record ``embedder`` there, with the settings ``meta`` in
    the same transaction (see the module docstring). ``on_progress`` gets an ingest's events, each
    document ``replaced``. The embedder's calls are recorded in ``pipeline.models`` (adopted there when
    it records elsewhere), so they count against its budget, and the report carries their accounting.

    Raises:
        ModelError: the embedder failed, or refused a document's text (named);
            :class:`~chunkwise.errors.BudgetExceededError`: the budget would be passed. The store is left
            as it was.
    """
    store, models = pipeline.store, pipeline.models
    embedder = models.adopt("embedder", embedder)
    mark = models.mark()
    new = pipeline.fingerprint(embedder.name)
    with store.reembedding((embedder.name, embedder.dim, embedder_version(embedder)), meta) as session:
        # what the store held when no writer could change it any more
        report = ReembedReport(session.previous, embedder.name)
        old = pipeline.fingerprint(session.previous) if session.previous is not None else None
        fingerprints: dict[str, str] = {}  # of the documents read and not yet written

        def sink(item: Prepared, vectors: Vectors) -> Status:
            chunk_vectors, windows = item.split(vectors)
            was = fingerprints.pop(item.doc.id)
            fingerprint = new if was == old else was if was.startswith(STALE) else STALE + was
            session.write(item.doc.id, Reembedded(chunk_vectors, windows, fingerprint))
            report.windows += len(item.windows)
            return "replaced"

        def refused(source: str, reason: str) -> None:  # stops the run before more is embedded
            raise ModelError(embedder.name, f"{source}: {reason}; nothing was re-embedded")

        embedded = pipeline.embed_prepared(
            _assembled(pipeline, session, fingerprints),
            session.total,
            embedder,
            sink,
            on_progress,
            on_failure=refused,
        )
    report.documents, report.chunks = len(embedded.replaced), embedded.chunks
    report.seconds, report.embed_seconds = embedded.seconds, embedded.embed_seconds
    report.accounting = models.accounting(mark)
    return report


def _assembled(
    pipeline: IngestPipeline, session: Reembedding, fingerprints: dict[str, str]
) -> Iterator[Prepared]:
    """Each stored document of ``session`` ready to embed, its stored fingerprint kept in
    ``fingerprints`` until it is written."""
    for stored in session.documents():
        fingerprints[stored.doc.id] = stored.fingerprint
        yield pipeline.assemble(stored.doc, stored.chunks, stored.headers, "")
