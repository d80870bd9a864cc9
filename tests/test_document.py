"""The document model: offsets invariant, deterministic ids and a lossless JSON round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.chunking.chunk import Chunk, chunk_id, make_chunk
from chunkwise.document import Document, Unit, UnitKind
from chunkwise.parsing.builder import DocumentBuilder


def _sample() -> Document:
    b = DocumentBuilder()
    b.heading("Baggage", 1)
    b.paragraph("Two   bags\nallowed.")
    b.heading("Cabin", 2)
    b.list_item("one bag")
    b.list_item("nested", depth=1, number=2)
    b.table([["Class", "Bags"], ["Economy", "1"]])
    b.heading("Fees", 2)
    b.code("fee = 10\n  total = fee * 2", "python")
    return b.build("doc-1", source="x.md", fmt="markdown")


def test_builder_renders_normalised_markdown_with_parents() -> None:
    doc = _sample()
    assert doc.text.startswith("# Baggage\n\nTwo bags allowed.\n\n## Cabin\n\n- one bag\n  2. nested")
    kinds = [u.kind for u in doc.units]
    assert kinds.count(UnitKind.HEADING) == 3
    cabin = doc.units[2]
    assert [u.parent for u in doc.units] == [None, "u1", "u1", "u3", "u3", "u3", "u1", "u7"]
    assert cabin.level == 2
    assert doc.title == "Baggage"
    for unit in doc.units:
        assert doc.text[unit.start : unit.end] == unit.text


def test_json_round_trip_is_lossless() -> None:
    doc = _sample()
    assert Document.from_json(doc.to_json()) == doc


def test_units_must_match_text() -> None:
    with pytest.raises(ValueError, match="does not match"):
        Document(id="d", text="abc", units=(Unit("u1", UnitKind.PARAGRAPH, 0, 2, "xy"),))


def test_skeleton_has_no_text_beyond_preview() -> None:
    rows = _sample().skeleton(preview_words=1)
    assert rows[1] == {
        "id": "u2",
        "kind": "paragraph",
        "chars": 17,
        "parent": "u1",
        "preview": "Two",
    }


def test_chunk_ids_are_deterministic_and_sections_follow_headings() -> None:
    doc = _sample()
    fees = doc.units[6]
    chunk = make_chunk(doc, fees.start, len(doc.text))
    assert chunk.id == chunk_id(doc.text, fees.start, len(doc.text))
    assert chunk.section == ("Baggage", "Fees")
    assert chunk.unit_ids == ("u7", "u8")
    assert Chunk.from_dict(chunk.to_dict()) == chunk
    assert make_chunk(_sample(), fees.start, len(doc.text)).id == chunk.id


@given(st.lists(st.tuples(st.sampled_from(["h", "p", "l"]), st.text(min_size=1)), max_size=20))
def test_builder_offsets_hold_for_any_text(items: list[tuple[str, str]]) -> None:
    b = DocumentBuilder()
    for kind, text in items:
        if kind == "h":
            b.heading(text, 2)
        elif kind == "p":
            b.paragraph(text)
        else:
            b.list_item(text)
    doc = b.build("d")
    assert Document.from_json(doc.to_json()) == doc
    for unit in doc.units:
        assert doc.text[unit.start : unit.end] == unit.text
        assert unit.text.strip()
