"""Paired bootstrap intervals: determinism and sanity."""

from __future__ import annotations

import numpy as np
import pytest

from chunkwise.errors import ConfigError
from chunkwise.evaluation.bootstrap import paired_bootstrap

A = np.random.default_rng(42).random(300).tolist()


def shifted(shift: float, noise: float, seed: int = 1) -> list[float]:
    """``A`` plus ``shift`` plus Gaussian noise of scale ``noise`` (seeded)."""
    return (np.asarray(A) + shift + np.random.default_rng(seed).normal(0.0, noise, len(A))).tolist()


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    b = shifted(0.0, 0.2)
    first = paired_bootstrap(A, b, seed=3)
    assert paired_bootstrap(A, b, seed=3) == first
    assert paired_bootstrap(A, b, seed=4) != first
    assert first.resamples == 1000
    assert first.confidence == 0.95


def test_identical_configurations_give_a_zero_width_interval_at_zero() -> None:
    interval = paired_bootstrap(A, A)
    assert (interval.difference, interval.low, interval.high) == (0.0, 0.0, 0.0)
    assert not interval.excludes_zero


def test_a_constant_shift_is_recovered_exactly() -> None:
    # every query gains exactly 0.25: each resample's mean difference is 0.25.
    interval = paired_bootstrap(A, [x + 0.25 for x in A])
    assert interval.low == pytest.approx(0.25)
    assert interval.high == pytest.approx(0.25)


def test_a_clear_improvement_excludes_zero_and_noise_does_not() -> None:
    interval = paired_bootstrap(A, shifted(0.1, 0.05))
    assert interval.excludes_zero
    assert interval.low < interval.difference < interval.high
    noise = shifted(0.0, 0.05)
    centred = (np.asarray(noise) - (np.mean(noise) - np.mean(A))).tolist()
    assert not paired_bootstrap(A, centred).excludes_zero


def test_wider_confidence_gives_a_wider_interval() -> None:
    b = shifted(0.0, 0.2)
    narrow = paired_bootstrap(A, b, confidence=0.8)
    wide = paired_bootstrap(A, b, confidence=0.99)
    assert wide.low < narrow.low
    assert wide.high > narrow.high


def test_bad_inputs_raise() -> None:
    with pytest.raises(ConfigError, match="queries must match"):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(ConfigError):
        paired_bootstrap([], [])
    # one query: every resample is that query, so the interval would be [d, d] and look certain.
    with pytest.raises(ConfigError, match="at least two"):
        paired_bootstrap([0.0], [1.0])
    with pytest.raises(ConfigError):
        paired_bootstrap([1.0], [1.0], confidence=1.0)
