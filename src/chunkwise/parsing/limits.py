"""Safety limits applied while parsing untrusted files."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds that keep a hostile or huge input from exhausting memory or time.

    ``max_bytes``: the largest input file read at all (checked before reading).
    ``max_uncompressed_bytes``: the largest total uncompressed size of a DOCX/PPTX zip archive
    (zip-bomb guard), and the largest ratio between uncompressed and compressed size.
    ``max_depth``: the deepest HTML/XML element nesting accepted.
    """

    max_bytes: int = 100 * 1024 * 1024
    max_uncompressed_bytes: int = 200 * 1024 * 1024
    max_compression_ratio: float = 200.0
    max_depth: int = 512
