"""dsRAG semantic sectioning, the pure part: numbered lines, and the check and repair of an answer.

dsRAG ("Solving the out-of-context chunk problem") shows an LLM the document with numbered lines and
asks where each semantically cohesive section starts, with a title. The answer for a window of lines
``first..last`` is checked here: start lines must be integers inside the window and strictly
increasing. Repair drops what is out of range or malformed, sorts, removes duplicate starts, and makes
the first section start at the window's first line; every repair is recorded as an issue.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from chunkwise.chunking.lines import LinePattern

#: JSON schema of the answer, given to the LLM's structured output.
SECTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "start_line": {"type": "integer"}},
                "required": ["start_line"],
            },
        }
    },
    "required": ["sections"],
}

#: Longest title kept; longer ones are cut (a title is a header, not a summary).
MAX_TITLE_CHARS = 120


@dataclass(frozen=True, slots=True)
class SectionStart:
    """A section as the model placed it: its first line (0-based) and its title."""

    line: int
    title: str


#: A line break as :mod:`chunkwise.chunking.lines` defines it (``\n``, ``\r\n`` or a lone ``\r``).
_BREAK = LinePattern("<br>")


def line_starts(text: str) -> list[int]:
    """Offset of the first character of every line (a trailing line break opens no new line).

    Lines end as :mod:`chunkwise.chunking.lines` says: plain text keeps its file's endings, and an old
    Mac OS file's lone ``\\r`` ends lines that the model must see, and place section starts on, one by one.
    """
    return [0, *(m.end() for m in _BREAK.finditer(text, 0, len(text)) if m.end() < len(text))]


def numbered_lines(text: str, starts: list[int], first: int, last: int) -> str:
    """Lines ``first..last`` (inclusive) as ``[n] text``, skipping blank ones (their numbers stay).

    A line is shown without its line break (``\\n``, ``\\r\\n`` or ``\\r``): rows are joined by ``\\n``."""
    rows: list[str] = []
    for number in range(first, last + 1):
        end = starts[number + 1] if number + 1 < len(starts) else len(text)
        line = text[starts[number] : end].rstrip("\r\n")
        if line.strip():
            rows.append(f"[{number}] {line}")
    return "\n".join(rows)


def repair_sections(value: Any, first: int, last: int) -> tuple[list[SectionStart], list[str]]:
    """Valid, strictly increasing section starts within ``first..last`` from a decoded answer.

    Returns the repaired sections (the first always starts at ``first``; a title may be empty) and the
    list of problems found, empty when the answer was valid as given.
    """
    items = value.get("sections") if isinstance(value, dict) else value
    issues: list[str] = []
    if not isinstance(items, list):
        return [SectionStart(first, "")], ['the answer has no "sections" array']
    found: list[SectionStart] = []
    for number, item in enumerate(items, 1):
        line = item.get("start_line") if isinstance(item, dict) else None
        if not isinstance(line, int) or isinstance(line, bool):
            issues.append(f"section {number}: no integer start_line")
            continue
        if not first <= line <= last:
            issues.append(f"section {number}: start line {line} is outside lines {first}-{last}")
            continue
        title = item.get("title") if isinstance(item.get("title"), str) else ""
        found.append(SectionStart(line, " ".join(str(title).split())[:MAX_TITLE_CHARS]))
    if any(b.line <= a.line for a, b in itertools.pairwise(found)):
        issues.append("start lines are not strictly increasing (sorted, duplicates dropped)")
    repaired: list[SectionStart] = []
    for section in sorted(found, key=lambda s: s.line):
        if not repaired or section.line > repaired[-1].line:
            repaired.append(section)
    if not repaired or repaired[0].line != first:
        if found:
            issues.append(f"the first section does not start at line {first} (one was added)")
        repaired.insert(0, SectionStart(first, ""))
    return repaired, issues
