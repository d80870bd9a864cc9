"""What an ingest reports: progress events while it runs, and the final account of each document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

#: What happened to one input: stored new, stored over an older version, left as it was, or refused.
Status = Literal["added", "replaced", "skipped", "failed"]
#: What an event reports: an input's outcome, or ``embedding`` while a long document's chunks are embedded.
Phase = Status | Literal["embedding"]


@dataclass(frozen=True, slots=True)
class IngestEvent:
    """Progress of an ingest: the item just handled, what happened to it, and how far the batch is
    (``done`` of ``total`` inputs finished). An outcome carries the ``chunks`` stored; an ``embedding``
    event, sent after each embedding call that ends inside a document, carries the document's ``chunks``
    and how many of them are ``embedded`` so far."""

    source: str
    status: Phase
    done: int
    total: int
    chunks: int = 0
    embedded: int = 0


ProgressFn = Callable[[IngestEvent], None]


@dataclass(slots=True)
class IngestReport:
    """What an ingest did: documents added, replaced, skipped, failed (with reasons) and its timing.

    Each document is reported as what its own transaction committed: when another writer stored the same
    content first, it is ``skipped``, not ``added`` twice.
    """

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def record(self, doc_id: str, status: Status, chunks: int = 0) -> None:
        """Count one stored or skipped document."""
        {"added": self.added, "replaced": self.replaced, "skipped": self.skipped}[status].append(doc_id)
        self.chunks += chunks

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "added": self.added,
            "replaced": self.replaced,
            "skipped": self.skipped,
            "failed": [{"source": s, "error": e} for s, e in self.failed],
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
        }
