"""PDF parser: text per page with page numbers, paragraphs, headings by font size, lists and tables.

Engine: **pypdfium2** (PDFium, the PDF engine of Chromium), not pdfplumber/pdfminer. Measured side by
side on this machine, this whole parser reads the 19 pages of ``levels_of_agi.pdf`` in 0.8 s, where
pdfplumber's plain ``extract_text`` alone takes 4.7 s; and PDFium's text is better on justified LaTeX
output: pdfminer's word grouping glues words together on tightly set lines
("CloudWay24offersgenerous..."), while PDFium inserts the spaces and flags the hyphens it recognises
as end-of-line hyphenation (``FPDFText_IsHyphen``), so that words can be rejoined.
pdfplumber's table finder needs ruled cell grids; the tables of the documents we read are drawn with
horizontal rules only (LaTeX ``booktabs``), so tables are reconstructed here from the rules and the
character positions instead (:mod:`chunkwise.parsing.pdf_tables`).

Pipeline:

1. **Characters to lines.** Each character comes with its box, font size and font weight. Lines end at
   PDFium's line breaks, at a hyphenation mark, or where the baseline jumps while the pen moves left.
   Thin horizontal path objects are kept as *rules*.
2. **Page furniture.** Lines in the top or bottom 10 % of a page that are bare page numbers ("3",
   "Page 3 of 9", "- 3 -"), or whose text (digits masked) recurs on at least half of the pages, are
   dropped as running headers and footers.
3. **Tables.** Runs of same-width rules enclosing column-aligned body text become Markdown tables,
   see :mod:`chunkwise.parsing.pdf_tables`.
4. **Blocks.** Consecutive lines form one block unless the font size changes, the line pitch
   exceeds 1.45 x the font size (paragraph spacing), a rule lies between them, a line starts with a
   list marker, or a line starts left of the list item it would continue. (A bold lead-in line
   followed by regular text stays in its block: that is one paragraph with a line break.)
   Blocks continue across a page break when the first page's block does not end a sentence.
5. **Roles.** The body size is the most common font size (by characters). A short block (at most
   three lines) set larger than 1.12 x the body size is a heading; its level is the rank of its size
   among heading sizes. A short, fully bold block at body size is a heading one level below the
   smallest heading size (how LaTeX sets ``\\subsubsection``/``\\paragraph``) when it has more than
   paragraph space around it: 1.2 em above (0.7 em right below another heading, or at a page top)
   and 0.7 em below. A bold line directly followed by its text, or closing the document, is a
   paragraph.
   Blocks starting with a bullet or number marker are list items, their depth the rank of the
   marker's x position among all marker positions. Blocks indented from the body margin (on both
   sides when they wrap) that do not follow a list item are quotes. Everything else is a paragraph.

Errors: a file without an end-of-file marker is truncated (:class:`CorruptFileError`); PDFium's
password error is :class:`EncryptedFileError`; a readable file whose pages hold no characters (scanned
or drawn pages) is :class:`NoTextError`; one whose pages add up to more than ``ParseLimits.max_chars``
characters is :class:`FileTooLargeError`, raised at the page that passes the limit (a few kilobytes can
draw one content stream on thousands of pages).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from chunkwise.document import Document
from chunkwise.errors import CorruptFileError, EncryptedFileError, NoTextError
from chunkwise.parsing.builder import DocumentBuilder
from chunkwise.parsing.limits import ParseLimits
from chunkwise.parsing.pdf_layout import HEADING_SIZE_RATIO, Line, Rule, rejoin
from chunkwise.parsing.pdf_tables import find_tables

#: PDFium's "password required or incorrect" error code (FPDF_ERR_PASSWORD).
_ERR_PASSWORD = 4
#: Codes PDFium gives a hyphen it recognised as end-of-line hyphenation (``FPDFText_IsHyphen``).
_HYPHENATION_MARKS = frozenset({0x02, 0xFFFE})
#: What a character PDFium reports as a surrogate or past U+10FFFF becomes (a broken ToUnicode map can
#: say anything; a lone surrogate would make the text unencodable).
_REPLACEMENT = 0xFFFD
#: A valid PDF ends with ``%%EOF`` within its last kilobyte (trailing junk is tolerated up to that).
_EOF_WINDOW = 1024

#: A horizontal gap (in ems) between two glyphs that PDFium did not mark with a space, above which a
#: space is inserted: kerning stays far below it, column gaps far above it.
_WORD_GAP = 0.25
#: Share of the page height, at the top and at the bottom, where running headers and footers live.
_MARGIN_SHARE = 0.10
#: A line pitch above this multiple of the font size separates paragraphs.
_PARAGRAPH_PITCH = 1.45
#: Weight difference (PDFium weight units) above the body weight that makes a character bold.
_BOLD_DELTA = 120
#: Longest block (in lines, characters) still taken for a heading.
_HEADING_MAX_LINES = 3
_HEADING_MAX_CHARS = 200
#: Free space (in ems) a bold body-size line needs above it (below a heading: after it) to be a heading:
#: LaTeX and word processors put more space before a section heading than between paragraphs.
_HEADING_SPACE_BEFORE = 1.2
_HEADING_SPACE_AFTER = 0.7
#: Indentation (points) from the body margin that marks a quote.
_QUOTE_INDENT = 15.0
#: A space in a line's character list (spaces carry no geometry of their own).
_SPACE = (" ", 0.0, 0.0, 0.0, 0.0, 0.0, -1)
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE
)
_LIST_MARKER = re.compile(r"^(?:([•◦▪▫‣●○■□·∙➢►✓✔])\s*|([-–*])\s+|(\d{1,3})[.)]\s+|([a-z])[.)]\s+)")
_SENTENCE_END = re.compile(r"[.!?:;)\]”\"']$")


@dataclass
class _Block:
    """Lines that form one unit, or a reconstructed table."""

    lines: list[Line]
    table: list[list[str]] | None = None
    space_before: float = 0.0
    space_after: float = 0.0


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Parse PDF bytes into a :class:`Document` whose units carry their page numbers.

    Pages are read one at a time and counted: past ``limits.max_chars`` characters reading stops.
    """
    pages = _read_pages(data, source, limits)
    lines = _drop_page_furniture([line for page_lines, _ in pages for line in page_lines], len(pages))
    if not lines:
        raise NoTextError(source, "the PDF has no extractable text (scanned or image-only pages?)")
    body_size, body_weight = _body_font(lines)
    for line in lines:
        line.bold = _is_bold(line, body_weight)
    rules = {number: page_rules for number, (_, page_rules) in enumerate(pages, start=1)}
    blocks = _blocks(lines, rules, body_size)
    builder = DocumentBuilder()
    _Roles(blocks, lines, body_size).emit(builder)
    return builder.build(source, source=source, fmt="pdf", metadata={"pages": len(pages)})


# -- reading ---------------------------------------------------------------------------------------


def _read_pages(data: bytes, source: str, limits: ParseLimits) -> list[tuple[list[Line], list[Rule]]]:
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        raise CorruptFileError(source, "the PDF is truncated (no end-of-file marker)")
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _ERR_PASSWORD:
            raise EncryptedFileError(source, "the PDF is password-protected") from exc
        raise CorruptFileError(source, f"cannot read as PDF: {exc}") from exc
    try:
        pages = []
        chars = 0
        for number in range(1, len(document) + 1):
            page = textpage = None
            try:
                page = document[number - 1]
                textpage = page.get_textpage()
                chars += raw.FPDFText_CountChars(textpage.raw)
                limits.check_chars(chars, source)
                pages.append((_page_lines(page, textpage, number), _page_rules(page)))
            except pdfium.PdfiumError as exc:  # a page object the document lists but PDFium cannot load
                raise CorruptFileError(source, f"cannot read page {number}: {exc}") from exc
            finally:
                for handle in (textpage, page):
                    if handle is not None:
                        handle.close()
        return pages
    finally:
        document.close()


def _page_lines(page: Any, textpage: Any, number: int) -> list[Line]:
    """Group the page's characters into lines (see the module docstring, step 1)."""
    from pypdfium2 import raw

    handle = textpage.raw
    height = page.get_height()
    box = raw.FS_RECTF()
    lines: list[Line] = []
    chars: list[tuple[str, float, float, float, float, float, int]] = []

    def flush(hyphenated: bool) -> None:
        line = _make_line(chars, number, height, hyphenated)
        if line is not None:
            lines.append(line)
        chars.clear()

    get_unicode, get_box = raw.FPDFText_GetUnicode, raw.FPDFText_GetLooseCharBox
    get_size, get_weight = raw.FPDFText_GetFontSize, raw.FPDFText_GetFontWeight
    last_bottom, last_right = 0.0, float("inf")  # of the line's last glyph; inf: no glyph yet
    for index in range(raw.FPDFText_CountChars(handle)):
        code = get_unicode(handle, index)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            code = _REPLACEMENT
        if code in (10, 13) or code in _HYPHENATION_MARKS:
            flush(code in _HYPHENATION_MARKS)
            last_right = float("inf")
            continue
        if code <= 32 or chr(code).isspace():
            chars.append(_SPACE)
            continue
        get_box(handle, index, box)
        size = get_size(handle, index)
        if abs(box.bottom - last_bottom) > 0.8 * max(size, 1.0) and box.left < last_right - size:
            flush(False)  # the baseline jumped while the pen moved left: a line PDFium did not break
        chars.append((chr(code), box.left, box.right, box.bottom, box.top, size, get_weight(handle, index)))
        last_bottom, last_right = box.bottom, box.right
    flush(False)
    return lines


def _make_line(
    chars: list[tuple[str, float, float, float, float, float, int]],
    page: int,
    height: float,
    hyphenated: bool,
) -> Line | None:
    """One line from its characters; ``None`` for blank or rotated runs."""
    glyphs = [c for c in chars if c[0] != " "]
    if not glyphs:
        return None
    x0, x1 = min(c[1] for c in glyphs), max(c[2] for c in glyphs)
    low, high = min(c[3] for c in glyphs), max(c[4] for c in glyphs)
    if len(glyphs) > 1 and high - low > x1 - x0:
        return None  # rotated text (margin stamps such as arXiv identifiers) is not body text
    pieces: list[str] = []
    positioned: list[tuple[str, float, float]] = []
    end = float("inf")
    for char, left, right, _, _, size, _ in chars:
        if char == " ":
            if positioned and positioned[-1][0] != " ":
                pieces.append(" ")
                positioned.append((" ", end, end))
            continue
        if left - end > _WORD_GAP * size and positioned and positioned[-1][0] != " ":
            pieces.append(" ")  # adjacent runs (table cells) that PDFium did not separate
        pieces.append(char)
        positioned.append((char, left, right))
        end = right
    sizes = Counter(round(c[5], 1) for c in glyphs)
    return Line(
        page=page,
        text="".join(pieces).strip(),
        x0=x0,
        x1=x1,
        top=height - high,
        bottom=height - low,
        size=sizes.most_common(1)[0][0],
        weights=[c[6] for c in glyphs],
        hyphenated=hyphenated,
        glyphs=positioned,
    )


def _page_rules(page: Any) -> list[Rule]:
    """Thin horizontal path objects (table rules, thematic breaks), top to bottom."""
    from pypdfium2 import raw

    height = page.get_height()
    rules = []
    for obj in page.get_objects(filter=(raw.FPDF_PAGEOBJ_PATH,), max_depth=4):
        left, bottom, right, top = obj.get_bounds()
        if top - bottom <= 2.5 and right - left >= 20:
            rules.append(Rule(left, right, height - (top + bottom) / 2))
    return sorted(rules, key=lambda rule: rule.y)


# -- cleaning and fonts ----------------------------------------------------------------------------


def _drop_page_furniture(lines: list[Line], page_count: int) -> list[Line]:
    """Remove page numbers and running headers/footers (see the module docstring, step 2)."""
    if not lines:
        return lines
    page_height = max(line.bottom for line in lines) / (1 - _MARGIN_SHARE / 2)
    top_zone, bottom_zone = page_height * _MARGIN_SHARE, page_height * (1 - _MARGIN_SHARE)

    def in_margin(line: Line) -> bool:
        return line.bottom <= top_zone or line.top >= bottom_zone

    def key(line: Line) -> str:
        return re.sub(r"\d+", "#", line.text.lower())

    pages_per_key = Counter(text for _, text in {(line.page, key(line)) for line in lines if in_margin(line)})
    threshold = max(2, page_count / 2)
    return [
        line
        for line in lines
        if not (in_margin(line) and (_PAGE_NUMBER.match(line.text) or pages_per_key[key(line)] >= threshold))
    ]


def _body_font(lines: list[Line]) -> tuple[float, int]:
    """The most common font size and, at that size, the most common weight (both by characters)."""
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[line.size] += len(line.weights)
    body_size = sizes.most_common(1)[0][0]
    weights = Counter(w for line in lines if line.size == body_size for w in line.weights if w > 0)
    return body_size, weights.most_common(1)[0][0] if weights else 400


def _is_bold(line: Line, body_weight: int) -> bool:
    known = [w for w in line.weights if w > 0]
    return bool(known) and sum(w >= body_weight + _BOLD_DELTA for w in known) >= 0.9 * len(known)


# -- blocks ----------------------------------------------------------------------------------------


def _marker(text: str) -> re.Match[str] | None:
    return _LIST_MARKER.match(text)


def _is_bullet(text: str) -> bool:
    """Starts with a bullet or dash marker (a numbered or lettered line may still be a heading)."""
    marker = _marker(text)
    return marker is not None and bool(marker.group(1) or marker.group(2))


def _blocks(lines: list[Line], rules: dict[int, list[Rule]], body_size: float) -> list[_Block]:
    """Group lines into blocks and tables (step 4), with the vertical space around each."""
    tables = find_tables(lines, rules, body_size)
    consumed = {id(line) for table_lines, _ in tables.values() for line in table_lines}
    blocks: list[_Block] = []
    current: list[Line] = []
    for line in lines:
        if id(line) in consumed:
            if id(line) in tables:
                if current:
                    blocks.append(_Block(current))
                    current = []
                table_lines, rows = tables[id(line)]
                blocks.append(_Block(table_lines, table=rows))
            continue
        if current and _continues(current, line, rules.get(line.page, [])):
            current.append(line)
        else:
            if current:
                blocks.append(_Block(current))
            current = [line]
    if current:
        blocks.append(_Block(current))
    _measure_spacing(blocks, rules)
    return blocks


def _rule_between(rules: list[Rule], upper: float, lower: float) -> float | None:
    """The lowest rule strictly between two heights, if any."""
    between = [rule.y for rule in rules if upper < rule.y < lower]
    return max(between) if between else None


def _continues(block: list[Line], line: Line, rules: list[Rule]) -> bool:
    """Whether ``line`` continues the block ending in ``block[-1]`` (see the module docstring, step 4)."""
    previous, first = block[-1], block[0]
    if abs(line.size - previous.size) > 0.6:
        return False
    marker = _marker(line.text)
    if marker and (marker.group(1) or _SENTENCE_END.search(previous.text) or _marker(first.text)):
        return False
    if _marker(first.text) and line.x0 < first.x0 - 3:
        return False
    if line.page != previous.page:
        return not _SENTENCE_END.search(previous.text)
    if line.top <= previous.top or line.top - previous.top > _PARAGRAPH_PITCH * previous.size:
        return False
    return _rule_between(rules, previous.bottom, line.top) is None


def _measure_spacing(blocks: list[_Block], rules: dict[int, list[Rule]]) -> None:
    """Set each block's free space above and below (infinite at a page break); rules count as content."""
    for before, after in itertools.pairwise(blocks):
        upper, lower = before.lines[-1], after.lines[0]
        if upper.page != lower.page:
            before.space_after = after.space_before = float("inf")
            continue
        rule = _rule_between(rules.get(lower.page, []), upper.bottom, lower.top)
        before.space_after = (rule if rule is not None else lower.top) - upper.bottom
        after.space_before = lower.top - (rule if rule is not None else upper.bottom)
    if blocks:
        blocks[0].space_before = float("inf")
        blocks[-1].space_after = 0.0  # nothing follows the last block: it cannot head a section


# -- roles -----------------------------------------------------------------------------------------


class _Roles:
    """Decides each block's unit kind and feeds the builder (see the module docstring, step 5)."""

    def __init__(self, blocks: list[_Block], lines: list[Line], body_size: float) -> None:
        self._blocks = blocks
        self._body_size = body_size
        large = sorted(
            {
                round(block.lines[0].size * 2) / 2
                for block in blocks
                if block.table is None and self._is_large(block)
            },
            reverse=True,
        )
        self._heading_ranks = {size: rank for rank, size in enumerate(large[:5], start=1)}
        self._bold_level = min(len(self._heading_ranks) + 1, 6)
        # The body margin: the leftmost start shared by a fair share of body lines (list-heavy pages
        # start most lines further right, a stray line may start further left).
        margins = Counter(round(line.x0) for line in lines if line.size == body_size)
        total = sum(margins.values())
        self._body_left = float(
            min((x for x, count in margins.items() if count >= max(2, total * 0.05)), default=0)
        )
        ends = sorted(line.x1 for line in lines if line.size == body_size)
        self._body_right = ends[int(len(ends) * 0.9)] if ends else 0.0
        self._marker_positions = sorted(
            {
                round(block.lines[0].x0)
                for block in blocks
                if block.table is None
                and _marker(block.lines[0].text)
                and block.lines[0].x0 > self._body_left + 3  # numbered headings sit on the margin
            }
        )
        self._compounds = {word.lower() for line in lines for word in re.findall(r"\w+(?:-\w+)+", line.text)}

    def _is_large(self, block: _Block) -> bool:
        text_length = sum(len(line.text) for line in block.lines)
        return (
            block.lines[0].size >= self._body_size * HEADING_SIZE_RATIO
            and len(block.lines) <= _HEADING_MAX_LINES
            and text_length <= _HEADING_MAX_CHARS
        )

    def _heading_level(self, block: _Block, after_heading: bool) -> int:
        if self._is_large(block):
            return self._heading_ranks.get(round(block.lines[0].size * 2) / 2, self._bold_level)
        text_length = sum(len(line.text) for line in block.lines)
        size = block.lines[0].size
        space_before = _HEADING_SPACE_AFTER if after_heading else _HEADING_SPACE_BEFORE
        if (
            all(line.bold for line in block.lines)
            and len(block.lines) <= 2
            and text_length <= _HEADING_MAX_CHARS
            and block.space_before >= space_before * size
            and block.space_after >= _HEADING_SPACE_AFTER * size
            and not _is_bullet(block.lines[0].text)
        ):
            return self._bold_level
        return 0

    def emit(self, builder: DocumentBuilder) -> None:
        """Add every block to ``builder`` as a heading, table, list item, quote or paragraph."""
        previous_list = previous_heading = False
        for block in self._blocks:
            page = block.lines[0].page
            if block.table is not None:
                builder.table(block.table, page=page)
                previous_list = previous_heading = False
                continue
            text = self._join(block.lines)
            level = self._heading_level(block, previous_heading)
            previous_heading = bool(level)
            marker = _marker(text)
            if level:
                builder.heading(text, level, page=page)
                marker = None
            elif marker:
                depth = self._depth(block.lines[0].x0)
                number = int(marker.group(3)) if marker.group(3) else None
                builder.list_item(text[marker.end() :], depth=depth, number=number, page=page)
            elif self._is_quote(block) and not previous_list:
                builder.quote(text, page=page)
            else:
                builder.paragraph(text, page=page)
            # a list item, or an indented block right after one, keeps the list context
            indented = block.lines[0].x0 > self._body_left + 3
            previous_list = not level and (bool(marker) or (previous_list and indented))

    def _is_quote(self, block: _Block) -> bool:
        """Indented from the body margin on the left, and on the right too when it wraps."""
        left = min(line.x0 for line in block.lines)
        right = max(line.x1 for line in block.lines)
        return left >= self._body_left + _QUOTE_INDENT and (
            len(block.lines) == 1 or right <= self._body_right - _QUOTE_INDENT / 2
        )

    def _depth(self, x0: float) -> int:
        return sum(position < round(x0) - 3 for position in self._marker_positions)

    def _join(self, lines: list[Line]) -> str:
        """The block's text; words split by end-of-line hyphenation are rejoined."""
        text = lines[0].text
        for previous, line in itertools.pairwise(lines):
            if previous.hyphenated:
                text = rejoin(text, line.text, self._compounds)
            else:
                text += " " + line.text
        return text
