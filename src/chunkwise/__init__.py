"""chunkwise: documents into retrieval-ready chunks, and answers from them, with every step measurable."""

from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import ChunkwiseError, ParseError

__all__ = ["ChunkwiseError", "Document", "ParseError", "Unit", "UnitKind"]
__version__ = "0.1.0"
