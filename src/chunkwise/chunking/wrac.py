"""The ``wrac`` chunker: an LLM plans chunks over unit ids, never writing text (W-RAC, Allu et al.).

The model sees only the document's skeleton: per unit its id, kind, heading level, parent heading, size
in tokens and the first few words (``preview_words``). It answers a plan, ``{"chunks": [[ids], ...]}``,
through the backend's structured output. The plan is checked against the rules in
:mod:`chunkwise.chunking.wrac_plan`; on a violation the model is asked once more with the exact errors,
and if that answer fails too the window is chunked by the deterministic ``structure`` chunker's rules.
Every window's outcome (valid / valid after re-prompt / repaired, with the errors) goes into the run's
:class:`~chunkwise.chunking.llm_report.ChunkingReport`.

Long documents are planned in windows of the skeleton (``window_tokens`` of outline each, cut before a
heading where possible and never inside a list); window edges are chunk boundaries. The checked plan
becomes cut offsets, and the shared size enforcement guarantees the hard maximum whatever was planned.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, ClassVar

from chunkwise.chunking.base import ChunkerParams
from chunkwise.chunking.llm_common import LLMChunker, LLMChunkerParams, StructureRepair
from chunkwise.chunking.llm_report import (
    REPAIRED,
    VALID,
    VALID_AFTER_REPROMPT,
    ChunkingReport,
    ChunkingRun,
    WindowReport,
)
from chunkwise.chunking.wrac_plan import (
    PLAN_SCHEMA,
    PlanCheck,
    PlanIssue,
    check_plan,
    describe,
    list_runs,
    parse_plan,
    plan_boundaries,
)
from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import ConfigError, LLMResponseError
from chunkwise.models.protocols import Message

SYSTEM_PROMPT = """You are a chunk planner for a retrieval system. You get the outline of a document: one \
line per unit with its id, kind, heading level (L1-L6), parent heading, size and first words. \
You never see or write the text: you group unit ids into chunks.

Rules:
1. Every unit that is not a heading goes into exactly one chunk, and the chunks keep document order.
2. Start each chunk with the ids of its parent headings (up to three levels); heading ids may repeat.
3. Never split a table, a code block, or a list or numbered procedure across chunks.
4. Keep each chunk's total size under {max_size}; merge small or contextless units with their neighbours.

Answer with JSON only, for example: {{"chunks": [["u1", "u2", "u3"], ["u1", "u4", "u5", "u6"]]}}"""

REPROMPT = """That plan breaks these rules:
{errors}
Answer again with the complete corrected plan for the same outline: every non-heading id exactly once, \
in document order, tables and lists kept whole."""


def skeleton_line(unit: Unit, size: int, preview_words: int) -> str:
    """One outline row: ``u7 list_item parent=u3 size=24: first words ...`` (size in the chunk unit)."""
    head = f"{unit.id} {unit.kind.value}"
    if unit.kind is UnitKind.HEADING:
        head += f" L{unit.level}"
    if unit.parent:
        head += f" parent={unit.parent}"
    preview = " ".join(unit.text.split()[:preview_words]) if preview_words else ""
    return f"{head} size={size}" + (f": {preview}" if preview else "")


def plan_windows(units: Sequence[Unit], costs: Sequence[int], text: str, budget: int) -> list[list[Unit]]:
    """Split ``units`` into windows whose outline rows cost at most ``budget`` tokens each.

    A window is cut before the last heading of its second half where there is one, and never inside
    a list run (the cut moves to the run's start), so that windows follow the document's sections.
    """
    in_run = {u.id: run[0].id for run in list_runs(units, text) for u in run[1:]}
    cost_of = {u.id: cost for u, cost in zip(units, costs, strict=True)}
    windows: list[list[Unit]] = []
    current: list[Unit] = []
    used = 0
    for unit in units:
        cost = cost_of[unit.id]
        if current and used + cost > budget:
            cut = _window_cut(current, unit, in_run)
            windows.append(current[:cut])
            current = current[cut:]
            used = sum(cost_of[u.id] for u in current)
        current.append(unit)
        used += cost
    if current:
        windows.append(current)
    return windows


def _window_cut(window: Sequence[Unit], following: Unit, in_run: dict[str, str]) -> int:
    """Where to end ``window`` (``following`` did not fit): before its last heading in the second half;
    else before the list run that ``following`` continues, where the run starts inside the window; else
    at its end."""
    for i in range(len(window) - 1, len(window) // 2, -1):
        if window[i].kind is UnitKind.HEADING:
            return i
    if following.id in in_run:
        run_start = next((i for i, u in enumerate(window) if u.id == in_run[following.id]), 0)
        if run_start > 0:
            return run_start
    return len(window)


@dataclasses.dataclass(frozen=True)
class WracParams(LLMChunkerParams):
    """``preview_words``: words of each unit shown in the outline (0: none). ``window_size``: outline
    tokens (of the model) per planning call. ``reprompt``: ask once more, naming the errors, before
    repairing by rules."""

    preview_words: int = 12
    window_size: int = 1500
    reprompt: bool = True

    def validate(self) -> None:
        """Check the W-RAC settings on top of the common ones."""
        super().validate()
        if self.preview_words < 0:
            raise ConfigError(f"preview_words must be >= 0, got {self.preview_words}")
        if self.window_size < 64:
            raise ConfigError(f"window_size must be at least 64 tokens, got {self.window_size}")


class WracChunker(LLMChunker):
    """W-RAC: LLM chunk plans over unit ids, checked, re-asked once, repaired by rules if still wrong."""

    name: ClassVar[str] = "wrac"
    Params: ClassVar[type[ChunkerParams]] = WracParams
    params: WracParams

    def run(self, doc: Document) -> ChunkingRun:
        """Plan ``doc`` window by window, check and repair the plans, and resolve them to chunks."""
        repair = StructureRepair(doc, self.params)
        if not doc.units:
            whole = WindowReport(0, 0, len(doc.text), REPAIRED, ("the document has no units to plan",))
            chunks = self.finish(doc, repair.cuts(0, len(doc.text)))
            return ChunkingRun(chunks, ChunkingReport(self.name, doc.id, (whole,)))
        sizes = self.counter.count_batch([u.text for u in doc.units])
        tokens = {u.id: size for u, size in zip(doc.units, sizes, strict=True)}
        lines = {u.id: skeleton_line(u, tokens[u.id], self.params.preview_words) for u in doc.units}
        costs = [self.llm.count_tokens(lines[u.id]) + 1 for u in doc.units]
        windows = plan_windows(doc.units, costs, doc.text, self.params.window_size)
        cuts: list[int] = []
        reports: list[WindowReport] = []
        for index, window in enumerate(windows):
            start, end = window[0].start, window[-1].end
            if index:
                cuts.append(start)
            outline = "\n".join(lines[u.id] for u in window)
            window_cuts, report = self._plan_window(doc, window, outline, tokens, repair)
            cuts += window_cuts
            reports.append(WindowReport(index, start, end, *report))
        stats = {"windows": len(windows), "units": len(doc.units)}
        return ChunkingRun(self.finish(doc, cuts), ChunkingReport(self.name, doc.id, tuple(reports), stats))

    def _plan_window(
        self,
        doc: Document,
        window: Sequence[Unit],
        outline: str,
        tokens: dict[str, int],
        repair: StructureRepair,
    ) -> tuple[list[int], tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """Cut offsets inside one window and its (outcome, issues, notes)."""
        messages = [
            Message("system", SYSTEM_PROMPT.format(max_size=self.params.max_size)),
            Message("user", f"Outline:\n{outline}"),
        ]
        answer, check = self._ask(doc, window, messages, tokens)
        issues = [i.message for i in check.issues]
        if check.ok:
            return plan_boundaries(check.groups, window), (VALID, (), check.notes)
        if self.params.reprompt:
            retry = [
                *messages,
                Message("assistant", answer),
                Message("user", REPROMPT.format(errors=describe(check.issues))),
            ]
            _, second = self._ask(doc, window, retry, tokens)
            issues += [f"after re-prompt: {i.message}" for i in second.issues]
            if second.ok:
                cuts = plan_boundaries(second.groups, window)
                return cuts, (VALID_AFTER_REPROMPT, tuple(issues), second.notes)
        cuts = repair.cuts(window[0].start, window[-1].end)
        return cuts, (REPAIRED, tuple(issues), ())

    def _ask(
        self, doc: Document, window: Sequence[Unit], messages: list[Message], tokens: dict[str, int]
    ) -> tuple[str, PlanCheck]:
        """One structured call; returns the answer as text (for a re-prompt) and its check."""
        budget = 16 + 6 * len(window)
        try:
            value: Any = self.llm.structured(messages, PLAN_SCHEMA, max_tokens=budget, stage="chunk.wrac")
        except LLMResponseError as exc:
            issue = PlanIssue("malformed", f"no valid JSON plan: {exc.reason}")
            return "(no valid JSON)", PlanCheck((issue,), (), ())
        plan, shape_issues = parse_plan(value)
        check = check_plan(plan, window, doc.text, tokens, self.params.max_size)
        combined = PlanCheck(tuple(shape_issues) + check.issues, check.notes, check.groups)
        return json.dumps(value, ensure_ascii=False), combined
