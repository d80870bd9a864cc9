"""Arrays that grow at the end without copying what they hold.

A store's dense index of a new generation is the previous one's keys and vectors followed by the rows
added since (:meth:`.sqlite.SQLiteStore.dense_index`). Concatenating copied every vector each time: at
100k chunks of 384 floats, 150 MB and a third of a second in the first search after each write. A
:class:`RowBuffer` writes the new rows after the held ones in a buffer with room to spare, so each
generation's array is a view of the same buffer and only the new rows are written; the buffer is
replaced (copied once, with a quarter more room) when it is full. An earlier generation's view never
changes: rows are only ever written beyond every view handed out.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

S = TypeVar("S", bound=np.generic)

#: The least room a new buffer keeps beyond its rows.
HEADROOM = 4096


class RowBuffer(Generic[S]):
    """The buffer behind one growing array (keys, or a matrix of vectors). Not thread-safe: the caller
    serialises :meth:`extend` (the store holds its lock)."""

    def __init__(self) -> None:
        self._buffer: npt.NDArray[S] | None = None
        self._last: npt.NDArray[S] | None = None  # the latest array handed out

    def extend(self, held: npt.NDArray[S], more: npt.NDArray[S]) -> npt.NDArray[S]:
        """``held`` followed by ``more`` (along the first axis). Written in place after ``held`` when
        ``held`` is the latest array this buffer handed out and there is room; else into a new buffer
        (``held`` copied once) with room for a quarter more rows, at least :data:`HEADROOM`."""
        size = len(held) + len(more)
        buffer = self._buffer
        if buffer is None or not self._fits(buffer, held, more, size):
            shape = (size + max(HEADROOM, size // 4), *more.shape[1:])
            buffer = np.empty(shape, dtype=np.result_type(held, more))
            buffer[: len(held)] = held
            self._buffer = buffer
        buffer[len(held) : size] = more
        self._last = buffer[:size]
        return self._last

    def _fits(self, buffer: npt.NDArray[S], held: npt.NDArray[S], more: npt.NDArray[S], size: int) -> bool:
        """Whether ``more`` can be written in place after ``held``: ``held`` is the latest array handed
        out (not a copy, a reordering or an earlier one), and ``size`` rows of ``more``'s kind fit."""
        return (
            held is self._last
            and size <= len(buffer)
            and buffer.dtype == more.dtype
            and buffer.shape[1:] == more.shape[1:]
        )
