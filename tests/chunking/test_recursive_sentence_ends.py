"""The recursive chunker's backward sentence search finds the sentence ends the forward scan finds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.chunking.sentences import last_sentence_end, sentence_ends
from chunkwise.document import Document

#: Words, abbreviations, numbers, Latin and CJK stop marks (runs mixing both scripts included), closing
#: quotes and brackets, and whitespace of every kind (within a line: line breaks have rules of their own).
_WORDS = ["He", "said", "ok", "Dr", "e.g", "3", "x", "a", "Bc"]
_PART = st.sampled_from(
    [
        *_WORDS,
        *['"', "'", "”", ")", "]", "」"],
        *[".", "!", "?", "…", "...", "。", "！", "｡"],
        *[" ", "  ", "\t", "\xa0", "\u3000"],
    ]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_PART, max_size=30), data=st.data())
def test_the_last_end_in_a_window_is_the_last_of_the_forward_scan(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    # A window starts where a chunk can: at the text's start or after whitespace.
    start = data.draw(st.sampled_from([0, *(i + 1 for i, ch in enumerate(text) if ch.isspace())]))
    limit = data.draw(st.integers(start, len(text)))
    expected = max((c for c in sentence_ends(text) if start < c <= limit), default=None)
    assert last_sentence_end(text, start, limit) == expected


@pytest.mark.parametrize(
    ("text", "cut"),
    [("See e.g.。Next", 9), ("It is ok.。 Next", 10), ("Done。. Next", 6), ("Why?！Next", 5)],
)
def test_a_cjk_mark_after_a_latin_mark_ends_the_sentence_in_both_searches(text: str, cut: int) -> None:
    # The backward search once took the run of marks from its first Latin mark, which needs whitespace
    # after it, and so found no end where the forward scan found one.
    assert max(sentence_ends(text)) == cut
    assert last_sentence_end(text, 0, len(text)) == cut


def test_a_quoted_sentence_end_is_a_cut_for_the_recursive_chunker() -> None:
    text = '"Stop," he said, with a long and weary sigh that filled the room. "Go away now." She left.'
    chunks = get_chunker("recursive", max_size=len(text) - 1).chunk(Document(id="d", text=text))
    assert [c.text for c in chunks] == [text[: text.index(" She")], "She left."]


def test_a_sentence_end_before_a_tab_is_a_cut_for_the_recursive_chunker() -> None:
    text = "The first sentence ends here.\tThe second one, a little longer, follows it"
    chunks = get_chunker("recursive", max_size=60).chunk(Document(id="d", text=text))
    assert chunks[0].text == "The first sentence ends here."
