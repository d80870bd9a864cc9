"""The ``agentic`` chunker: the LLM rewrites the document as chunks of text (the baseline W-RAC replaces).

Agentic chunking hands the model the text and asks it to write it back out, split into self-contained
chunks, here separated by a line holding only :data:`SEPARATOR`. Every source token becomes an output
token (W-RAC's cost argument), and the model may alter what it copies (its hallucination argument). The
pieces it wrote are aligned back onto the source (:mod:`chunkwise.chunking.alignment`): each aligned
piece's start becomes a cut, text the model dropped stays in the chunk before it, and text it changed
or invented is counted as unaligned and never enters a chunk. Long documents are rewritten in windows
of about ``window_size`` tokens of the model, cut at paragraph breaks; window edges are chunk cuts.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from chunkwise.chunking.alignment import align_pieces
from chunkwise.chunking.base import ChunkerParams
from chunkwise.chunking.boundaries import PARAGRAPH
from chunkwise.chunking.llm_common import LLMChunker, LLMChunkerParams
from chunkwise.chunking.llm_report import REPAIRED, VALID, ChunkingReport, ChunkingRun, WindowReport
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.models.protocols import Message

#: The line the model writes between two chunks.
SEPARATOR = "<<<CHUNK>>>"

SYSTEM_PROMPT = f"""You are a document chunker for a retrieval system. Rewrite the user's document as a \
sequence of self-contained chunks that each cover one topic, copying the text exactly: do not add, \
remove, reword or summarise anything. Write a line containing only {SEPARATOR} between two chunks."""

_SEPARATOR = re.compile(re.escape(SEPARATOR))


def split_answer(answer: str) -> list[str]:
    """The non-empty pieces of a rewritten document, split at every separator (on a line or inline)."""
    return [piece for piece in _SEPARATOR.split(answer) if piece.strip()]


@dataclasses.dataclass(frozen=True)
class AgenticParams(LLMChunkerParams):
    """``window_size``: model tokens of source text rewritten per call (the answer is about as long)."""

    window_size: int = 1024

    def validate(self) -> None:
        """Check the agentic settings on top of the common ones."""
        super().validate()
        if self.window_size < 16:
            raise ConfigError(f"window_size must be at least 16 tokens, got {self.window_size}")


class AgenticChunker(LLMChunker):
    """Agentic chunking: the model writes the chunks; they are aligned back to the source text."""

    name: ClassVar[str] = "agentic"
    Params: ClassVar[type[ChunkerParams]] = AgenticParams
    params: AgenticParams

    def windows(self, text: str) -> list[tuple[int, int]]:
        """Spans of at most ``window_size`` model tokens, ending at paragraph breaks where possible."""
        spans: list[tuple[int, int]] = []
        start = 0
        while start < len(text):
            end = self._window_end(text, start, start + 4 * self.params.window_size)  # about 4 chars a token
            while end - start > 1 and self.llm.count_tokens(text[start:end]) > self.params.window_size:
                end = self._window_end(text, start, start + (end - start) * 3 // 4)
            spans.append((start, end))
            start = end
        return spans

    @staticmethod
    def _window_end(text: str, start: int, reach: int) -> int:
        """``reach`` (within the text) moved back to the last paragraph break after ``start``, if any."""
        if reach >= len(text):
            return len(text)
        return PARAGRAPH.last_cut(text, start, max(reach, start + 1)) or max(reach, start + 1)

    def run(self, doc: Document) -> ChunkingRun:
        """Rewrite ``doc`` window by window, align the pieces, and build the chunks."""
        cuts: list[int] = []
        reports: list[WindowReport] = []
        totals = {"pieces": 0, "exact": 0, "fuzzy": 0, "failed": 0, "unaligned_chars": 0}
        for index, (start, end) in enumerate(self.windows(doc.text)):
            if index:
                cuts.append(start)
            source = doc.text[start:end]
            messages = [Message("system", SYSTEM_PROMPT), Message("user", source)]
            budget = self.llm.count_tokens(source) * 5 // 4 + 64
            pieces = split_answer(self.llm.chat(messages, max_tokens=budget, stage="chunk.agentic"))
            alignment = align_pieces(source, pieces)
            cuts += [start + s for s in alignment.starts if s > 0]
            counts = {
                "pieces": len(pieces),
                "exact": alignment.exact,
                "fuzzy": alignment.fuzzy,
                "failed": alignment.failed,
                "unaligned_chars": alignment.unaligned_chars,
            }
            for key, value in counts.items():
                totals[key] += value
            issues: list[str] = []
            if alignment.failed:
                issues.append(f"{alignment.failed} of {len(pieces)} pieces match no source text")
            if alignment.unaligned_chars:
                issues.append(f"{alignment.unaligned_chars} characters written match no source text")
            if not pieces:
                issues.append("the answer holds no text")
            outcome = VALID if alignment.exact + alignment.fuzzy else REPAIRED
            reports.append(WindowReport(index, start, end, outcome, tuple(issues)))
        report = ChunkingReport(self.name, doc.id, tuple(reports), totals)
        return ChunkingRun(self.finish(doc, cuts), report)
