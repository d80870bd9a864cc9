"""LlamaChunk's boundary curve: decay normalisation and peak picking, as pure numpy functions.

LlamaChunk teacher-forces a document after a "insert the marker between sections" prompt and reads the
log-probability of the marker at every token position. Because the model never sees its own markers,
its willingness to emit one decays as the text grows (the seed's decaying curve), so a fixed threshold
would find boundaries early in a window and none late. The fix, as in the seed, is to divide out the
decay; here the method is explicit:

1. clip the log-probabilities to ``[LOGPROB_FLOOR, 0]`` (an impossible marker gives ``-inf``; a server
   may answer NaN or a positive value, which no probability has: NaN counts as the floor), so one
   nonsense value can neither turn a window's scores into NaN nor put a non-finite number in the curve;
2. fit a baseline ``a + b·log(x)`` by least squares, ``x`` being the 1-based token position in the
   window (a power-law decay of the probability is a straight line in log-log space);
3. the boundary score is the residual, ``logprob − baseline``, divided by the residuals' standard
   deviation in the window: how much likelier a marker is *here* than at a typical position this far
   into the window, in standard deviations, so one threshold fits models whose log-probabilities
   spread differently (SmolLM2-135M's residuals have a standard deviation of about 4 nats).

Boundaries are then the local maxima of the score above a threshold, chosen greedily under a minimum
and a maximum chunk size measured in tokens (:func:`pick_boundaries`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Log-probabilities below this are clipped before fitting (``log(1e-13)``, well under any real peak).
LOGPROB_FLOOR = -30.0


@dataclass(frozen=True, slots=True)
class DecayFit:
    """The fitted baseline ``intercept + slope·log(position)``, the residuals' ``scale`` (standard
    deviation, 1 when they are constant) and the scores ``(logprob − baseline) / scale``."""

    intercept: float
    slope: float
    scale: float
    baseline: FloatArray
    scores: FloatArray


def clip_logprob(value: float) -> float:
    """``value`` as a log-probability the curve holds: within ``[LOGPROB_FLOOR, 0]``, NaN as the floor."""
    return LOGPROB_FLOOR if math.isnan(value) else min(0.0, max(LOGPROB_FLOOR, value))


def normalise_decay(logprobs: FloatArray) -> DecayFit:
    """Fit the positional decay of ``logprobs`` (one per token, in window order) and return residuals.

    The values are first clipped as :func:`clip_logprob` does. With fewer than three positions no slope
    can be trusted, so the baseline is the mean.
    """
    y = np.asarray(logprobs, dtype=np.float64)
    y = np.clip(np.where(np.isnan(y), LOGPROB_FLOOR, y), LOGPROB_FLOOR, 0.0)
    if y.size == 0:
        empty = np.zeros(0, dtype=np.float64)
        return DecayFit(0.0, 0.0, 1.0, empty, empty)
    x = np.log(np.arange(1, y.size + 1, dtype=np.float64))
    if y.size < 3:
        intercept, slope = float(y.mean()), 0.0
    else:
        design = np.column_stack([np.ones_like(x), x])
        (intercept, slope), *_ = np.linalg.lstsq(design, y, rcond=None)
    baseline = intercept + slope * x
    residual = y - baseline
    spread = float(residual.std())
    scale = spread if spread > 1e-9 else 1.0
    return DecayFit(float(intercept), float(slope), scale, baseline, residual / scale)


def local_peaks(scores: FloatArray, threshold: float) -> npt.NDArray[np.bool_]:
    """Mask of positions that are local maxima (``>=`` left, ``>`` right) and above ``threshold``."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return np.zeros(0, dtype=bool)
    left = np.concatenate([[-np.inf], s[:-1]])
    right = np.concatenate([s[1:], [-np.inf]])
    return (s >= left) & (s > right) & (s > threshold)


def pick_boundaries(
    sizes: IntArray,
    scores: FloatArray,
    total: int,
    *,
    threshold: float,
    min_size: int,
    max_size: int,
) -> list[int]:
    """Indices of the candidate positions chosen as boundaries.

    ``sizes[i]`` is the size (tokens) of the text before candidate ``i``, non-decreasing; ``total`` the
    size of the whole text. Walking left to right, a peak above ``threshold`` at least ``min_size``
    after the last boundary becomes a boundary. When the next peak would leave a chunk over
    ``max_size``, the best-scoring candidate that keeps the chunk within bounds is forced instead
    (preferring ones at least ``min_size`` in); where no candidate fits, the first one after the
    overshoot is cut, and the caller's hard-limit enforcement splits what remains.
    """
    if max_size < 1 or min_size < 0 or min_size > max_size:
        raise ValueError(f"sizes must satisfy 0 <= min_size <= max_size, got {min_size}, {max_size}")
    sizes = np.asarray(sizes, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    peaks = local_peaks(scores, threshold)
    chosen: list[int] = []
    last = 0
    i = 0
    while i <= sizes.size:
        # Position sizes.size stands for the end of the text: never a boundary, but it must fit too.
        size = (int(sizes[i]) if i < sizes.size else total) - last
        if size > max_size:
            forced = _forced(
                sizes,
                scores,
                last,
                min_size=min_size,
                max_size=max_size,
                start=chosen[-1] + 1 if chosen else 0,
            )
            if forced is None and i < sizes.size:
                forced = i  # no candidate fits: cut at the first one, the shortest overshoot
            if forced is not None:
                chosen.append(forced)
                last = int(sizes[forced])
                i = forced + 1
                continue
        if i < sizes.size and min_size <= size and size > 0 and peaks[i]:
            chosen.append(i)
            last = int(sizes[i])
        i += 1
    return chosen


def _forced(
    sizes: IntArray, scores: FloatArray, last: int, *, min_size: int, max_size: int, start: int
) -> int | None:
    """Best-scoring candidate whose chunk size is in ``(0, max_size]``, preferring ``>= min_size``."""
    offsets = sizes[start:] - last
    for low in (max(min_size, 1), 1):
        mask = (offsets >= low) & (offsets <= max_size)
        if mask.any():
            candidates = np.flatnonzero(mask)
            # Ties go to the latest candidate: the fewest, largest chunks.
            latest_first = candidates[::-1]
            return start + int(latest_first[np.argmax(scores[start:][latest_first])])
    return None


@dataclass(frozen=True, slots=True)
class BoundaryCurve:
    """The boundary score at every scored character offset of a document, before and after normalisation.

    ``offsets[i]`` is a character offset where a split could fall (a token start), ``logprobs[i]`` the
    marker's log-probability there, ``baseline[i]`` the fitted decay and ``scores[i]`` the residual;
    ``chosen`` are the offsets picked as boundaries.
    """

    offsets: tuple[int, ...]
    logprobs: tuple[float, ...]
    baseline: tuple[float, ...]
    scores: tuple[float, ...]
    chosen: tuple[int, ...]
    marker: str
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (one list per column)."""
        return {
            "marker": self.marker,
            "threshold": self.threshold,
            "chosen": list(self.chosen),
            "offsets": list(self.offsets),
            "logprobs": [round(v, 4) for v in self.logprobs],
            "baseline": [round(v, 4) for v in self.baseline],
            "scores": [round(v, 4) for v in self.scores],
        }

    def to_csv(self) -> str:
        """One row per offset: ``offset,logprob,baseline,score,chosen``."""
        chosen = set(self.chosen)
        rows = ["offset,logprob,baseline,score,chosen"]
        rows += [
            f"{o},{lp:.4f},{b:.4f},{s:.4f},{int(o in chosen)}"
            for o, lp, b, s in zip(self.offsets, self.logprobs, self.baseline, self.scores, strict=True)
        ]
        return "\n".join(rows) + "\n"

    def write(self, path: str | Path) -> None:
        """Write the curve to ``path``: JSON for a ``.json`` name, CSV otherwise."""
        target = Path(path)
        body = json.dumps(self.to_dict()) if target.suffix.lower() == ".json" else self.to_csv()
        target.write_text(body, encoding="utf-8")
