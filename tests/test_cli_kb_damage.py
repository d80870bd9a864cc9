"""``--kb`` pointing at something that is not a sound knowledge base, through the real command under a
4 GB address-space limit (``ulimit -v 4000000``): each case ends with exit status 2 and one
``error: <directory>: <reason>`` line, no traceback, and nothing written; ``kb check`` finds injected
damage and ``kb repair`` restores search.

The stores are built without a model and searched with BM25 alone (``dense = false``), so no command
here loads one: every refusal happens before any model would be loaded anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing

import pytest

from chunkwise.store.sqlite import DB_NAME, SQLiteStore
from tests.support.cli import ULIMIT_V, run_chunkwise
from tests.support.store import DOC, fill, leave_log, overwrite, put, read_only_directory

#: A guard against a hang, not a measured time: every case here answers at once.
TIMEOUT = 120
FRAME = 24 + 4096


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A closed store of the travel guide and five animal documents, and a BM25-only configuration."""
    root = tmp_path_factory.mktemp("damage")
    with SQLiteStore(root / "kb") as store:
        put(store, DOC)
        fill(store, 5)
    config = root / "bm25.toml"
    config.write_text("[retrieval]\ndense = false\n", encoding="utf-8")
    return root / "kb", config


@pytest.fixture
def kb(built, tmp_path):
    """A fresh copy of the built store."""
    copy = tmp_path / "kb"
    shutil.copytree(built[0], copy)
    return copy


def chunkwise(*args):
    """The command under the memory limit, with output captured."""
    return run_chunkwise(*args, address_space=ULIMIT_V, timeout=TIMEOUT)


def search(kb, built, query="refunds"):
    return chunkwise("search", query, "--kb", str(kb), "--config", str(built[1]), "--json")


def assert_refused(done, *fragments):
    """Exit status 2 and one ``error:`` line holding every fragment."""
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line


def sql(kb, statement):
    with closing(sqlite3.connect(kb / DB_NAME)) as db:
        rows = db.execute(statement).fetchall()
        db.commit()
    return rows


def _not_a_directory(kb):
    return str(kb / DB_NAME), "not a directory"


def _dev_null(kb):
    return "/dev/null", "/dev/null: not a directory"


def _empty(kb):
    return "", "'': no knowledge-base directory given"


def _database_directory(kb):
    (kb / DB_NAME).unlink()
    (kb / DB_NAME).mkdir()
    return str(kb), "kb.sqlite is not a regular file"


def _log_fifo(kb):
    os.mkfifo(kb / f"{DB_NAME}-wal")  # SQLite would block reading it
    return str(kb), "kb.sqlite-wal is not a regular file"


def _zero_bytes(kb):
    os.truncate(kb / DB_NAME, 0)
    return str(kb), "kb.sqlite is empty (0 bytes)"


def _overwritten_header(kb):
    overwrite(kb / DB_NAME, 0, os.urandom(100))
    return str(kb), "kb.sqlite is not a SQLite database"


def _truncated(kb):
    os.truncate(kb / DB_NAME, (kb / DB_NAME).stat().st_size // 2)
    return str(kb), "kb.sqlite is truncated"


def _garbage_in_the_middle(kb):
    [(root,)] = sql(kb, "SELECT rootpage FROM sqlite_master WHERE name = 'chunks'")
    overwrite(kb / DB_NAME, (root - 1) * 4096, os.urandom(4096))  # every search reads the chunks
    return str(kb), "kb.sqlite is damaged (database disk image is malformed)"


def _broken_fts_table(kb):
    sql(kb, "DROP TABLE chunks_fts_config")
    return str(kb), "vtable constructor failed: chunks_fts"


def _damaged_log(kb):
    shutil.rmtree(kb)
    log = leave_log(kb, 4)
    overwrite(log, 32 + 10 * FRAME + 24 + 500, os.urandom(64))
    return str(kb), "kb.sqlite-wal is damaged"


CASES = {
    "a file": _not_a_directory,
    "/dev/null": _dev_null,
    "an empty --kb": _empty,
    "a database that is a directory": _database_directory,
    "a log that is a named pipe": _log_fifo,
    "a 0-byte database": _zero_bytes,
    "an overwritten header": _overwritten_header,
    "a truncated database": _truncated,
    "garbage in the middle": _garbage_in_the_middle,
    "a broken FTS table": _broken_fts_table,
    "a damaged write-ahead log": _damaged_log,
}


@pytest.mark.parametrize("case", CASES)
def test_searching_a_bad_knowledge_base_is_one_error_line(kb, built, case):
    location, reason = CASES[case](kb)
    database = kb / DB_NAME
    before = database.read_bytes() if database.is_file() else None
    done = chunkwise("search", "refunds", "--kb", location, "--config", str(built[1]))
    assert_refused(done, f"error: {location}: " if location else "error: ", reason)
    assert (database.read_bytes() if database.is_file() else None) == before  # nothing written


@pytest.mark.parametrize("case", ["/dev/null", "an empty --kb", "a 0-byte database", "a truncated database"])
def test_ingesting_into_a_bad_knowledge_base_is_one_error_line(kb, data_dir, case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    location, reason = CASES[case](kb)
    size = (kb / DB_NAME).stat().st_size
    done = chunkwise("ingest", str(data_dir / "formats" / "accessories.md"), "--kb", location)
    assert_refused(done, reason)
    assert (kb / DB_NAME).stat().st_size == size  # a 0-byte store is not rebuilt empty
    assert not (tmp_path / DB_NAME).exists()  # an empty --kb is not the current directory


def test_a_read_only_knowledge_base_is_searched_and_refuses_ingest(kb, built, data_dir):
    with read_only_directory(kb):
        done = search(kb, built)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hits"][0]["doc_id"] == "guide.md"
        ingest = chunkwise("ingest", str(data_dir / "formats" / "accessories.md"), "--kb", str(kb))
        assert_refused(ingest, f"error: {kb}: read-only")
    assert sorted(p.name for p in kb.iterdir()) == [DB_NAME]


@pytest.mark.parametrize("query", ["", "   ", "?!", "—…", "." * 100_000])
def test_a_query_without_a_word_is_a_usage_error(kb, built, query):
    for command in ("search", "ask"):
        done = chunkwise(command, query, "--kb", str(kb), "--config", str(built[1]))
        assert_refused(done, "holds no word to search for")
        assert len(done.stderr) < 200  # a long query is quoted cut short


def test_kb_check_finds_damage_and_kb_repair_restores_search(kb, built):
    assert chunkwise("kb", "check", "--kb", str(kb)).stdout == "ok: 6 documents, 34 chunks, 34 vectors\n"
    sql(kb, "DELETE FROM chunks_fts WHERE rowid IN (SELECT chunk_key FROM chunks WHERE doc_id = 'guide.md')")
    sql(kb, 'UPDATE chunks SET "end" = "end" - 1 WHERE doc_id = \'animal3.md\' AND ordinal = 1')
    assert json.loads(search(kb, built).stdout)["hits"] == []
    check = chunkwise("kb", "check", "--kb", str(kb))
    assert check.returncode == 1
    assert check.stdout.splitlines() == [
        "4 chunks without BM25 row",
        "animal3.md: chunks whose offsets do not match their text: 1 (first: chunk 1 at 120-239)",
    ]
    repair = chunkwise("kb", "repair", "--kb", str(kb), "--json")
    assert repair.returncode == 0, repair.stderr
    body = json.loads(repair.stdout)
    assert body["done"][0].startswith("removed animal3.md (chunks whose offsets do not match their text")
    assert body["done"][0].endswith("ingest animal3.md again")
    assert body["problems"] == []
    assert json.loads(search(kb, built).stdout)["hits"][0]["doc_id"] == "guide.md"
    assert chunkwise("kb", "check", "--kb", str(kb)).returncode == 0


def test_kb_check_of_what_is_not_a_store_is_an_error(kb):
    _zero_bytes(kb)
    for command in ("check", "repair"):
        assert_refused(chunkwise("kb", command, "--kb", str(kb)), "kb.sqlite is empty (0 bytes)")
