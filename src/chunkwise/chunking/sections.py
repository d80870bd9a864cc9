"""The ``sections`` chunker: dsRAG semantic sectioning, then any chunker inside each section.

The document's lines are numbered and shown to the LLM window by window (about ``window_chars``
characters each); it answers where each semantically cohesive section starts, with a title
(``{"sections": [{"title": ..., "start_line": n}]}``). Each answer is checked and repaired
(:mod:`chunkwise.chunking.sections_plan`). A window whose answer is unusable (no JSON, or no valid
start beyond the window's first line) falls back to the document's headings in that window, and
without headings to fixed spans of about ``max_size``.

Section starts are snapped to the start of the unit they fall in, so a table or list is never cut by a
section. Each section is then chunked on its own by the ``inner`` chunker (``structure`` by default; any
registered chunker, LLM-driven ones included), so section boundaries are boundaries every inner chunker
respects; the section title heads each chunk's section path, the chunk header used for retrieval.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from chunkwise.chunking.base import Chunker, ChunkerParams
from chunkwise.chunking.chunk import Chunk, ChunkBuilder
from chunkwise.chunking.lines import next_break
from chunkwise.chunking.llm_common import LLMChunker, LLMChunkerParams
from chunkwise.chunking.llm_report import FALLBACK, REPAIRED, VALID, ChunkingReport, ChunkingRun, WindowReport
from chunkwise.chunking.sections_plan import (
    SECTIONS_SCHEMA,
    SectionStart,
    line_starts,
    numbered_lines,
    repair_sections,
)
from chunkwise.document import Document, UnitKind
from chunkwise.errors import ConfigError, LLMResponseError
from chunkwise.models.context import Models
from chunkwise.models.protocols import Message

SYSTEM_PROMPT = """You split documents into semantically cohesive sections. You get the lines of a \
document, each prefixed with its line number in brackets. A section is a run of lines about one topic; \
it usually begins at a heading or where the subject changes. Give every section's first line number and \
a short descriptive title, in order.

Answer with JSON only, for example: \
{"sections": [{"title": "Baggage allowance", "start_line": 0}, {"title": "Fees", "start_line": 14}]}"""

#: Longest title derived from a section's first line when the model gave none.
DERIVED_TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Section:
    """A span of the document text (``start``/``end`` offsets) and its title."""

    start: int
    end: int
    title: str


@dataclasses.dataclass(frozen=True)
class SectionsParams(LLMChunkerParams):
    """``inner``: the chunker run inside each section (a registry name). ``window_chars``: characters of
    numbered lines shown to the model per call (dsRAG uses about 20,000)."""

    inner: str = "structure"
    window_chars: int = 20_000

    def validate(self) -> None:
        """Check the sectioning settings on top of the common ones."""
        super().validate()
        if self.window_chars < 200:
            raise ConfigError(f"window_chars must be at least 200, got {self.window_chars}")
        if self.inner == "sections":
            raise ConfigError("inner cannot be sections itself")


class SectionsChunker(LLMChunker):
    """dsRAG semantic sectioning, with a configurable chunker inside each section.

    ``inner_chunker`` overrides ``inner`` with a ready chunker object (any :class:`Chunker`); otherwise
    the inner chunker is built from the registry with this chunker's size settings.
    """

    name: ClassVar[str] = "sections"
    Params: ClassVar[type[ChunkerParams]] = SectionsParams
    params: SectionsParams

    def __init__(
        self, inner_chunker: Chunker | None = None, *, models: Models | None = None, **params: object
    ) -> None:
        super().__init__(models=models, **params)
        if inner_chunker is None:
            from chunkwise.chunking import get_chunker

            p = self.params
            llm_param: dict[str, Any] = {"llm": p.llm} if p.inner in ("wrac", "agentic", "logprob") else {}
            inner_chunker = get_chunker(
                p.inner,
                models=self.models,
                max_size=p.max_size,
                min_size=p.min_size,
                unit=p.unit,
                **llm_param,
            )
        self.inner: Chunker = inner_chunker

    def run(self, doc: Document) -> ChunkingRun:
        """Section ``doc``, chunk each section with the inner chunker, and report how sectioning went."""
        sections, reports = self.sections(doc)
        builder = ChunkBuilder(doc)
        chunks: list[Chunk] = []
        for section in sections:
            sub = _sub_document(doc, section.start, section.end)
            for inner in self.inner.chunk(sub):
                start, end = section.start + inner.start, section.start + inner.end
                chunk = builder.build(start, end, inner.tokens, inner.context)
                path = tuple(p for p in inner.section if p != section.title)
                chunks.append(dataclasses.replace(chunk, section=(section.title, *path[-2:])))
        stats = {"sections": len(sections), "inner": self.inner.name}
        return ChunkingRun(chunks, ChunkingReport(self.name, doc.id, tuple(reports), stats))

    def sections(self, doc: Document) -> tuple[list[Section], list[WindowReport]]:
        """The document's sections, in order and tiling the text, and one report per window."""
        text = doc.text
        starts = line_starts(text)
        chosen: list[SectionStart] = []
        reports: list[WindowReport] = []
        for index, (first, last) in enumerate(self._line_windows(text, starts)):
            found, outcome, issues = self._ask(text, starts, first, last)
            if outcome == FALLBACK:
                found = self._fallback(doc, starts, first, last)
            chosen += found
            end = starts[last + 1] if last + 1 < len(starts) else len(text)
            reports.append(WindowReport(index, starts[first], end, outcome, tuple(issues)))
        return self._to_sections(doc, starts, chosen), reports

    def _line_windows(self, text: str, starts: list[int]) -> list[tuple[int, int]]:
        """``(first line, last line)`` windows of about ``window_chars`` characters."""
        windows: list[tuple[int, int]] = []
        first = 0
        while first < len(starts):
            last = max(first, bisect.bisect_left(starts, starts[first] + self.params.window_chars) - 1)
            windows.append((first, last))
            first = last + 1
        return windows

    def _ask(
        self, text: str, starts: list[int], first: int, last: int
    ) -> tuple[list[SectionStart], str, list[str]]:
        """The model's sections for lines ``first..last``, the outcome, and the problems found."""
        numbered = numbered_lines(text, starts, first, last)
        messages = [Message("system", SYSTEM_PROMPT), Message("user", numbered)]
        try:
            budget = _answer_budget(numbered.count("\n") + 1)
            value = self.llm.structured(messages, SECTIONS_SCHEMA, max_tokens=budget, stage="chunk.sections")
        except LLMResponseError as exc:
            return [], FALLBACK, [f"no valid JSON: {exc.reason}"]
        found, issues = repair_sections(value, first, last)
        if len(found) == 1 and last - first > 1 and (issues or not found[0].title):
            return [], FALLBACK, [*issues, "no usable section start"]
        return found, REPAIRED if issues else VALID, issues

    def _fallback(self, doc: Document, starts: list[int], first: int, last: int) -> list[SectionStart]:
        """Sections at the document's headings within the window, else fixed spans of about ``max_size``."""
        low, high = starts[first], starts[last + 1] if last + 1 < len(starts) else len(doc.text)
        found = [SectionStart(first, "")]
        for unit in doc.units:
            if unit.kind is UnitKind.HEADING and low < unit.start < high:
                line = bisect.bisect_right(starts, unit.start) - 1
                found.append(SectionStart(line, unit.title))
        if len(found) > 1:
            return found
        step = self.params.max_size * (1 if self.params.unit == "chars" else 4)  # about max_size units
        next_mark = low + step
        for line in range(first + 1, last + 1):
            if starts[line] >= next_mark:
                found.append(SectionStart(line, ""))
                next_mark = starts[line] + step
        return found

    def _to_sections(self, doc: Document, starts: list[int], chosen: Sequence[SectionStart]) -> list[Section]:
        """Line starts to offsets snapped to unit starts; titles default to the section's first line."""
        text = doc.text
        unit_starts = [u.start for u in doc.units]
        offsets: list[tuple[int, str]] = []
        for mark in chosen:
            offset = starts[mark.line]
            at = bisect.bisect_right(unit_starts, offset) - 1
            if at >= 0 and doc.units[at].start < offset < doc.units[at].end:
                offset = doc.units[at].start
            if offsets and offset <= offsets[-1][0]:
                continue
            offsets.append((0 if not offsets else offset, mark.title))
        sections: list[Section] = []
        for i, (start, title) in enumerate(offsets):
            end = offsets[i + 1][0] if i + 1 < len(offsets) else len(text)
            sections.append(Section(start, end, title or _derived_title(text[start:end])))
        return sections


def _answer_budget(lines: int) -> int:
    """Output tokens allowed for the answer: about 16 per section, a section per four lines at most."""
    return min(1024, 48 + 16 * max(1, lines // 4))


def _derived_title(text: str) -> str:
    """The first non-blank line, without Markdown heading marks, cut to :data:`DERIVED_TITLE_CHARS`.

    Lines end as :mod:`chunkwise.chunking.lines` says (``\\n``, ``\\r\\n`` or a lone ``\\r``), as they
    do where the model placed the section: a form feed or U+2028, where ``str.splitlines`` would also
    break, is inside the line."""
    start = 0
    while start < len(text):
        end = next_break(text, start)
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line:
            return line.lstrip("#").strip()[:DERIVED_TITLE_CHARS]
        start = end + 1
    return ""


def _sub_document(doc: Document, start: int, end: int) -> Document:
    """The slice ``doc.text[start:end]`` as a document of its own, with the units inside it re-based.

    Parents outside the slice are dropped (the section title replaces them in the chunks' paths).
    """
    inside = [u for u in doc.units if start <= u.start and u.end <= end]
    ids = {u.id for u in inside}
    units = tuple(
        dataclasses.replace(
            u, start=u.start - start, end=u.end - start, parent=u.parent if u.parent in ids else None
        )
        for u in inside
    )
    return Document(
        id=doc.id,
        text=doc.text[start:end],
        title=doc.title,
        source=doc.source,
        format=doc.format,
        metadata=doc.metadata,
        units=units,
    )
