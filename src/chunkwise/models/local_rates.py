"""How fast a local LLM runs on this machine, to turn a token estimate into expected minutes.

A local model (``llm = "local"``, the bundled SmolLM2-135M on the CPU) costs nothing but time, and its
time is dominated by two rates: reading the prompt (prefill, hundreds of tokens a second) and writing
the reply (decode, about ten tokens a second on two CPU cores). :data:`PREFILL_TOKENS_PER_S` and
:data:`DECODE_TOKENS_PER_S` are those rates as measured on a two-core machine with the bundled model.

Machines differ, so every command-line run that calls a local LLM adds its calls' measured seconds and
the seconds the default rates predicted for the same tokens to a small file in the cache directory
(:func:`record_local_calls`); :func:`load_local_rates` turns the sums into a calibration factor that
scales every later prediction. Cache hits are not measurements and are left out.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from chunkwise.models.accounting import CallRecord
from chunkwise.models.config import cache_root

#: Prompt tokens read per second by the bundled SmolLM2-135M on two CPU cores (measured).
PREFILL_TOKENS_PER_S = 300.0
#: Reply tokens written per second by the same model on the same machine (measured).
DECODE_TOKENS_PER_S = 10.0
#: The file under the cache directory holding the measured and predicted seconds.
RATES_FILE = "local-llm-rates.json"


@dataclass(frozen=True, slots=True)
class LocalRates:
    """The default rates and the calibration measured so far (``calls`` measured calls behind it)."""

    calibration: float = 1.0
    calls: int = 0

    def seconds(self, input_tokens: int, output_tokens: int) -> float:
        """Expected seconds for calls reading ``input_tokens`` and writing ``output_tokens`` in total."""
        return self.calibration * _predicted(input_tokens, output_tokens)


def _predicted(input_tokens: int, output_tokens: int) -> float:
    """Seconds at the default rates."""
    return input_tokens / PREFILL_TOKENS_PER_S + output_tokens / DECODE_TOKENS_PER_S


def _rates_path(path: Path | None) -> Path:
    return path if path is not None else cache_root() / RATES_FILE


def _read_sums(path: Path) -> tuple[float, float, int]:
    """Measured seconds, predicted seconds and calls recorded at ``path`` (zeros when absent or unreadable:
    the file is a hint, never a reason to fail)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return float(data["measured_s"]), float(data["predicted_s"]), int(data["calls"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0, 0.0, 0


def load_local_rates(path: Path | None = None) -> LocalRates:
    """The rates calibrated by the calls recorded at ``path`` (default: the cache directory's file)."""
    measured, predicted, calls = _read_sums(_rates_path(path))
    if calls == 0 or measured <= 0 or predicted <= 0:
        return LocalRates()
    return LocalRates(calibration=measured / predicted, calls=calls)


def record_local_calls(records: Iterable[CallRecord], path: Path | None = None) -> int:
    """Add the uncached local LLM calls among ``records`` to the file at ``path``; returns how many.

    The file is replaced atomically, so a reader never sees half of it; two runs ending at once may
    lose one run's figures, which only delays the calibration.
    """
    calls = [r for r in records if r.role == "llm" and r.backend == "local" and not r.cached]
    if not calls:
        return 0
    target = _rates_path(path)
    measured, predicted, count = _read_sums(target)
    measured += sum(r.latency_s for r in calls)
    predicted += sum(_predicted(r.input_tokens, r.output_tokens) for r in calls)
    body = json.dumps({"measured_s": measured, "predicted_s": predicted, "calls": count + len(calls)})
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, encoding="utf-8") as handle:
            handle.write(body)
        os.replace(handle.name, target)
    except OSError:
        return 0  # a read-only cache directory: the defaults stay in use
    return len(calls)
