"""Safety limits applied while parsing untrusted files."""

from __future__ import annotations

from dataclasses import dataclass

from chunkwise.errors import FileTooLargeError


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds that keep a hostile or huge input from exhausting memory or time.

    ``max_bytes``: the largest input file read at all (checked before reading, and while reading).
    ``max_uncompressed_bytes``: the largest total uncompressed size of a DOCX/PPTX zip archive
    (zip-bomb guard), and the largest ratio between uncompressed and compressed size.
    ``max_depth``: the deepest HTML/XML element nesting accepted.
    ``max_chars``: the most characters of text one document may hold once extracted. A small file can
    carry far more text than its size suggests (a DOCX compresses text 100:1, a PDF can draw one
    content stream on every page), so the formats that inflate stop extracting as soon as they pass
    it, before the whole text is built. Plain text, Markdown and HTML are measured once decoded, before
    any parsing (for the last two, markup included). The default, 20 million characters, is about
    10,000 pages.
    """

    max_bytes: int = 100 * 1024 * 1024
    max_uncompressed_bytes: int = 200 * 1024 * 1024
    max_compression_ratio: float = 200.0
    max_depth: int = 512
    max_chars: int = 20_000_000

    def check_chars(self, count: int, source: str) -> None:
        """Raise :class:`FileTooLargeError` for ``source`` when ``count`` characters pass ``max_chars``.

        ``count`` may be a running total taken before extraction has finished.
        """
        if count > self.max_chars:
            raise FileTooLargeError(source, f"its text exceeds the limit of {self.max_chars} characters")
