"""A ceiling on the number of chunks one document may become.

Chunking itself is linear and fast, but everything after it costs per chunk: contextual headers, an
embedding, rows and index entries in the store, and for the LLM-driven chunkers model calls while
chunking. A document that would become tens of thousands of chunks (a megabyte-long line, a log dump, a
hostile file within the parse limits) is refused with :class:`~chunkwise.errors.TooManyChunksError`
before that work starts, instead of tying up an ingest for hours.

Two checks, cheapest first:

* :func:`check_chunk_floor`, before chunking: every chunker covers every non-whitespace character, and
  what a chunk adds beyond the overlap it reaches back into its predecessor is at most
  ``max_size - overlap`` (the size contract packs pieces to that and adds the overlap after; ``fixed``
  steps by it), so with ``unit="chars"`` a document needs at least
  ``ceil(non-whitespace characters / (max_size - overlap))`` chunks whatever the chunker; past the
  ceiling it is refused without chunking (token units have no such bound: one token may span many
  characters). Without the overlap in the divisor, ``max_size = 500, overlap = 499`` on a few
  megabytes passed the floor and made millions of chunks before the count refused them;
* :func:`check_chunk_count`, after chunking: the exact count.

:func:`chunk_within` does both around ``chunker.chunk(doc)``; a pipeline that calls something else
(``LLMChunker.run``) calls the two checks around it.
"""

from __future__ import annotations

import re

from chunkwise.chunking.base import BaseChunker, Chunker
from chunkwise.chunking.chunk import Chunk
from chunkwise.document import Document
from chunkwise.errors import TooManyChunksError

#: Default ceiling: about 8 MB of text at 800 characters a chunk, ten times a long book.
MAX_CHUNKS = 10_000

_SPACE = re.compile(r"\s+")


def _source(doc: Document) -> str:
    return doc.source or doc.id


def chunk_floor(chunker: Chunker, doc: Document) -> int:
    """The fewest chunks a character-sized ``chunker`` can make of ``doc`` (see the module docstring); 0
    for other chunkers, which have no such bound."""
    if not isinstance(chunker, BaseChunker) or chunker.params.unit != "chars":
        return 0
    step = chunker.params.max_size - chunker.params.overlap_units
    return -(-len(_SPACE.sub("", doc.text)) // step)


def check_chunk_floor(chunker: Chunker, doc: Document, max_chunks: int = MAX_CHUNKS) -> None:
    """Refuse ``doc`` before chunking when ``chunker`` (character-sized) cannot need fewer than
    ``max_chunks`` + 1 chunks for it; other chunkers pass (see the module docstring)."""
    if not isinstance(chunker, BaseChunker) or chunker.params.unit != "chars":
        return
    params = chunker.params
    if len(doc.text) <= max_chunks * (params.max_size - params.overlap_units):
        return  # even an all-text document fits: skip the count
    floor = chunk_floor(chunker, doc)
    if floor > max_chunks:
        content = len(_SPACE.sub("", doc.text))
        each = f"{params.max_size}" + (
            f" overlapping by {params.overlap_units}" if params.overlap_units else ""
        )
        raise TooManyChunksError(
            _source(doc),
            f"{content} characters of text need at least {floor} chunks of {each}, over the limit of "
            f"{max_chunks} chunks per document",
        )


def check_chunk_count(doc: Document, chunks: list[Chunk], max_chunks: int = MAX_CHUNKS) -> None:
    """Refuse ``doc`` when its ``chunks`` are more than ``max_chunks``."""
    if len(chunks) > max_chunks:
        raise TooManyChunksError(
            _source(doc), f"{len(chunks)} chunks, over the limit of {max_chunks} chunks per document"
        )


def chunk_within(chunker: Chunker, doc: Document, max_chunks: int = MAX_CHUNKS) -> list[Chunk]:
    """``chunker.chunk(doc)``, refused with :class:`TooManyChunksError` past ``max_chunks`` chunks."""
    check_chunk_floor(chunker, doc, max_chunks)
    chunks = chunker.chunk(doc)
    check_chunk_count(doc, chunks, max_chunks)
    return chunks
