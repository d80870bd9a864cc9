"""Overlap settings: a fraction of max_size below 1, a whole count of units from 1 on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.errors import ConfigError


@pytest.mark.parametrize("name", ["fixed", "recursive", "sentence", "structure", "semantic"])
@given(whole=st.integers(1, 98), part=st.floats(0.01, 0.99))
def test_a_count_of_units_with_a_fraction_is_a_config_error(name: str, whole: int, part: float) -> None:
    # 2.5 was read as 2: a setting silently changed, not refused.
    with pytest.raises(ConfigError, match=rf"{name}: overlap of 1 or more counts units"):
        get_chunker(name, max_size=100, overlap=whole + part)


@pytest.mark.parametrize(("overlap", "units"), [(0.25, 25), (1, 1), (1.0, 1), (30.0, 30), ("30", 30), (0, 0)])
def test_whole_counts_and_fractions_are_accepted(overlap: object, units: int) -> None:
    chunker = get_chunker("fixed", max_size=100, overlap=overlap)
    assert chunker.params.limits().overlap == units  # type: ignore[attr-defined]
