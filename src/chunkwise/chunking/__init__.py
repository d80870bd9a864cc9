"""Chunkers: documents into chunks with exact offsets and a hard size limit.

Every chunker is found by name in :data:`CHUNKERS` (or by a dotted ``package.module:Class`` path) and
built with typed, validated parameters by :func:`get_chunker`. All of them share the size and coverage
contract of :mod:`chunkwise.chunking.enforce`.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Mapping
from typing import Any

from chunkwise.chunking.base import BaseChunker, Chunker, ChunkerParams, parse_params
from chunkwise.chunking.chunk import Chunk, ChunkBuilder, make_chunk
from chunkwise.chunking.tokens import TokenCounter, get_counter
from chunkwise.errors import ConfigError
from chunkwise.models.context import Models
from chunkwise.settings import coerce

__all__ = [
    "CHUNKERS",
    "CHUNKING_REVISION",
    "LLM_CHUNKERS",
    "BaseChunker",
    "Chunk",
    "ChunkBuilder",
    "Chunker",
    "ChunkerParams",
    "TokenCounter",
    "check_param_types",
    "chunker_class",
    "get_chunker",
    "get_counter",
    "make_chunk",
    "normalised_params",
]

#: Raised whenever a change to the code makes a chunker cut the same input differently (2: a blank line
#: after a Markdown heading is no longer a paragraph cut; 3: a list number after a sentence end, as in
#: ``Stir. 4. Bake``, is no longer a sentence end, the recursive chunker cuts after a quoted sentence
#: end, the semantic chunker's forced cuts leave a chunk a quarter full, and its cluster method no
#: longer cuts where cutting gains nothing; 4: a lone ``\r`` breaks lines as ``\n`` does, the
#: recursive chunker finds a CJK full stop after a Latin mark (``e.g.。``) as a sentence end, and the
#: cluster method keeps a sentence that fits a chunk whole; 5: a lone ``\r`` also ends the lines the
#: sections chunker numbers and table rows, and it or ``\r\n`` joins W-RAC's list items as ``\n`` does).
#: Part of the ingest fingerprint, so stores and cached evaluation indexes built by an older revision
#: are re-chunked rather than mixed with new chunks.
CHUNKING_REVISION = 5

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


#: The chunkers that call the LLM (to plan, judge or read boundaries), so that what they store depends on
#: which LLM runs.
LLM_CHUNKERS = frozenset({"agentic", "wrac", "logprob", "sections"})


def chunker_class(name: str) -> type[Any]:
    """The class of chunker ``name`` (a key of :data:`CHUNKERS` or ``package.module:Class``)."""
    target = CHUNKERS.get(name, name)
    module_name, sep, class_name = target.partition(":")
    if not sep or not class_name:
        raise ConfigError(
            f"unknown chunker {name!r}: use one of {', '.join(CHUNKERS)} or package.module:Class"
        )
    try:
        cls: type[Any] = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load chunker {name!r}: {exc}") from exc
    if not isinstance(cls, type):
        raise ConfigError(f"chunker {name!r} is not a class (a {type(cls).__name__}): name a chunker class")
    return cls


def normalised_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter of chunker ``name`` (defaults filled in, values typed) for ``params``, so that two
    spellings of one setting compare equal; :class:`ConfigError` names an unknown key and the valid ones,
    or a value out of range. Chunkers outside :class:`BaseChunker` take ``params`` as given."""
    cls = chunker_class(name)
    if issubclass(cls, BaseChunker):
        return parse_params(name, cls.Params, params).to_dict()
    return dict(params)


def check_param_types(name: str, params: Mapping[str, Any]) -> None:
    """:class:`ConfigError` naming the first of ``params`` whose value is not of the type chunker ``name``
    declares for it, taken as given: ``"10"`` is no ``int``, ``"false"`` no ``bool`` and ``10.0`` no
    ``int`` here, although :func:`get_chunker` reads them so (the command line's ``--set`` gives every
    value as a string, and a TOML file may write a whole number as a float). For values that arrive
    typed, as a JSON request's do, where a number of the wrong type is a client's mistake to report, not
    to guess at. Unknown names and ranges are left to :func:`get_chunker`; chunkers outside
    :class:`BaseChunker` declare no types and pass."""
    cls = chunker_class(name)
    if not issubclass(cls, BaseChunker):
        return
    hints = typing.get_type_hints(cls.Params)
    for field in dataclasses.fields(cls.Params):
        if field.name in params:
            value = params[field.name]
            if isinstance(coerce(value, hints[field.name], field.name), int) and isinstance(value, float):
                raise ConfigError(f"{field.name}: expected int, got {value!r}")


def get_chunker(name: str, *, models: Models | None = None, **params: Any) -> Chunker:
    """The chunker ``name`` (a key of :data:`CHUNKERS` or ``package.module:Class``) built with ``params``.

    ``models`` is the run's model context: the model-driven chunkers (``semantic``, ``wrac``,
    ``agentic``, ``logprob``, ``sections``) take their models from it, so its ledger accounts their
    calls and its budget bounds them. Unknown names, unknown parameters and out-of-range values raise
    :class:`ConfigError`.
    """
    cls = chunker_class(name)
    if issubclass(cls, BaseChunker):
        chunker = cls(models=models, **params)
    else:
        try:
            chunker = cls(**params)
        except TypeError as exc:  # a class of another project: its own arguments, its own messages
            raise ConfigError(f"cannot build chunker {name!r} with {sorted(params)}: {exc}") from None
    if not isinstance(chunker, Chunker):
        raise ConfigError(f"{name} is not a chunker (it needs a name and chunk(doc))")
    return chunker
