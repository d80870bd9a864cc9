"""A document and its chunk spans are read in one snapshot (``Store.document_spans``, what
``GET /v1/documents/{id}`` shows): another writer replacing the document between the reads of its text
and of its chunks gives neither the text of one version with the spans of the other. Both stores, the
writer a second store object (another connection) committing in the middle of the read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chunkwise.store import open_store
from chunkwise.store.protocol import Store
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import DOC, fixed_chunks, put

#: The second version of :data:`DOC`: another text, cut into more, shorter chunks.
REPLACED = doc_from_markdown_lines(
    DOC.id,
    "# Travel guide, revised\nCabin bags may weigh up to 8 kg and must fit the sizer.\n"
    "## Pets\nPets travel in the cabin in a soft carrier; larger ones fly as cargo.\n"
    "## Refunds\nRefunds take fourteen working days and go back to the card used.",
)


def location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | Path:
    """A fresh store location of ``kind``."""
    return tmp_path / "kb" if kind == "sqlite" else str(request.getfixturevalue("pg_url"))


def replace_midway(reader: Store, writer: Store) -> Callable[[], None]:
    """Make ``reader``'s next read of chunk spans (inside :meth:`Store.document_spans`, after the
    document's text is read) first let ``writer`` replace the document by :data:`REPLACED`; returns what
    restores the reader."""
    name = "chunk_spans" if type(reader).__name__ == "SQLiteStore" else "_spans"
    original = getattr(reader, name)

    def replacing_first(*args: Any) -> Any:
        setattr(reader, name, original)
        put(writer, REPLACED, size=25, fingerprint="f2")
        return original(*args)

    setattr(reader, name, replacing_first)
    return lambda: setattr(reader, name, original)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_document_and_its_spans_are_one_version_whatever_a_writer_commits_meanwhile(
    kind, tmp_path, request
):
    where = location(kind, tmp_path, request)
    with open_store(where) as writer:
        put(writer, DOC, size=40)
        with open_store(where) as reader:
            restore = replace_midway(reader, writer)
            doc, spans = reader.document_spans(DOC.id)
            restore()
            assert doc.text == DOC.text  # the version the read began with, whole
            assert spans == [(c.start, c.end) for c in fixed_chunks(DOC, 40)]
            doc, spans = reader.document_spans(DOC.id)  # the writer's version, once it committed
            assert doc.text == REPLACED.text
            assert spans == [(c.start, c.end) for c in fixed_chunks(REPLACED, 25)]
            assert spans == reader.chunk_spans(DOC.id)
            with pytest.raises(KeyError):
                reader.document_spans("absent.md")
