"""Align text an LLM wrote back onto the source it was asked to copy.

The agentic baseline asks the model to rewrite a document as chunks. The model may reflow whitespace,
drop passages, reword or invent text; only the source text may enter a chunk. Each piece the model
wrote is located in the source after collapsing whitespace on both sides: first by exact search from
where the previous piece ended, then, failing that, by fuzzy matching (``difflib``) in a window ahead of
that point. What cannot be matched is counted as *unaligned* characters: the hallucination risk W-RAC
removes by never asking for text.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

#: Matching blocks shorter than this (in normalised characters) are noise, not evidence of a copy.
MIN_BLOCK = 8
#: A fuzzy match must cover at least this share of the piece to count as aligned.
MIN_COVERAGE = 0.5


@dataclass(frozen=True, slots=True)
class Alignment:
    """Where each piece landed in the source, and what could not be placed.

    ``starts`` are source offsets where aligned pieces begin (increasing); ``exact``/``fuzzy``/``failed``
    count pieces by how they aligned; ``unaligned_chars`` counts the normalised characters of the
    model's text that match nothing in the source.
    """

    starts: tuple[int, ...]
    exact: int
    fuzzy: int
    failed: int
    unaligned_chars: int


def _normalise(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and each output char's source offset."""
    out: list[str] = []
    where: list[int] = []
    in_space = True  # drops leading whitespace
    for offset, char in enumerate(text):
        if char.isspace():
            if not in_space:
                out.append(" ")
                where.append(offset)
            in_space = True
        else:
            out.append(char)
            where.append(offset)
            in_space = False
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def align_pieces(source: str, pieces: Sequence[str]) -> Alignment:
    """Locate each of ``pieces`` in ``source`` in order (see the module docstring)."""
    norm, where = _normalise(source)
    cursor = 0
    starts: list[int] = []
    exact = fuzzy = failed = unaligned = 0
    for piece in pieces:
        target, _ = _normalise(piece)
        if not target:
            continue
        found = norm.find(target, cursor)
        if found >= 0:
            exact += 1
            starts.append(where[found])
            cursor = found + len(target)
            continue
        window_end = min(len(norm), cursor + 2 * len(target) + 200)
        matcher = difflib.SequenceMatcher(None, norm[cursor:window_end], target, autojunk=False)
        blocks = [b for b in matcher.get_matching_blocks() if b.size >= MIN_BLOCK]
        matched = sum(b.size for b in blocks)
        if blocks and matched >= MIN_COVERAGE * len(target):
            fuzzy += 1
            starts.append(where[cursor + blocks[0].a])
            cursor += blocks[-1].a + blocks[-1].size
            unaligned += len(target) - matched
        else:
            failed += 1
            unaligned += len(target)
    return Alignment(tuple(starts), exact, fuzzy, failed, unaligned)
