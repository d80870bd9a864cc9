"""A list run into one line keeps each number with its item, in every chunker that cuts at sentences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.chunking.sentences import last_sentence_end, split_sentences
from chunkwise.document import Document


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. Open it. 2. Save it. 3. Close.", ["1. Open it.", "2. Save it.", "3. Close."]),
        (
            "Select 'Image hover'. 3. If available, select it. 4. Save the changes.",
            ["Select 'Image hover'.", "3. If available, select it.", "4. Save the changes."],
        ),
        ('He said "Go." 2. Next step.', ['He said "Go."', "2. Next step."]),
        ("Expire in 2036. 14. Notes receivable rose.", ["Expire in 2036.", "14. Notes receivable rose."]),
        # A number ending a sentence is still a sentence end.
        ("It ends in 2025. The city grows.", ["It ends in 2025.", "The city grows."]),
        ("I have 3. You have 4.", ["I have 3.", "You have 4."]),
        ("Steps: 1. Open it. 2. Save it.", ["Steps: 1. Open it.", "2. Save it."]),
    ],
)
def test_a_list_number_after_a_sentence_end_opens_the_next_sentence(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


_ITEM = st.text(alphabet=st.sampled_from("abcdefgh "), min_size=1, max_size=30).map(
    lambda s: f"Do {s.strip()}xy."
)


@settings(max_examples=100, deadline=None)
@given(items=st.lists(_ITEM, min_size=2, max_size=12), lead=st.sampled_from(["", "Steps: ", "Steps. "]))
def test_every_inline_item_is_one_sentence_with_its_number(items: list[str], lead: str) -> None:
    text = lead + " ".join(f"{n}. {item}" for n, item in enumerate(items, 1))
    found = [s for s in sentences(text) if s not in ("Steps:", "Steps.")]
    if lead == "Steps: ":
        found[0] = found[0].removeprefix(lead)
    assert found == [f"{n}. {item}" for n, item in enumerate(items, 1)]
    # The backward search of the recursive chunker agrees: no cut right after a list number.
    cuts = {last_sentence_end(text, 0, limit) for limit in range(1, len(text) + 1)} - {None}
    assert all(not text[:cut].rstrip(".").rsplit(" ", 1)[-1].isdigit() for cut in cuts if cut is not None)


@pytest.mark.parametrize("name", ["sentence", "recursive"])
def test_no_chunk_ends_on_a_list_number(name: str) -> None:
    text = " ".join(f"{n}. Press the button number {n} twice." for n in range(1, 40))
    chunks = get_chunker(name, max_size=80).chunk(Document(id="d", text=text))
    assert all(c.text[0].isdigit() and c.text.endswith("twice.") for c in chunks)
