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
embedders), and a window's ends are moved out to the nearest whitespace so that no word is cut.
"""

from __future__ import annotations

from chunkwise.chunking.tokens import TokenCounter


def window_spans(
    text: str, size: int, counter: TokenCounter, *, overlap: bool = True
) -> list[tuple[int, int]]:
    """Character spans of the windows of ``text``: ``size`` tokens each, starting every ``size // 2``
    tokens (every ``size`` without ``overlap``), the last one ending at the text's last token; none when
    the text has at most ``size`` tokens (the whole chunk's vector covers it)."""
    if size < 2:
        raise ValueError(f"a window holds at least 2 tokens, not {size}")
    starts, ends = counter.token_spans(text)
    count = len(starts)
    if count <= size:
        return []
    step = size // 2 if overlap else size
    firsts = [*range(0, count - size, step), count - size]
    spans = []
    for first in firsts:
        start, end = int(starts[first]), int(ends[first + size - 1])
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        while end < len(text) and not text[end].isspace():
            end += 1
        spans.append((start, end))
    return spans
