"""``fixed``: NaiveChunk, windows of a fixed size with optional overlap, in characters or tokens.

The baseline of the LlamaChunk write-up (seed 004): cut every ``max_size`` units wherever that falls,
mid-word included. With ``overlap`` the window steps by ``max_size - overlap``. Chunks are trimmed of
surrounding whitespace like every other chunker's, so a window that begins on a space starts one
character later.
"""

from __future__ import annotations

from typing import ClassVar

from chunkwise.chunking.base import BaseChunker
from chunkwise.chunking.boundaries import Level


class FixedChunker(BaseChunker):
    """Fixed-size windows: no boundary is preferred, the size limit is the cut."""

    name: ClassVar[str] = "fixed"
    levels: ClassVar[tuple[Level, ...]] = ()
    snap_overlap: ClassVar[bool] = False
