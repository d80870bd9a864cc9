"""The chunking contract as one reusable check, and hypothesis strategies for hostile text."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from chunkwise.chunking import Chunk, TokenCounter
from chunkwise.document import Document


def non_space(text: str) -> str:
    """The non-whitespace characters of ``text``, in order."""
    return "".join(text.split())


def check_contract(
    doc: Document, chunks: list[Chunk], counter: TokenCounter, max_size: int, overlap: int = 0
) -> None:
    """Exact offsets, trimmed text, exact sizes under the hard maximum, coverage (or bounded overlap)."""
    for chunk in chunks:
        assert chunk.doc_id == doc.id
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text, "empty chunk"
        assert chunk.text == chunk.text.strip(), f"untrimmed chunk {chunk.text!r}"
        size = counter.count(chunk.text)
        assert chunk.tokens == size, f"recorded size {chunk.tokens} != exact size {size}"
        assert size <= max_size, f"chunk of {size} > {max_size}: {chunk.text!r}"
    assert len({c.id for c in chunks}) == len(chunks)
    if overlap == 0:
        for prev, nxt in itertools.pairwise(chunks):
            assert prev.end <= nxt.start, "chunks overlap or are out of order"
            assert not doc.text[prev.end : nxt.start].strip(), "non-whitespace text between chunks"
        assert non_space("".join(c.text for c in chunks)) == non_space(doc.text)
    else:
        for prev, nxt in itertools.pairwise(chunks):
            assert prev.start < nxt.start
            assert prev.end < nxt.end
            assert max(0, prev.end - nxt.start) <= overlap
        covered = [False] * len(doc.text)
        for c in chunks:
            covered[c.start : c.end] = [True] * (c.end - c.start)
        assert all(covered[i] for i, ch in enumerate(doc.text) if not ch.isspace())


_CJK = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF), st.sampled_from("。！？，、「」")
    ),
    max_size=80,
)
_SEPARATORS = st.sampled_from(
    [
        *(" ", "\n", "\n\n", " \t\n \n", "。", ". ", "! ", "Dr. Smith. ", "3.14 ", ", "),
        *("\u3000", "\x0b", "\xa0"),
        *("\r", "\r\n", "\r\r", " \r \r", "\r\n\r\n", "\r# Mac\r\r", "\n\r"),
        *("\n# Heading\n\n", "\n## Two\n \n", "#\tTab\n\n", "####### seven\n\n", "#tag\n\n"),
    ]
)
_WORDS = st.text(alphabet=st.sampled_from("abcdeéxyzAB12-"), min_size=1, max_size=12)
_LONG_WORD = st.integers(min_value=9_000, max_value=10_000).map(lambda n: "w" * n)

#: Arbitrary Unicode, CJK, separators of every level (Markdown headings too), whitespace runs, and
#: 10,000-character words.
hostile_text = st.lists(
    st.one_of(st.text(max_size=60), _CJK, _SEPARATORS, _WORDS, _WORDS, _LONG_WORD),
    max_size=25,
).map("".join)

#: The same without the huge words, for chunkers whose examples cost model calls.
small_text = st.lists(st.one_of(st.text(max_size=30), _CJK, _SEPARATORS, _WORDS), max_size=12).map("".join)
