"""chunkwise: documents into retrieval-ready chunks, and answers from them, with every step measurable.

The flat API::

    import chunkwise

    doc = chunkwise.parse("handbook.pdf")
    chunks = chunkwise.chunk(doc, "structure", max_size=800)
    with chunkwise.KnowledgeBase("my-kb", chunkwise.load_config(preset="fast")) as kb:
        kb.add(["docs/"])
        answer = kb.answer("How heavy may a checked bag be?")

Names are imported on first use, so ``import chunkwise`` stays cheap (the command line starts fast and a
parser-only user never loads numpy's linear algebra or a model).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkwise.api import chunk, parse
    from chunkwise.chunking.chunk import Chunk
    from chunkwise.config import PipelineConfig, load_config
    from chunkwise.document import Document, Unit, UnitKind
    from chunkwise.errors import (
        BudgetExceededError,
        ChunkwiseError,
        ConfigError,
        DeadlineExceededError,
        ModelError,
        ParseError,
        QueryError,
        StoreError,
    )
    from chunkwise.ingest.copy import CopyReport
    from chunkwise.ingest.reembed import ReembedReport
    from chunkwise.ingest.report import IngestReport
    from chunkwise.kb import KnowledgeBase
    from chunkwise.models.config import ModelsConfig
    from chunkwise.models.context import Models
    from chunkwise.query.answer import Answer, Citation
    from chunkwise.query.pipeline import Hit
    from chunkwise.query.segments import Segment
    from chunkwise.query.trace import Trace
    from chunkwise.spans import Span

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "parse": "chunkwise.api",
    "chunk": "chunkwise.api",
    "KnowledgeBase": "chunkwise.kb",
    "load_config": "chunkwise.config",
    "PipelineConfig": "chunkwise.config",
    "Models": "chunkwise.models.context",
    "ModelsConfig": "chunkwise.models.config",
    "Document": "chunkwise.document",
    "Unit": "chunkwise.document",
    "UnitKind": "chunkwise.document",
    "Span": "chunkwise.spans",
    "Chunk": "chunkwise.chunking.chunk",
    "Hit": "chunkwise.query.pipeline",
    "Segment": "chunkwise.query.segments",
    "Answer": "chunkwise.query.answer",
    "Citation": "chunkwise.query.answer",
    "Trace": "chunkwise.query.trace",
    "IngestReport": "chunkwise.ingest.report",
    "ReembedReport": "chunkwise.ingest.reembed",
    "CopyReport": "chunkwise.ingest.copy",
    "ChunkwiseError": "chunkwise.errors",
    "ParseError": "chunkwise.errors",
    "ConfigError": "chunkwise.errors",
    "ModelError": "chunkwise.errors",
    "BudgetExceededError": "chunkwise.errors",
    "DeadlineExceededError": "chunkwise.errors",
    "QueryError": "chunkwise.errors",
    "StoreError": "chunkwise.errors",
}

__all__ = [
    "Answer",
    "BudgetExceededError",
    "Chunk",
    "ChunkwiseError",
    "Citation",
    "ConfigError",
    "CopyReport",
    "DeadlineExceededError",
    "Document",
    "Hit",
    "IngestReport",
    "KnowledgeBase",
    "ModelError",
    "Models",
    "ModelsConfig",
    "ParseError",
    "PipelineConfig",
    "QueryError",
    "ReembedReport",
    "Segment",
    "Span",
    "StoreError",
    "Trace",
    "Unit",
    "UnitKind",
    "chunk",
    "load_config",
    "parse",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkwise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
