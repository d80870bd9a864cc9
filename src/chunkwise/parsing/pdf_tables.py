"""Tables of PDF pages drawn with horizontal rules, rebuilt from rule positions and character positions.

Step 3 of :mod:`chunkwise.parsing.pdf`. A run of at least two rules with the same horizontal extent,
where each band between two rules holds only body-size lines inside that extent, closer than an em to
both rules, that split into at least two columns, is a table. Text runs sharing a baseline are merged
into table lines and cut into cells at PDFium run boundaries and at gaps wider than a word space;
columns are the left edges shared by cells of several lines. A row starts at a line that fills at least
three quarters of the columns and does not continue a hyphenated cell (a wrapped cell continues on
lines that fill fewer); when rows follow the second rule, the lines above it form the header row. Rows
set right under a table's last rule down to the page end belong to the table (it runs on to the next
page, where the repeated header starts a new table).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from chunkwise.parsing.pdf_layout import HEADING_SIZE_RATIO, Line, Rule, rejoin

#: Smallest horizontal gap between two table columns, in ems: wider than a ragged-right word space
#: (a third of an em), narrower than the padding LaTeX and word processors put between columns.
_COLUMN_GAP = 0.45

#: A table line filling at least this share of the columns starts a new row; lines filling fewer
#: carry the wrapped ends of the row's cells (cells are top-aligned, so a row's first line is fullest).
_ROW_FILL = 0.75
#: How far (share of the table width) overfull cells may run past a table's rules on the right.
_TABLE_OVERSHOOT = 0.15
#: Marks, inside a merged table line, where one PDFium text run ends and the next begins.
_RUN_BREAK = "\x00"
#: Marks, inside a merged table line, a run that ended in end-of-line hyphenation.
_SOFT_HYPHEN = "\xad"


def find_tables(
    lines: list[Line], rules: dict[int, list[Rule]], body_size: float
) -> dict[int, tuple[list[Line], list[list[str]]]]:
    """Tables keyed by ``id`` of their first line: the lines they consume and their rows (step 3)."""
    tables: dict[int, tuple[list[Line], list[list[str]]]] = {}
    by_page: dict[int, list[Line]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    for page, page_rules in rules.items():
        page_lines = by_page.get(page, [])
        for group in _rule_groups(page_rules, page_lines, body_size):
            inside = [line for line in page_lines if group[0].y < line.top and line.bottom < group[-1].y]
            inside += _continuation(page_lines, group[-1], body_size)
            # the first rule band is a header when rows follow the second rule
            has_body = any(line.top > group[1].y for line in inside)
            rows = _table_rows(inside, header_end=group[1].y if has_body else None)
            if rows:
                tables[id(inside[0])] = (inside, rows)
    return tables


def _fits(line: Line, rule: Rule, body_size: float) -> bool:
    """A body-size line starting inside the rule's extent; overfull cells may overshoot it on the right."""
    overshoot = _TABLE_OVERSHOOT * (rule.x1 - rule.x0)
    return (
        rule.x0 - 2 <= line.x0
        and line.x1 <= rule.x1 + overshoot
        and line.size < body_size * HEADING_SIZE_RATIO
    )


def _continuation(lines: list[Line], rule: Rule, body_size: float) -> list[Line]:
    """Rows of a table that runs on to the next page: lines hanging from its last rule to the page end.

    A table closed by a rule is followed by paragraph space; rows set right under the last rule, one
    line pitch apart and inside its extent, continue the table.
    """
    below = sorted((line for line in lines if line.top > rule.y), key=lambda line: line.top)
    rows: list[Line] = []
    edge = rule.y
    for line in below:
        if not _fits(line, rule, body_size) or line.top - edge > line.size:
            break
        rows.append(line)
        edge = max(edge, line.bottom)
    return rows


def _rule_groups(rules: list[Rule], lines: list[Line], body_size: float) -> Iterator[list[Rule]]:
    """Runs of rules with one horizontal extent whose bands hold body-size lines inside that extent,
    set close to both rules (text set apart from a rule by paragraph space is not in a table)."""
    extents: dict[tuple[int, int], list[Rule]] = {}
    for rule in rules:
        extents.setdefault((round(rule.x0 / 3), round(rule.x1 / 3)), []).append(rule)
    for same in extents.values():
        run: list[Rule] = same[:1]
        for upper, lower in itertools.pairwise(same):
            band = [line for line in lines if upper.y < line.top and line.bottom < lower.y]
            inside = all(_fits(line, upper, body_size) for line in band)
            tight = not band or (
                min(line.top for line in band) - upper.y < band[0].size
                and lower.y - max(line.bottom for line in band) < band[0].size
            )
            if (
                inside
                and tight
                and (not band or len(_columns([_runs(line) for line in _visual_lines(band)])) >= 2)
            ):
                run.append(lower)
                continue
            if len(run) >= 2:
                yield run
            run = [lower]
        if len(run) >= 2:
            yield run


def _runs(line: Line) -> list[tuple[float, str]]:
    """The line's cell runs: (start x, text), split at PDFium run boundaries and at column-wide gaps."""
    runs: list[tuple[float, str]] = []
    text: list[str] = []
    start, end = 0.0, float("-inf")
    for char, left, right in line.glyphs:
        if char == _RUN_BREAK or (char != " " and left - end >= _COLUMN_GAP * line.size):
            if "".join(text).strip():
                runs.append((start, " ".join("".join(text).split())))
            text, start = [], left
            if char == _RUN_BREAK:
                end = float("-inf")
                continue
        if not text and char == " ":
            continue
        if not text:
            start = left
        text.append(char)
        end = max(end, right) if char != " " else end
    if "".join(text).strip():
        runs.append((start, " ".join("".join(text).split())))
    return runs


def _columns(runs: list[list[tuple[float, str]]]) -> list[float]:
    """Column start positions: left edges shared by cell runs of at least two lines (one for short tables)."""
    starts = sorted(start for line_runs in runs for start, _ in line_runs)
    clusters: list[list[float]] = []
    for start in starts:
        if clusters and start - clusters[-1][-1] <= 3:
            clusters[-1].append(start)
        else:
            clusters.append([start])
    needed = 2 if len(runs) > 2 else 1
    return [cluster[0] for cluster in clusters if len(cluster) >= needed]


def _table_rows(lines: list[Line], header_end: float | None) -> list[list[str]]:
    """Cell texts row by row; wrapped cells are merged into the row they continue (step 3)."""
    lines = _visual_lines(lines)
    runs = [_runs(line) for line in lines]
    columns = _columns(runs)
    if len(columns) < 2:
        return []
    cells_per_line = [_line_cells(line_runs, columns) for line_runs in runs]
    filled = [sum(bool(cell) for cell in cells) for cells in cells_per_line]
    widest = max(filled)
    rows: list[list[str]] = []
    in_header = header_end is not None
    for line, cells, count in zip(lines, cells_per_line, filled, strict=True):
        header_line = header_end is not None and line.bottom < header_end
        hyphen_carried = bool(rows) and any(
            new and old.endswith(_SOFT_HYPHEN) for old, new in zip(rows[-1], cells, strict=True)
        )
        full = count >= _ROW_FILL * widest and not hyphen_carried
        starts_row = not rows or (full and not header_line) or (in_header and not header_line)
        if starts_row:
            rows.append(cells)
        else:
            rows[-1] = [_join_wrapped(old, new) for old, new in zip(rows[-1], cells, strict=True)]
        in_header = header_line
    return [[cell.replace(_SOFT_HYPHEN, "") for cell in row] for row in rows]


def _join_wrapped(head: str, tail: str) -> str:
    """Join a wrapped cell's lines; a line that ended in hyphenation joins without a space."""
    if head.endswith(_SOFT_HYPHEN):
        return rejoin(head[:-1], tail, frozenset())
    return f"{head} {tail}".strip()


def _visual_lines(lines: list[Line]) -> list[Line]:
    """Merge the text runs that share a baseline (PDFium emits a table cell per run) into page lines."""
    merged: list[Line] = []
    for line in sorted(lines, key=lambda item: (round(item.top), item.x0)):
        glyphs = [*line.glyphs, (_SOFT_HYPHEN, line.x1, line.x1)] if line.hyphenated else list(line.glyphs)
        if merged and abs(merged[-1].top - line.top) < 2:
            last = merged[-1]
            last.glyphs = [*last.glyphs, (_RUN_BREAK, line.x0, line.x0), *glyphs]
            last.x1, last.bottom = max(last.x1, line.x1), max(last.bottom, line.bottom)
        else:
            merged.append(Line(**{**line.__dict__, "glyphs": glyphs}))
    return merged


def _line_cells(runs: list[tuple[float, str]], columns: list[float]) -> list[str]:
    """Assign each run to the last column starting at or before it."""
    cells: list[list[str]] = [[] for _ in columns]
    for start, text in runs:
        index = max((i for i, column in enumerate(columns) if column <= start + 3), default=0)
        cells[index].append(text)
    return [" ".join(cell) for cell in cells]
