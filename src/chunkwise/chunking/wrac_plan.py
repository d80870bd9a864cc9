"""W-RAC chunk plans: the JSON an LLM answers, the rule check, and the resolution to exact offsets.

W-RAC (Allu et al., "Web Retrieval-Aware Chunking") asks the LLM for a *plan*, never for text: a list
of chunks, each an ordered array of unit ids, ``{"chunks": [["u1", "u2"], ["u1", "u3", "u4"]]}``.
This module is pure (no model): it checks a plan against the paper's rules and turns a valid plan into
cut offsets in the document text.

Rules, and how each is treated:

* every id exists (``unknown_id``); every *content* unit (any kind but heading) sits in exactly one
  chunk (``duplicate``, ``missing``), in document order (``order``);
* tables and code blocks are single units, so listing one in two chunks is a ``split_atomic`` error;
  a list or numbered procedure (a run of consecutive list items) must sit in one chunk unless the run
  alone passes the size limit (``split_list``);
* a chunk's content stays within the size limit unless it is one atomic unit or one list run
  (``oversize``);
* heading ids may repeat, as context; the paper wants every chunk to list its parent headings (three
  levels). A missing parent heading does not change any offset, so it is *filled* rather than rejected
  and reported as a note; so is a tiny chunk, which the shared size enforcement merges afterwards.

Resolution keeps the offsets and coverage invariants: a chunk is the span from its first to its last
content unit, and the headings that sit between two chunks in the text open the *next* chunk, so every
character lands in exactly one chunk. Headings listed as context do not enter the chunk text (that
would duplicate text and break ``doc.text[start:end] == chunk.text``): they become the chunk's section
path, which :func:`chunkwise.chunking.chunk.section_path` derives from the same heading hierarchy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkwise.chunking.lines import is_one_break
from chunkwise.document import ATOMIC_KINDS, Unit, UnitKind

#: JSON schema of a plan, given to the LLM's structured output.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunks": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}},
        }
    },
    "required": ["chunks"],
}

#: How many heading levels above a chunk the paper's hierarchy rule asks for.
HIERARCHY_DEPTH = 3


@dataclass(frozen=True, slots=True)
class PlanIssue:
    """One broken rule: a machine-readable ``code`` and a message naming the exact ids and chunks."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class PlanCheck:
    """The outcome of checking one plan.

    ``issues`` are rule violations (the plan is unusable while any remain); ``notes`` record what was
    filled in silently (missing parent headings); ``groups`` are the content-unit ids of each chunk,
    in plan order, which :func:`plan_boundaries` resolves once the check passes.
    """

    issues: tuple[PlanIssue, ...]
    notes: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]

    @property
    def ok(self) -> bool:
        """True when the plan breaks no rule."""
        return not self.issues


def content_units(units: Sequence[Unit]) -> list[Unit]:
    """The units a plan must place exactly once: all but headings (all of them if there is no other)."""
    content = [u for u in units if u.kind is not UnitKind.HEADING]
    return content or list(units)


def list_runs(units: Sequence[Unit], text: str) -> list[list[Unit]]:
    """Runs of list items that form one list or procedure (items separated by a single line break:
    ``\\n``, ``\\r\\n`` or a lone ``\\r``, see :mod:`chunkwise.chunking.lines`)."""
    runs: list[list[Unit]] = []
    for unit in units:
        if unit.kind is not UnitKind.LIST_ITEM:
            continue
        previous = runs[-1][-1] if runs else None
        if previous is not None and is_one_break(text, previous.end, unit.start):
            runs[-1].append(unit)
        else:
            runs.append([unit])
    return [run for run in runs if len(run) > 1]


def parse_plan(value: Any) -> tuple[list[list[str]], list[PlanIssue]]:
    """Read a decoded JSON value as a plan; shape problems become ``malformed`` issues.

    Accepts the schema's object form and, leniently, a bare list of lists. Non-string ids are dropped
    with an issue rather than coerced, since an id the model invented is as wrong as a missing one.
    """
    chunks = value.get("chunks") if isinstance(value, dict) else value
    if not isinstance(chunks, list):
        return [], [PlanIssue("malformed", 'the answer has no "chunks" array')]
    plan: list[list[str]] = []
    issues: list[PlanIssue] = []
    for number, group in enumerate(chunks, 1):
        if not isinstance(group, list):
            issues.append(PlanIssue("malformed", f"chunk {number} is not an array of ids"))
            continue
        ids = [item for item in group if isinstance(item, str)]
        if len(ids) != len(group):
            issues.append(PlanIssue("malformed", f"chunk {number} holds values that are not id strings"))
        plan.append(ids)
    return plan, issues


#: The longest invented id an issue quotes whole, and the most issues a re-prompt lists: a model that
#: invents thousands of long ids must not make the next prompt (and the report) as large.
MAX_QUOTED_ID = 40
MAX_DESCRIBED = 30


def _shown(uid: str) -> str:
    """``uid`` quoted, cut to :data:`MAX_QUOTED_ID` characters."""
    return repr(uid if len(uid) <= MAX_QUOTED_ID else uid[:MAX_QUOTED_ID] + "...")


def _id_ranges(ids: Sequence[str]) -> str:
    return ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")


def check_plan(
    plan: Sequence[Sequence[str]],
    units: Sequence[Unit],
    text: str,
    unit_tokens: Mapping[str, int],
    max_tokens: int,
) -> PlanCheck:
    """Check ``plan`` against the W-RAC rules for the window ``units`` (a contiguous run of a document).

    ``text`` is the document text (list runs are found from the separators between items);
    ``unit_tokens`` gives each unit's size, ``max_tokens`` the chunk size limit.
    """
    index = {u.id: i for i, u in enumerate(units)}
    by_id = {u.id: u for u in units}
    content = content_units(units)
    content_ids = {u.id for u in content}
    issues: list[PlanIssue] = []
    home: dict[str, int] = {}
    groups: list[list[str]] = []
    for number, group in enumerate(plan, 1):
        kept: list[str] = []
        for uid in group:
            if uid not in index:
                issues.append(PlanIssue("unknown_id", f"chunk {number}: unknown id {_shown(uid)}"))
            elif uid not in content_ids:
                continue
            elif uid in home:
                unit = by_id[uid]
                if home[uid] == number:
                    issues.append(PlanIssue("duplicate", f"{uid} is listed twice in chunk {number}"))
                elif unit.kind in ATOMIC_KINDS:
                    where = f"chunks {home[uid]} and {number}"
                    issues.append(
                        PlanIssue("split_atomic", f"{unit.kind.value} {uid} is split between {where}")
                    )
                else:
                    issues.append(PlanIssue("duplicate", f"{uid} appears in chunks {home[uid]} and {number}"))
            else:
                home[uid] = number
                kept.append(uid)
        groups.append(kept)
    missing = [u.id for u in content if u.id not in home]
    if missing:
        issues.append(PlanIssue("missing", f"in no chunk: {_id_ranges(missing)}"))
    issues += _order_issues(groups, index)
    issues += _list_issues(units, text, home, unit_tokens, max_tokens)
    issues += _size_issues(groups, units, text, unit_tokens, max_tokens)
    notes = _hierarchy_notes(plan, groups, by_id)
    return PlanCheck(tuple(issues), tuple(notes), tuple(tuple(g) for g in groups if g))


def _order_issues(groups: Sequence[Sequence[str]], index: Mapping[str, int]) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    last: str | None = None
    for number, group in enumerate(groups, 1):
        for uid in group:
            if last is not None and index[uid] < index[last]:
                issues.append(
                    PlanIssue("order", f"chunk {number}: {uid} comes after {last}, against document order")
                )
            if last is None or index[uid] > index[last]:
                last = uid
    return issues


def _list_issues(
    units: Sequence[Unit],
    text: str,
    home: Mapping[str, int],
    unit_tokens: Mapping[str, int],
    max_tokens: int,
) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    for run in list_runs(units, text):
        chunks = sorted({home[u.id] for u in run if u.id in home})
        if len(chunks) > 1 and sum(unit_tokens.get(u.id, 0) for u in run) <= max_tokens:
            where = " and ".join(str(c) for c in chunks)
            issues.append(
                PlanIssue("split_list", f"list {run[0].id}-{run[-1].id} is split between chunks {where}")
            )
    return issues


def _size_issues(
    groups: Sequence[Sequence[str]],
    units: Sequence[Unit],
    text: str,
    unit_tokens: Mapping[str, int],
    max_tokens: int,
) -> list[PlanIssue]:
    index = {u.id: i for i, u in enumerate(units)}
    runs = {tuple(u.id for u in run) for run in list_runs(units, text)}
    issues: list[PlanIssue] = []
    for number, group in enumerate(groups, 1):
        if not group:
            continue
        first, last = min(index[g] for g in group), max(index[g] for g in group)
        span = units[first : last + 1]
        size = sum(unit_tokens.get(u.id, 0) for u in span)
        single = len(group) == 1 or tuple(group) in runs
        if size > max_tokens and not single:
            issues.append(
                PlanIssue(
                    "oversize", f"chunk {number} has about {size} tokens, over the limit of {max_tokens}"
                )
            )
    return issues


def _ancestors(unit: Unit, by_id: Mapping[str, Unit]) -> list[str]:
    chain: list[str] = []
    parent = unit.parent
    while parent is not None and parent in by_id and len(chain) < HIERARCHY_DEPTH:
        chain.append(parent)
        parent = by_id[parent].parent
    return chain


def _hierarchy_notes(
    plan: Sequence[Sequence[str]], groups: Sequence[Sequence[str]], by_id: Mapping[str, Unit]
) -> list[str]:
    notes: list[str] = []
    for number, (listed, group) in enumerate(zip(plan, groups, strict=True), 1):
        needed: list[str] = []
        for uid in group:
            for heading in _ancestors(by_id[uid], by_id):
                if heading not in listed and heading not in needed:
                    needed.append(heading)
        if needed:
            notes.append(f"chunk {number}: parent headings {', '.join(needed)} filled in as context")
    return notes


def plan_boundaries(groups: Sequence[Sequence[str]], units: Sequence[Unit]) -> list[int]:
    """Cut offsets for a checked plan: where each chunk after the first begins in the document text.

    A chunk runs from its first to its last content unit; the units between two chunks' content (the
    headings that open the next section) go to the next chunk, so the cut is the start of the first
    unit after the previous chunk's last content unit.
    """
    index = {u.id: i for i, u in enumerate(units)}
    cuts: list[int] = []
    for group in groups[:-1]:
        after = max(index[g] for g in group) + 1
        if after < len(units):
            cuts.append(units[after].start)
    return cuts


def describe(issues: Sequence[PlanIssue]) -> str:
    """The issues as numbered lines, the form the re-prompt shows the model: the first
    :data:`MAX_DESCRIBED`, then how many more there are."""
    lines = [f"{n}. {issue.message}" for n, issue in enumerate(issues[:MAX_DESCRIBED], 1)]
    if len(issues) > MAX_DESCRIBED:
        lines.append(f"{MAX_DESCRIBED + 1}. and {len(issues) - MAX_DESCRIBED} more issues like these")
    return "\n".join(lines)
