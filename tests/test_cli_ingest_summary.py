"""``chunkwise ingest`` ends with its summary on one line of stdout, however narrow the terminal (or
the 80 columns rich assumes when stdout is a pipe): scripts read that line whole."""

from __future__ import annotations

import re

from tests.support.cli import run_chunkwise


def test_summary_is_one_line_at_80_columns(data_dir, tmp_path):
    done = run_chunkwise(
        "ingest",
        str(data_dir / "formats" / "Boarding Process.md"),
        "--kb",
        str(tmp_path / "kb"),
        env={"COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"added 1, replaced 0, skipped 0, failed 0; \d+ chunks in [\d.]+ s \([\d.]+ s embedding\)\. "
        r"Store: 1 documents, \d+ chunks\.\n",
        done.stdout,
    ), done.stdout
