"""Bad input gives a typed error naming the file and the reason, in the library and through the CLI.

Hostile and huge inputs are generated here, in ``tmp_path``; the 200 MB file is sparse, so it costs no
disk and, as the limit is checked before reading, no memory.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

import chunkwise
from chunkwise.errors import (
    EmptyDocumentError,
    EncodingError,
    FileTooLargeError,
    ParseError,
    UnsafeContentError,
)
from chunkwise.parsing import ParseLimits, parse_file

HUGE = 200 * 1024 * 1024


def _pipe_table(columns: int, rows: int) -> bytes:
    """A Markdown pipe table of one-letter cells: a header row, the delimiter row, ``rows - 1`` body rows."""
    header, delimiter, row = (b"|" + cell * columns for cell in (b"a|", b"-|", b"b|"))
    return b"\n".join([header, delimiter, *[row] * (rows - 1)]) + b"\n"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture
def bad_files(tmp_path: Path) -> dict[str, tuple[Path, type[ParseError], str]]:
    """name -> (file, expected error class, expected reason pattern)."""
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as handle:
        os.truncate(handle.fileno(), HUGE)
    noise = random.Random(7).randbytes(4096)
    return {
        "empty": (_write(tmp_path / "empty.md", b""), EmptyDocumentError, "file is empty"),
        "random": (_write(tmp_path / "random.txt", noise), EncodingError, "binary content"),
        "invalid_utf8": (
            _write(tmp_path / "invalid.txt", "Grüße aus Köln".encode() + b"\xc3\x28 more"),
            EncodingError,
            "damaged UTF-8: invalid byte at offset 17",
        ),
        "deep_html": (
            _write(tmp_path / "deep.html", b"<div>" * 100_000 + b"deep"),
            UnsafeContentError,
            "elements nested deeper than 512 levels",
        ),
        "entity_html": (
            _write(
                tmp_path / "laughs.html",
                b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>\n<p>&lol2;</p>',
            ),
            UnsafeContentError,
            "a DOCTYPE declaring entities (an internal subset), which HTML has not",
        ),
        "wide_table": (
            _write(tmp_path / "wide.md", _pipe_table(10_000, 11)),
            UnsafeContentError,
            "Markdown tables with more than 100000 cells in all "
            "(reached with a table of 10000 columns and 11 rows)",
        ),
        "huge": (huge, FileTooLargeError, f"{HUGE} bytes exceeds the limit of {100 * 1024 * 1024}"),
        "missing": (tmp_path / "missing.txt", ParseError, "cannot read file: No such file or directory"),
    }


@pytest.mark.parametrize(
    "name", ["empty", "random", "invalid_utf8", "deep_html", "entity_html", "wide_table", "huge", "missing"]
)
def test_library_raises_a_typed_error_naming_file_and_reason(
    bad_files: dict[str, tuple[Path, type[ParseError], str]], name: str
) -> None:
    path, error, reason = bad_files[name]
    with pytest.raises(error) as caught:
        parse_file(path)
    assert caught.value.source == path.as_posix()
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"{path.as_posix()}: ")


def test_legacy_8bit_text_is_decoded_by_detection_not_refused(tmp_path: Path) -> None:
    text = "Numéro de pièce: réservé à l'équipe. Déjà payé, reçu envoyé le 3 février."
    doc = parse_file(_write(tmp_path / "legacy.txt", text.encode("cp1252")))
    assert doc.text == text
    assert doc.metadata["encoding"] == "cp1252"


def test_huge_file_is_refused_before_reading(
    bad_files: dict[str, tuple[Path, type[ParseError], str]],
) -> None:
    path = bad_files["huge"][0]
    tracemalloc.start()
    try:
        with pytest.raises(FileTooLargeError):
            parse_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_a_wide_markdown_table_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """A 1 MB table of 10,000 columns and 51 rows once made 1.5 million markdown-it tokens (730 MB); refused,
    it costs its bytes, their text and the imports of a first parse. The table is read a piece at a time
    (the rows of 20,000 characters that fit in one) until its cells pass the bound."""
    path = _write(tmp_path / "table.md", _pipe_table(10_000, 51))
    tracemalloc.start()
    try:
        with pytest.raises(UnsafeContentError, match="table of 10000 columns and at least 19 rows"):
            parse_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024


def test_the_size_limit_is_configurable(tmp_path: Path) -> None:
    path = _write(tmp_path / "small.txt", b"twelve bytes")
    with pytest.raises(FileTooLargeError, match="12 bytes exceeds the limit of 11"):
        parse_file(path, limits=ParseLimits(max_bytes=11))
    assert parse_file(path, limits=ParseLimits(max_bytes=12)).text == "twelve bytes"


def _chunkwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkwise", *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_cli_reports_each_bad_file_on_one_line_and_goes_on(
    bad_files: dict[str, tuple[Path, type[ParseError], str]], tmp_path: Path
) -> None:
    good = _write(tmp_path / "good.md", b"# Good\n\nFine text.\n")
    paths = [path for path, _, _ in bad_files.values()]
    result = _chunkwise("parse", "--json", *[p.as_posix() for p in paths[:3]], good.as_posix(),
                        *[p.as_posix() for p in paths[3:]])  # fmt: skip
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == len(bad_files)
    for line, (path, _, reason) in zip(lines, bad_files.values(), strict=True):
        assert line.startswith(f"error: {path.as_posix()}: ")
        assert reason in line
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["doc_id"] for d in docs] == [good.as_posix()]


def test_cli_size_limit_option(tmp_path: Path) -> None:
    path = _write(tmp_path / "small.txt", b"twelve bytes")
    result = _chunkwise("parse", "--max-bytes", "11", path.as_posix())
    assert result.returncode == 2
    assert result.stderr == f"error: {path.as_posix()}: 12 bytes exceeds the limit of 11\n"


def test_text_with_a_lone_surrogate_is_a_typed_error() -> None:
    """Text from a JSON escape such as ``\\ud800`` cannot be encoded: refused as such, not as a raw
    ``UnicodeEncodeError`` from deep inside."""
    with pytest.raises(EncodingError, match="text: not valid Unicode text: a lone surrogate at character 2"):
        chunkwise.parse("a \ud800 b")


def test_a_string_is_a_path_only_when_it_names_an_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordinary sentences with a ``/`` or a file name in them are text, as the README promises; a string
    naming an existing file is that file; one word ending in a supported extension that names no file is
    a typed error (most likely a mistyped path), unless a format says to read the string itself."""
    monkeypatch.chdir(tmp_path)
    for sentence in ("Bags cost 50 EUR/USD each.", "Read the notes in README.md", "EUR/USD"):
        doc = chunkwise.parse(sentence)
        assert (doc.id, doc.text) == ("text", sentence)
    one_line = "Check-in opens 24h before departure and/or at the desk."
    assert [c.text for c in chunkwise.chunk(one_line)] == [one_line]
    _write(tmp_path / "notes.md", b"# Notes\n\nGates close early.\n")
    assert chunkwise.parse("notes.md").title == "Notes"
    with pytest.raises(ParseError, match=r'docs/notes.md: cannot read file: no such file .*format="text"'):
        chunkwise.parse("docs/notes.md")
    assert chunkwise.parse("docs/notes.md", format="text").text == "docs/notes.md"


def test_a_string_is_kept_verbatim_with_a_leading_byte_order_mark() -> None:
    """A ``str`` is already text: it is not decoded again, so a leading U+FEFF (which a decoder takes
    for a byte-order mark) stays, and unit offsets index the given string."""
    text = "\ufeffFirst paragraph.\n\nSecond one."
    doc = chunkwise.parse(text)
    assert doc.text == text
    assert [text[u.start : u.end] for u in doc.units] == ["\ufeffFirst paragraph.", "Second one."]
