"""What flows through the query pipeline: the :class:`Query`, the :class:`Candidate` chunks, and the
:class:`Stage` protocol every step implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from chunkwise.models.protocols import Vectors
from chunkwise.query.trace import Trace
from chunkwise.store.protocol import StoredChunk


@dataclass(slots=True)
class Query:
    """The question in flight: ``text`` is what retrieval searches for (``original`` rewritten, when a
    rewrite stage ran); ``vector`` its embedding once a dense stage computed it; ``wanted`` the hits
    the caller asked for (0 when it takes every candidate), which retrieval fetches at least."""

    original: str
    text: str = ""
    vector: Vectors | None = None
    wanted: int = 0

    def __post_init__(self) -> None:
        self.text = self.text or self.original


@dataclass(slots=True)
class Candidate:
    """A retrieved chunk and every score the stages gave it.

    ``score`` is the score of the latest scoring stage (what ranks the list); ``scores`` keeps every
    stage's score by stage name, so a trace can explain the final order.
    """

    chunk: StoredChunk
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> int:
        """The store's row key."""
        return self.chunk.key

    @property
    def chunk_id(self) -> str:
        """The deterministic chunk id."""
        return self.chunk.chunk_id

    @property
    def doc_id(self) -> str:
        """The chunk's document."""
        return self.chunk.doc_id

    @property
    def start(self) -> int:
        """Start offset in the document text."""
        return self.chunk.start

    @property
    def end(self) -> int:
        """End offset in the document text (exclusive)."""
        return self.chunk.end

    @property
    def text(self) -> str:
        """``document.text[start:end]``."""
        return self.chunk.text

    @property
    def header(self) -> str:
        """The contextual header (empty when headers are off)."""
        return self.chunk.header

    @property
    def ordinal(self) -> int:
        """The chunk's position in its document."""
        return self.chunk.ordinal

    @property
    def vector(self) -> Vectors | None:
        """The stored embedding, when loaded."""
        return self.chunk.vector

    @property
    def contextual_text(self) -> str:
        """Header and text as the ranking models see them (the header is never part of ``text``)."""
        return self.chunk.contextual_text


def stack_vectors(candidates: list[Candidate], dim: int) -> Vectors:
    """The candidates' vectors as one ``(n, dim)`` matrix (zero rows where a vector is missing)."""
    matrix = np.zeros((len(candidates), dim), dtype=np.float32)
    for i, cand in enumerate(candidates):
        if cand.vector is not None:
            matrix[i] = cand.vector
    return matrix


class Stage(Protocol):
    """One step of the query pipeline: the candidates in flight in, the kept ones out (in rank order),
    its report in ``trace``. A stage may change ``query.text`` (a rewrite) or ignore the incoming
    candidates (first-stage retrieval)."""

    name: str

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Run the stage."""
        ...
