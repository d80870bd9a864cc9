"""The :class:`Candidate`: one chunk in flight through the query pipeline, with every score it received."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from chunkwise.models.protocols import Vectors
from chunkwise.retrieval.trace import Trace


@dataclass(slots=True)
class Candidate:
    """A retrieved chunk: exact provenance (``doc_id``, ``start``, ``end``) plus the scores of each stage.

    ``score`` is the score the latest scoring stage gave (what ranks the list); ``scores`` keeps every
    stage's score by stage name, so a trace can explain the final order. ``header`` is the contextual
    chunk header (empty when headers are off); ``ordinal`` the chunk's position in its document.
    """

    key: int
    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str
    header: str = ""
    ordinal: int = 0
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    vector: Vectors | None = None

    @property
    def contextual_text(self) -> str:
        """Header and text as the ranking models see them (the header is never part of ``text``)."""
        return contextual_text(self.header, self.text)


def contextual_text(header: str, text: str) -> str:
    """What embedders, BM25 and rerankers read for a chunk: its header, a blank line, its text."""
    return f"{header}\n\n{text}" if header else text


def stack_vectors(candidates: list[Candidate], dim: int) -> Vectors:
    """The candidates' vectors as one ``(n, dim)`` matrix (zero rows where a vector is missing)."""
    matrix = np.zeros((len(candidates), dim), dtype=np.float32)
    for i, cand in enumerate(candidates):
        if cand.vector is not None:
            matrix[i] = cand.vector
    return matrix


class Stage(Protocol):
    """A query stage: candidates in, the kept candidates out (in rank order), a report in ``trace``."""

    name: str

    def __call__(self, query: str, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Run the stage on ``candidates`` for ``query``."""
        ...
