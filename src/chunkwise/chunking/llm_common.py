"""What the LLM-driven chunkers share: params, the model, cut offsets to chunks, the rule-based repair.

Every LLM-driven chunker ends the same way: the model's answer, once checked, becomes a list of *cut
offsets* in the document text, and :meth:`LLMChunker.finish` turns the spans between cuts into chunks
through the shared size enforcement (:func:`chunkwise.chunking.enforce.finalize`). So whatever the
model answered, the chunks have exact offsets, cover every non-whitespace character once, in order, and
never pass the hard maximum.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cached_property
from typing import ClassVar

from chunkwise.chunking.base import BaseChunker, ChunkerParams
from chunkwise.chunking.chunk import Chunk
from chunkwise.chunking.enforce import Piece, finalize
from chunkwise.chunking.llm_report import ChunkingRun
from chunkwise.chunking.measure import measure_for
from chunkwise.chunking.structure import table_header_context
from chunkwise.document import Document, UnitKind
from chunkwise.models.context import Models
from chunkwise.models.protocols import LLM, Message


@dataclasses.dataclass(frozen=True)
class LLMChunkerParams(ChunkerParams):
    """Settings every LLM-driven chunker takes on top of the common ones.

    ``llm``: an :class:`~chunkwise.models.protocols.LLM`, or a spec (``"openai:gpt-4o-mini"``) for the
    run's :class:`~chunkwise.models.Models` (``None``: its configured LLM, the bundled local model by
    default). Either way the calls are accounted in the run's ledger and bounded by its budget.
    Chunks are larger by default than for the rule-based chunkers (1,000 characters) and chunks under
    ``min_size`` (100) are merged, as W-RAC merges small, contextless chunks.
    """

    max_size: int = 1000
    min_size: int = 100
    llm: LLM | str | None = None


class LLMChunker(BaseChunker, ABC):
    """Shared plumbing: the model, resolved on first use, and the hand-off from cut offsets to chunks.

    Subclasses implement :meth:`run`, which returns the chunks together with the report of what the
    model answered and how the answer was checked.
    """

    Params: ClassVar[type[ChunkerParams]] = LLMChunkerParams
    params: LLMChunkerParams

    def __init__(self, *, models: Models | None = None, **params: object) -> None:
        super().__init__(models=models, **params)
        self._llm: LLM | None = None

    @property
    def llm(self) -> LLM:
        """The model, resolved through the run's model context (and loaded) on first use."""
        if self._llm is None:
            spec = self.params.llm
            if spec is None or isinstance(spec, str):
                self._llm = self.models.llm(spec)
            else:
                self._llm = self.models.adopt("llm", spec)
        return self._llm

    def chunk(self, doc: Document) -> list[Chunk]:
        """The chunks of ``doc`` (see :meth:`run` for the report)."""
        return self.run(doc).chunks if doc.text.strip() else []

    @abstractmethod
    def run(self, doc: Document) -> ChunkingRun:
        """Chunks and report for ``doc``; each LLM chunker implements its own planning here."""

    def finish(self, doc: Document, cuts: Sequence[int], hard: Sequence[int] = ()) -> list[Chunk]:
        """Chunks for the spans between ``cuts`` (offsets in ``doc.text``), sizes enforced.

        Out-of-range and repeated cuts are ignored. Small spans are merged with a neighbour, but never
        across a cut listed in ``hard``; spans over the maximum are split at the strongest boundary
        that fits, so the hard maximum holds whatever the model answered.
        """
        text = doc.text
        inside = {c for c in cuts if 0 < c < len(text)} | {c for c in hard if 0 < c < len(text)}
        hard_set = set(hard)
        pieces: list[Piece] = []
        group = start = 0
        for point in [*sorted(inside), len(text)]:
            pieces.append((start, point, group))
            group += point in hard_set
            start = point
        measure = measure_for(text, self.counter)
        # A table cut by the size limit keeps its header row beside the later parts, as in ``structure``.
        has_table = any(u.kind is UnitKind.TABLE for u in doc.units)
        context = table_header_context(doc) if has_table else None
        return finalize(doc, pieces, measure, self.params.limits(), self.levels, context=context)


class StructureRepair:
    """The deterministic fallback: chunk starts from the ``structure`` chunker, computed once per document."""

    def __init__(self, doc: Document, params: ChunkerParams) -> None:
        self._doc = doc
        self._params = params

    @cached_property
    def _starts(self) -> list[int]:
        from chunkwise.chunking import get_chunker

        p = self._params
        chunker = get_chunker("structure", max_size=p.max_size, min_size=p.min_size, unit=p.unit)
        return [chunk.start for chunk in chunker.chunk(self._doc)]

    def cuts(self, start: int, end: int) -> list[int]:
        """The structure chunker's chunk starts strictly inside ``(start, end)``."""
        return [s for s in self._starts if start < s < end]


def render_chat(llm: LLM, messages: Sequence[Message]) -> str:
    """``messages`` as the prompt text a completion continues, ending where the assistant's turn begins.

    Uses the backend's own chat template when it offers one (``render_chat``); otherwise ChatML, the
    template of SmolLM2 and of most instruction-tuned open models served behind completion endpoints.
    """
    own = getattr(llm, "render_chat", None)
    if callable(own):
        rendered = own(messages)
        if isinstance(rendered, str):
            return rendered
    turns = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"
