"""What the CLI prints from outside: control characters in names and document text are escaped
everywhere (error lines, tables, progress, answers, JSON).

A file named ``bad\\x1b[31m\\nerror: fake.md`` must print as one escaped line: it can neither colour the
terminal nor forge an ``error:`` line of its own. Rich markup in a document (``[/x]``) must print as
text, not be interpreted (an unmatched closing tag used to end the table view with a traceback).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkwise.cli.terminal import json_line, printable
from tests.support.cli import run_bounded

HOSTILE_NAME = "bad\x1b[31m\nerror: fake.md"
ESCAPED_NAME = "bad\\x1b[31m\\nerror: fake.md"
#: Document text with escape sequences, a bell, a carriage return, C1 CSI, a bidi override and rich
#: markup, with enough plain text around them not to be taken for binary data.
HOSTILE_TEXT = (
    "# [/oops] Ti\x1b[2Jtle\n\n"
    "Plain \x1b]0;owned\x07 words, a\rreturn, \x9b31m C1, \u202eevil, [bold]x[/bold].\n\n"
    + "Plain words for the filler paragraph. "
    * 12
)


def test_printable_escapes_controls_bidi_and_separators_only() -> None:
    assert printable("a\x1b[31mb\r\n\t\x00\x7f\x9b\u202e\u2066\u2028z") == (
        "a\\x1b[31mb\\r\\n\\t\\x00\\x7f\\x9b\\u202e\\u2066\\u2028z"
    )
    assert printable("café 中文 😀 [b] \\x1b") == "café 中文 😀 [b] \\x1b"
    assert printable("one\ntwo\r", keep_newlines=True) == "one\ntwo\\r"


def test_json_line_escapes_the_same_set_and_round_trips() -> None:
    value = {"text": HOSTILE_TEXT, "name": HOSTILE_NAME, "\x85key": ["\u2029", "é"]}
    line = json_line(value)
    assert json.loads(line) == value
    assert printable(line) == line  # nothing left to escape: no raw control character at all
    assert "é" in line  # readable non-ASCII stays as it is


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / HOSTILE_NAME).write_bytes(b"")  # empty: fails with an error line naming it
    (folder / "text.md").write_text(HOSTILE_TEXT, encoding="utf-8")
    return folder


def _assert_clean(output: str) -> None:
    """No raw escape, bell, carriage return, C1 or bidi character reached the output."""
    for char in ("\x1b", "\x07", "\r", "\x9b", "\u202e"):
        assert char not in output, repr(char)


def test_parse_error_line_for_a_hostile_name_is_one_escaped_line(hostile_folder: Path) -> None:
    done = run_bounded("parse", str(hostile_folder / HOSTILE_NAME), cwd=hostile_folder)
    assert done.returncode == 2
    assert done.stderr == f"error: {hostile_folder.as_posix()}/{ESCAPED_NAME}: file is empty\n"


def test_parse_table_and_json_print_hostile_text_escaped(hostile_folder: Path) -> None:
    path = str(hostile_folder / "text.md")
    table = run_bounded("parse", path)
    assert table.returncode == 0, table.stderr
    assert "Traceback" not in table.stderr
    _assert_clean(table.stdout)
    assert "[/oops]" in table.stdout
    assert "\\x1b[2J" in table.stdout
    lines = run_bounded("parse", "--json", path).stdout.splitlines()
    assert len(lines) == 1
    _assert_clean(lines[0])
    assert json.loads(lines[0])["text"].startswith("# [/oops] Ti\x1b[2Jtle")  # the data itself is exact


def test_chunk_table_prints_hostile_text_and_sections_escaped(hostile_folder: Path) -> None:
    done = run_bounded("chunk", str(hostile_folder / "text.md"), "--chunker", "structure", "--max-size", "40")
    assert done.returncode == 0, done.stderr
    _assert_clean(done.stdout)
    assert "Ti\\x1b[2Jtle" in done.stdout  # the section path, from the heading


def test_ingest_search_and_ask_escape_names_and_text(hostile_folder: Path, tmp_path: Path) -> None:
    kb = str(tmp_path / "kb")
    ingest = run_bounded("ingest", str(hostile_folder), "--kb", kb)
    assert ingest.returncode == 2
    _assert_clean(ingest.stderr)
    errors = [line for line in ingest.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {hostile_folder.as_posix()}/{ESCAPED_NAME}: file is empty"]
    search = run_bounded("search", "plain words", "--kb", kb, "-k", "2")
    assert search.returncode == 0, search.stderr
    _assert_clean(search.stdout)
    assert "[/oops]" in search.stdout
    ask = run_bounded("ask", "Which words are plain?", "--kb", kb)
    assert ask.returncode == 0, ask.stderr
    _assert_clean(ask.stdout)


@pytest.mark.parametrize("columns", [80, 60])
def test_search_table_fits_the_terminal_with_rank_score_and_span_whole(tmp_path: Path, columns: int) -> None:
    """A terminal of 80 columns once showed each score as ``0.9…`` and no rank: the document and the text
    give up the room now, and the table stays within the terminal's width."""
    kb = str(tmp_path / "kb")
    formats = Path(__file__).parent / "data" / "formats"
    ingest = run_bounded(
        "ingest", str(formats / "Boarding Process.md"), str(formats / "Baggage Allowance.md"), "--kb", kb
    )
    assert ingest.returncode == 0, ingest.stderr
    query = ("search", "When does boarding start?", "--kb", kb, "-k", "3")
    hits = json.loads(run_bounded(*query, "--json").stdout)["hits"]
    table = run_bounded(*query, env={"COLUMNS": str(columns)})
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(map(len, lines)) <= columns
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == len(hits) == 3
    for rank, (row, hit) in enumerate(zip(rows, hits, strict=True), start=1):
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert cells[:2] == [str(rank), f"{hit['score']:.3f}"]
        assert cells[3] == f"{hit['start']}-{hit['end']}"
        document = hit["doc_id"]
        assert cells[2] == document or (cells[2].startswith("…") and document.endswith(cells[2][1:]))


def test_kb_list_folds_long_ids_whole(tmp_path: Path) -> None:
    """``kb list`` at 60 columns: a long document id is folded over lines, never cut (it showed
    ``…/formats/Cl…`` and lost the middle of the path, so the id could not be read off for ``kb
    delete``); the format and chunk count stay whole."""
    deep = tmp_path / "policies" / "customer-service" / "baggage-and-boarding"
    deep.mkdir(parents=True)
    formats = Path(__file__).parent / "data" / "formats"
    for name in ("Boarding Process.md", "Baggage Allowance.md"):
        (deep / name).write_bytes((formats / name).read_bytes())
    kb = str(tmp_path / "kb")
    assert run_bounded("ingest", str(deep), "--kb", kb).returncode == 0
    documents = json.loads(run_bounded("kb", "list", "--kb", kb, "--json").stdout)["documents"]
    assert all(len(d["doc_id"]) > 60 for d in documents)
    table = run_bounded("kb", "list", "--kb", kb, env={"COLUMNS": "60"})
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(map(len, lines)) <= 60
    assert "…" not in table.stdout
    id_width = lines[0].index("format")
    folded = "".join("".join(line[:id_width].split()) for line in lines[1:])
    assert folded == "".join(d["doc_id"].replace(" ", "") for d in documents)
    rows = [line[id_width:].split() for line in lines[1:] if line[id_width:].strip()[:2] == "ma"]
    assert [row[:2] for row in rows] == [["markdown", str(d["chunks"])] for d in documents]
