"""A command whose output cannot be written (stdout on a full device) ends with one ``error:`` line and
exit status 2, not a traceback; a reader that goes away (``| head``) ends it quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FULL = Path("/dev/full")


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full, a device every write to fails")
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_stdout_on_a_full_device_is_one_error_line(data_dir, as_json):
    args = ["chunk", str(data_dir / "formats" / "Boarding Process.md"), *(["--json"] if as_json else [])]
    with FULL.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "chunkwise", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == "error: No space left on device\n"


def test_a_closed_pipe_ends_quietly(data_dir):
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)"], stdin=subprocess.PIPE)
    files = [str(path) for path in sorted((data_dir / "formats").glob("*.md"))] * 20
    assert reader.stdin is not None
    done = subprocess.run(
        [sys.executable, "-m", "chunkwise", "parse", *files, "--json"],
        stdout=reader.stdin,
        check=False,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader.stdin.close()
    reader.wait()
    assert done.stderr == ""  # no traceback, and no error line for what the user asked for
