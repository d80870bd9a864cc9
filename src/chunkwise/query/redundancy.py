"""Redundancy removal (ChunkRAG, Algorithm 1 lines 5-10): walk the ranked candidates and drop one whose
cosine similarity to any candidate already kept exceeds the threshold (0.9 in the paper)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from chunkwise.blas import one_blas_thread
from chunkwise.models.protocols import Vectors
from chunkwise.query.candidate import Candidate, Query, stack_vectors
from chunkwise.query.trace import Trace


def non_redundant(vectors: Vectors, threshold: float = 0.9) -> npt.NDArray[np.intp]:
    """Indices (in order) of the rows kept: row i is kept iff its cosine to every kept row is <= threshold.

    Rows are L2-normalised here, so any embedding works. The similarity matrix is computed once; the walk
    is then one masked row maximum per candidate.
    """
    n = vectors.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    with one_blas_thread():
        sims = unit @ unit.T
    kept = np.zeros(n, dtype=bool)
    for i in range(n):
        if not kept.any() or float(sims[i, kept].max()) <= threshold:
            kept[i] = True
    return np.flatnonzero(kept)


class Redundancy:
    """Stage: drop near-duplicates of better-ranked candidates (cosine of their stored vectors)."""

    name = "redundancy"

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Keep the candidates that are not near-duplicates of an earlier one."""
        with trace.stage(self.name, len(candidates)) as report:
            dim = next((c.vector.shape[0] for c in candidates if c.vector is not None), 0)
            keep = (
                non_redundant(stack_vectors(candidates, dim), self.threshold)
                if dim
                else range(len(candidates))
            )
            kept = [candidates[i] for i in keep]
            report.outputs = len(kept)
            kept_ids = {id(c) for c in kept}
            report.notes = {
                "threshold": self.threshold,
                "dropped": [c.chunk_id for c in candidates if id(c) not in kept_ids],
            }
            return kept
