"""Volume within the size limits: a limit on extracted characters and a ceiling on chunks per document.

Hostile files are generated here: a DOCX whose one paragraph, repeated, inflates to more text than the
character limit (within the zip-bomb limits), a 50 MB text file on one line, a 1 MB line without a space.
Each ends in a typed error naming the file; the tests check the outcome, never the time taken.
"""

from __future__ import annotations

import io
import random
import re
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker
from chunkwise.chunking.limits import (
    MAX_CHUNKS,
    check_chunk_count,
    check_chunk_floor,
    chunk_floor,
    chunk_within,
)
from chunkwise.document import Document
from chunkwise.errors import ChunkingError, FileTooLargeError, SourceError, TooManyChunksError
from chunkwise.parsing import ParseLimits, parse_bytes, parse_file
from tests.support.cli import run_bounded

FORMATS = Path(__file__).parent / "data" / "formats"
DEFAULT_CHARS = ParseLimits().max_chars


def docx_with_body(body: str) -> bytes:
    """The ``accessories.docx`` fixture with its body replaced by ``body`` (WordprocessingML)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(FORMATS / "accessories.docx") as original,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package,
    ):
        for info in original.infolist():
            data = original.read(info)
            if info.filename == "word/document.xml":
                xml = data.decode("utf-8")
                start = xml.index("<w:body>") + len("<w:body>")
                data = (xml[:start] + body + xml[xml.index("<w:sectPr", start) :]).encode("utf-8")
            package.writestr(info.filename, data)
    return out.getvalue()


def repeated_paragraph_docx(chars: int) -> bytes:
    """A DOCX holding one paragraph of varied words repeated until the text passes ``chars``."""
    rng = random.Random(12)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(3000)]
    paragraph = " ".join(rng.choices(words, k=2000))
    body = f"<w:p><w:r><w:t>{paragraph}</w:t></w:r></w:p>" * (chars // len(paragraph) + 1)
    return docx_with_body(body)


def test_a_docx_that_inflates_past_the_character_limit_is_refused_without_building_its_text() -> None:
    data = repeated_paragraph_docx(DEFAULT_CHARS + 5_000_000)
    assert len(data) < 1_000_000  # under the size limit and, at about 150:1, under the zip-bomb ratio
    tracemalloc.start()
    try:
        with pytest.raises(FileTooLargeError) as caught:
            parse_bytes(data, "inflating.docx")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.reason == f"its text exceeds the limit of {DEFAULT_CHARS} characters"
    assert peak < 20 * 1024 * 1024  # the text is counted while streaming; neither tree nor string is built


def test_a_docx_just_under_the_limit_parses() -> None:
    data = repeated_paragraph_docx(40_000)
    doc = parse_bytes(data, "fine.docx", limits=ParseLimits(max_chars=200_000))
    assert 40_000 < len(doc.text) < 200_000


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".pdf", ".html", ".md"])
def test_every_format_honours_a_small_character_limit(suffix: str) -> None:
    path = (FORMATS / "accessories").with_suffix(suffix)
    text = parse_file(path).text
    # Markdown and HTML are measured as decoded, before their markup is removed (it is longer)
    length = len(path.read_text(encoding="utf-8")) if suffix in (".html", ".md") else len(text)
    with pytest.raises(FileTooLargeError, match="its text exceeds the limit of 1000 characters"):
        parse_file(path, limits=ParseLimits(max_chars=1000))
    assert parse_file(path, limits=ParseLimits(max_chars=length)).text == text


def test_docx_list_levels_are_clamped_to_the_format_range() -> None:
    item = (
        '<w:p><w:pPr><w:numPr><w:ilvl w:val="999999999"/><w:numId w:val="1"/></w:numPr></w:pPr>'
        "<w:r><w:t>deep item</w:t></w:r></w:p>"
    )
    doc = parse_bytes(docx_with_body(item), "levels.docx")
    (unit,) = doc.units
    assert unit.level == 8
    assert unit.text.lstrip(" ") in ("- deep item", "1. deep item")
    assert len(unit.text) - len(unit.text.lstrip(" ")) == 16


@pytest.fixture
def one_line_50mb(tmp_path: Path) -> Path:
    path = tmp_path / "one-line.txt"
    with path.open("wb") as handle:
        block = b"lorem ipsum dolor sit amet " * 40_000  # about 1 MB, no newline
        for _ in range(50):
            handle.write(block)
    return path


def test_a_50mb_line_is_refused_by_the_character_limit(one_line_50mb: Path) -> None:
    done = run_bounded("parse", "--json", str(one_line_50mb), timeout=300)
    assert done.returncode == 2
    assert done.stdout == ""
    assert (
        done.stderr == f"error: {one_line_50mb}: its text exceeds the limit of {DEFAULT_CHARS} characters\n"
    )


def test_a_50mb_line_within_a_raised_character_limit_is_refused_by_the_chunk_ceiling(
    one_line_50mb: Path,
) -> None:
    done = run_bounded("chunk", str(one_line_50mb), "--json", "--max-chars", "60000000", timeout=300)
    assert done.returncode == 2
    assert re.fullmatch(
        rf"error: {re.escape(str(one_line_50mb))}: \d+ characters of text need at least \d+ chunks of 500, "
        rf"over the limit of {MAX_CHUNKS} chunks per document\n",
        done.stderr,
    )


@pytest.fixture
def megabyte_word(tmp_path: Path) -> Path:
    path = tmp_path / "word.txt"
    path.write_bytes(b"x" * 1_000_000)
    return path


def test_a_1mb_line_without_spaces_is_refused_past_the_chunk_ceiling(megabyte_word: Path) -> None:
    done = run_bounded(
        "chunk", str(megabyte_word), "--max-size", "800", "--max-chunks", "1000", "--json", timeout=300
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {megabyte_word}: 1000000 characters of text need at least 1250 chunks of 800, "
        "over the limit of 1000 chunks per document\n"
    )


def test_a_1mb_line_without_spaces_chunks_within_the_default_ceiling(megabyte_word: Path) -> None:
    doc = parse_file(megabyte_word)
    chunks = chunk_within(get_chunker("recursive", max_size=800), doc)
    assert len(chunks) == 1250
    assert all(len(chunk.text) == 800 for chunk in chunks)


def _doc(text: str) -> Document:
    return Document(id="doc-id", text=text, source="doc.txt")


def test_the_chunk_ceiling_is_a_typed_error_naming_the_document() -> None:
    doc = _doc("word " * 100)
    chunker = get_chunker("fixed", max_size=10)
    with pytest.raises(TooManyChunksError) as caught:
        chunk_within(chunker, doc, max_chunks=10)
    error = caught.value
    assert isinstance(error, ChunkingError)
    assert isinstance(error, SourceError)
    assert error.source == "doc.txt"
    assert (
        error.reason
        == "400 characters of text need at least 40 chunks of 10, over the limit of 10 chunks per document"
    )
    assert len(chunk_within(chunker, doc, max_chunks=50)) == 50


def test_an_overlap_counts_in_the_floor() -> None:
    """Each chunk adds at most ``max_size - overlap`` characters of its own: 30,000 characters in chunks of
    500 overlapping by 499 are at least 30,000 chunks, refused before chunking (the floor used to divide
    by 500 and let millions of chunks be made of a few megabytes before the count refused them)."""
    doc = _doc("x" * 30_000)
    chunker = get_chunker("fixed", max_size=500, overlap=499)
    with pytest.raises(TooManyChunksError) as caught:
        check_chunk_floor(chunker, doc, max_chunks=10_000)
    assert caught.value.reason == (
        "30000 characters of text need at least 30000 chunks of 500 overlapping by 499, over the limit of "
        "10000 chunks per document"
    )


_WORDS = st.lists(
    st.tuples(st.text("abcdefghij", min_size=1, max_size=30), st.sampled_from([" ", "\n", "\n\n", ". "])),
    min_size=1,
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["fixed", "recursive", "sentence"]),
    max_size=st.integers(20, 200),
    overlap_share=st.floats(0.0, 0.95),
    words=_WORDS,
)
def test_the_floor_never_exceeds_the_chunks_made(
    name: str, max_size: int, overlap_share: float, words: list[tuple[str, str]]
) -> None:
    """The floor is a lower bound for every character-sized chunker, with any overlap: a document it
    refuses could never have fitted."""
    overlap = min(int(overlap_share * max_size), max_size - 1)
    chunker = get_chunker(name, max_size=max_size, overlap=overlap)
    doc = _doc("".join(word + gap for word, gap in words))
    assert len(chunker.chunk(doc)) >= chunk_floor(chunker, doc)


def test_token_chunkers_are_counted_after_chunking() -> None:
    doc = _doc("word " * 100)
    chunker = get_chunker("fixed", max_size=10, unit="minilm")
    check_chunk_floor(chunker, doc, max_chunks=1)  # no floor for token units: one token may span a page
    chunks = chunker.chunk(doc)
    with pytest.raises(
        TooManyChunksError, match=rf"^doc.txt: {len(chunks)} chunks, over the limit of 5 chunks"
    ):
        check_chunk_count(doc, chunks, max_chunks=5)
