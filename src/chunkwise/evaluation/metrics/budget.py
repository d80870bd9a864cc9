"""Token budgets: score what a reader would be handed when the retrieved context is cut at N tokens.

``recall@400t`` is ``recall`` over the ranked items cut to a context of 400 tokens, so chunkings of
different sizes, relevant segments and different ``k`` compare at equal context cost: ``recall@5`` rewards
large chunks (five of 2,000 characters hold more than five of 200), a budget does not.

A token is :data:`CHARS_PER_TOKEN` characters of the source text: the usual rule of thumb for English
with GPT-style BPE vocabularies (cl100k averages close to 4 characters a token on English prose; code and
numbers run shorter). A character count needs only the items' offsets, so a budget metric is recomputed
from an evaluation's JSON alone, needs no tokenizer, and means the same for every model.

The cut: items are taken in rank order; each costs its full length in characters, overlapping items
again (the reader receives the text again); the item that crosses the budget is cut at it, its first
characters kept; later items are dropped. The retrieval must reach that far: :func:`items_to_fill` is
how deep a runner retrieves so that a chunking of small chunks fills the budget as a coarse one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from chunkwise.evaluation.items import Retrieved

#: Characters per token of a budget.
CHARS_PER_TOKEN = 4


def within_budget(retrieved: Sequence[Retrieved], tokens: int) -> tuple[Retrieved, ...]:
    """The ranked items that fit in ``tokens`` x :data:`CHARS_PER_TOKEN` characters, the last one cut."""
    left = tokens * CHARS_PER_TOKEN
    kept: list[Retrieved] = []
    for item in retrieved:
        if left <= 0:
            break
        length = item.end - item.start
        kept.append(item if length <= left else replace(item, end=item.start + left))
        left -= min(length, left)
    return tuple(kept)


def items_to_fill(lengths: Sequence[int], tokens: int) -> int:
    """How many items are sure to fill ``tokens`` x :data:`CHARS_PER_TOKEN` characters, whichever of
    the items of ``lengths`` are retrieved: the count of the shortest ones whose lengths reach the budget
    (all of them when even together they fall short)."""
    need = tokens * CHARS_PER_TOKEN
    total = 0
    for count, size in enumerate(sorted(lengths), start=1):
        total += size
        if total >= need:
            return count
    return len(lengths)
