"""Chunkers: documents into chunks with exact offsets and a hard size limit.

Every chunker is found by name in :data:`CHUNKERS` (or by a dotted ``package.module:Class`` path) and
built with typed, validated parameters by :func:`get_chunker`. All of them share the size and coverage
contract of :mod:`chunkwise.chunking.enforce`.
"""

from __future__ import annotations

import importlib
from typing import Any

from chunkwise.chunking.base import BaseChunker, Chunker, ChunkerParams
from chunkwise.chunking.chunk import Chunk, ChunkBuilder, make_chunk
from chunkwise.chunking.tokens import TokenCounter, get_counter
from chunkwise.errors import ConfigError

__all__ = [
    "CHUNKERS",
    "BaseChunker",
    "Chunk",
    "ChunkBuilder",
    "Chunker",
    "ChunkerParams",
    "TokenCounter",
    "get_chunker",
    "get_counter",
    "make_chunk",
]

#: Chunker name -> ``"module:Class"``; modules are imported on first use.
CHUNKERS: dict[str, str] = {
    "fixed": "chunkwise.chunking.fixed:FixedChunker",
    "recursive": "chunkwise.chunking.recursive:RecursiveChunker",
    "sentence": "chunkwise.chunking.sentence:SentenceChunker",
    "semantic": "chunkwise.chunking.semantic:SemanticChunker",
    "structure": "chunkwise.chunking.structure:StructureChunker",
    "wrac": "chunkwise.chunking.wrac:WracChunker",
    "agentic": "chunkwise.chunking.agentic:AgenticChunker",
    "logprob": "chunkwise.chunking.logprob:LogprobChunker",
    "sections": "chunkwise.chunking.sections:SectionsChunker",
}


def get_chunker(name: str, **params: Any) -> Chunker:
    """The chunker ``name`` (a key of :data:`CHUNKERS` or ``package.module:Class``) built with ``params``.

    Unknown names, unknown parameters and out-of-range values raise :class:`ConfigError`.
    """
    target = CHUNKERS.get(name, name)
    module_name, sep, class_name = target.partition(":")
    if not sep or not class_name:
        raise ConfigError(
            f"unknown chunker {name!r}: use one of {', '.join(CHUNKERS)} or package.module:Class"
        )
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load chunker {name!r}: {exc}") from exc
    chunker = cls(**params)
    if not isinstance(chunker, Chunker):
        raise ConfigError(f"{target} is not a chunker (it needs a name and chunk(doc))")
    return chunker
