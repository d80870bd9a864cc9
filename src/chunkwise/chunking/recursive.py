"""``recursive``: a hierarchy of separators, with small pieces merged up to the size.

The splitter LangChain, chonkie and semchunk popularised: prefer to cut at a blank line, else at a line
break, a sentence end, clause punctuation, a space, and only then inside a word. Here it runs as the
"greedy strongest boundary" rule of :func:`chunkwise.chunking.enforce.pack`: each chunk grows to the
size limit and ends at the last boundary of the strongest level inside that reach, which merges small
pieces and splits large ones in one linear pass.
"""

from __future__ import annotations

from typing import ClassVar

from chunkwise.chunking.base import BaseChunker
from chunkwise.chunking.boundaries import RECURSIVE_LEVELS, Level


class RecursiveChunker(BaseChunker):
    """Paragraph > line > sentence > clause > word > character."""

    name: ClassVar[str] = "recursive"
    levels: ClassVar[tuple[Level, ...]] = RECURSIVE_LEVELS
