"""The one table of supported formats: which extensions name which format, and which module parses it.

Parsing picks a parser by extension (confirmed by content, see :mod:`.detect`); ingesting a directory
picks the files whose extension is listed here. Both read this table, so they cannot disagree.
"""

from __future__ import annotations

#: Format name -> module implementing ``parse(data, source, limits) -> Document``.
FORMATS: dict[str, str] = {
    "text": "chunkwise.parsing.text",
    "markdown": "chunkwise.parsing.markdown",
    "html": "chunkwise.parsing.html",
    "pdf": "chunkwise.parsing.pdf",
    "docx": "chunkwise.parsing.docx",
    "pptx": "chunkwise.parsing.pptx",
}

#: Extension (lower case, with dot) -> format name.
EXTENSIONS: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
}
