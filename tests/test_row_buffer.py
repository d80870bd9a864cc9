"""``RowBuffer``: an array grown at the end equals the concatenation, whichever earlier array it grows
from, and no array handed out earlier ever changes (property test); growing the latest array writes
in place, without copying what it holds."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.store.row_buffer import HEADROOM, RowBuffer


@given(
    st.lists(
        st.tuples(st.integers(0, 3000), st.integers(0, 50)),  # rows added, which earlier array grows
        min_size=1,
        max_size=12,
    )
)
def test_growing_any_array_equals_the_concatenation_and_leaves_earlier_ones_alone(steps):
    grown: RowBuffer[np.float32] = RowBuffer()
    rng = np.random.default_rng(0)
    handed: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros((0, 3), np.float32),) * 2]  # (array, copy)
    for added, back in steps:
        held, _ = handed[max(0, len(handed) - 1 - back)]
        more = rng.normal(size=(added, 3)).astype(np.float32)
        result = grown.extend(held, more)
        np.testing.assert_array_equal(result, np.concatenate([held, more]))
        handed.append((result, result.copy()))
        for array, copy in handed:
            np.testing.assert_array_equal(array, copy)


def test_growing_the_latest_array_writes_in_place_until_the_room_is_used():
    grown: RowBuffer[np.int64] = RowBuffer()
    first = grown.extend(np.arange(10), np.arange(10, 20))
    second = grown.extend(first, np.arange(20, 30))
    assert np.shares_memory(first, second)  # the same buffer: nothing copied
    np.testing.assert_array_equal(second, np.arange(30))
    full = grown.extend(second, np.arange(30, 30 + HEADROOM))  # past the room: a new buffer
    assert not np.shares_memory(second, full)
    np.testing.assert_array_equal(full, np.arange(30 + HEADROOM))
    np.testing.assert_array_equal(second, np.arange(30))


def test_an_array_that_is_not_the_latest_handed_out_is_copied_not_grown():
    """A reordered view of the buffer, or a copy, is never taken for the latest array: the result is
    still the concatenation; and rows of a wider type keep their type."""
    grown: RowBuffer[np.int64] = RowBuffer()
    latest = grown.extend(np.arange(0), np.arange(5))
    np.testing.assert_array_equal(grown.extend(latest[::-1], np.array([9])), [4, 3, 2, 1, 0, 9])
    wide: RowBuffer[np.floating] = RowBuffer()
    held = np.array([0.1, 0.2], dtype=np.float64)
    result = wide.extend(held, np.array([0.5], dtype=np.float32))
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result[:2], held)
