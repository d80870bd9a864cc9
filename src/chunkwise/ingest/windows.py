"""Passage windows: the stretches of a long chunk that are embedded in its place (or beside it).

A sentence embedder reads a chunk of 2,000 characters (about 450 tokens) as one point, and a question
about one paragraph of it lies far from that point; past the model's 512 tokens it does not read the end
at all. So with ``retrieval.windows = N`` (64 by default) each chunk longer than ``N`` tokens is embedded
as windows of ``N`` tokens, end to end (with ``retrieval.window_overlap = true`` half a window apart:
every token in two windows but at the ends, twice as many), each preceded by the chunk's header as the
chunk is, and dense retrieval scores a chunk by its best vector: whole or window (the MaxP of passage
retrieval), a candidate that BM25 alone found included. By default (``retrieval.embed_whole = false``) a
chunk that has windows is not embedded whole: its vector (for redundancy removal and the stores'
whole-vector indexes) is the normalised mean of its windows'; with ``embed_whole = true`` it is embedded
beside them.
Chunks stay what they are: the windows only decide how a chunk is found.

Tokens are counted with the bundled WordPiece tokenizer (the vocabulary of the bundled BERT-family
embedders), and a window's ends are moved out to the nearest whitespace so that no word is cut, but by
at most half a window (:func:`reach`): text without spaces (Chinese, Japanese, minified code, a long
URL) is cut between tokens instead, or each of its windows would grow to the whole chunk.
"""

from __future__ import annotations

from chunkwise.chunking.tokens import TokenCounter


def reach(size: int) -> int:
    """How many tokens a ``size``-token window's end may move out to reach whitespace: half the window
    (at least one), so a window holds at most twice its size. Source code has runs of 10-30 tokens
    without a space (``client.messages.create(``); cutting them at an eighth of the window instead lost
    0.5 point of recall at 1,000 tokens on anthropic_code's tuning queries and 2.7 on its held-back
    ones, while half a window leaves the dev sets' windows as they were but for 134 of 2,713 chunks."""
    return max(size // 2, 1)


def window_spans(
    text: str, size: int, counter: TokenCounter, *, overlap: bool = True
) -> list[tuple[int, int]]:
    """Character spans of the windows of ``text``: ``size`` tokens each, starting every ``size // 2``
    tokens (every ``size`` without ``overlap``), the last one ending at the text's last token; none when
    the text has at most ``size`` tokens (the whole chunk's vector covers it). Each end moves out to the
    nearest whitespace within :func:`reach` tokens, else stays between two tokens."""
    if size < 2:
        raise ValueError(f"a window holds at least 2 tokens, not {size}")
    starts, ends = counter.token_spans(text)
    count = len(starts)
    if count <= size:
        return []
    step = size // 2 if overlap else size
    firsts = [*range(0, count - size, step), count - size]
    out = reach(size)
    spans: list[tuple[int, int]] = []
    for first in firsts:
        start, end = int(starts[first]), int(ends[first + size - 1])
        floor, ceiling = int(starts[max(first - out, 0)]), int(ends[min(first + size - 1 + out, count - 1)])
        moved = start
        while moved > floor and not text[moved - 1].isspace():
            moved -= 1
        start = moved if moved == 0 or text[moved - 1].isspace() else start
        moved = end
        while moved < ceiling and not text[moved].isspace():
            moved += 1
        end = moved if moved == len(text) or text[moved].isspace() else end
        if not spans or spans[-1] != (start, end):
            spans.append((start, end))
    return spans
