"""The page facts the PDF parser works with: text lines and horizontal rules.

Shared by :mod:`chunkwise.parsing.pdf` (blocks and roles) and :mod:`chunkwise.parsing.pdf_tables`
(tables drawn with rules). Coordinates are PDF points with ``top``/``bottom``/``y`` measured from the top
of the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A block set at least this much larger than the body text is a heading.
HEADING_SIZE_RATIO = 1.12


@dataclass
class Line:
    """One text line of a page, with the geometry and font facts the block rules need."""

    page: int
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    weights: list[int]
    hyphenated: bool
    glyphs: list[tuple[str, float, float]] = field(default_factory=list)
    bold: bool = False


@dataclass(frozen=True)
class Rule:
    """A thin horizontal path: a table rule or a thematic break. ``y`` is measured from the page top."""

    x0: float
    x1: float
    y: float


def rejoin(head: str, tail: str, compounds: frozenset[str] | set[str]) -> str:
    """Join two lines split after a hyphen PDFium took for end-of-line hyphenation.

    The hyphen is dropped (``passen-`` + ``ger``) unless the split word is a real compound: one seen
    unbroken elsewhere in the document (``compounds``), or one with a digit next to the hyphen
    (``VL-001``, ``A-380``), which typesetters never hyphenate.
    """
    before = re.findall(r"\w+$", head)
    after = re.findall(r"^\w+", tail)
    if before and after:
        compound = f"{before[0]}-{after[0]}".lower()
        if compound in compounds or before[0][-1].isdigit() or after[0][0].isdigit():
            return f"{head}-{tail}"
    return head + tail
