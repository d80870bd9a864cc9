"""A command whose output cannot be written (stdout on a full device) ends with one ``error:`` line and
exit status 2, not a traceback; a reader that goes away (``| head``) ends it quietly, with exit status 141
(128 + SIGPIPE, as a shell reports a program that SIGPIPE ends), whether the output is JSON lines or a
rich table, and whether the reader leaves mid-stream or before anything was written."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chunkwise.store.sqlite import SQLiteStore
from tests.support.cli import run_chunkwise

FULL = Path("/dev/full")
#: 128 + SIGPIPE.
BROKEN_PIPE_STATUS = 141


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
    assert done.returncode == BROKEN_PIPE_STATUS


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_a_reader_that_takes_one_line_and_leaves(data_dir, as_json):
    """``chunkwise parse ... | head -1``: the command is cut off mid-stream, while it still has lines to
    write (the pipe's buffer fills long before the output ends)."""
    files = [str(path) for path in sorted((data_dir / "formats").glob("*.md"))] * 20
    command = subprocess.Popen(
        [sys.executable, "-m", "chunkwise", "parse", *files, *(["--json"] if as_json else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert command.stdout is not None
    assert command.stderr is not None
    assert command.stdout.readline()
    command.stdout.close()
    stderr = command.stderr.read()
    assert command.wait(timeout=600) == BROKEN_PIPE_STATUS
    assert stderr == b""


def _run_with_the_reader_gone(*args: str) -> subprocess.CompletedProcess[str]:
    """``chunkwise ARGS...`` writing to a pipe whose reader has already gone, its stdout block-buffered
    as a user's is (without ``PYTHONUNBUFFERED``), so that a short output is written only when flushed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "chunkwise", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_a_reader_gone_before_the_first_write(data_dir, as_json):
    done = _run_with_the_reader_gone(
        "chunk", str(data_dir / "formats" / "Boarding Process.md"), *(["--json"] if as_json else [])
    )
    assert (done.returncode, done.stderr) == (BROKEN_PIPE_STATUS, "")


def test_a_short_buffered_output_whose_reader_is_gone(data_dir, tmp_path):
    """``kb list --json`` writes one line without flushing it: the closed pipe is found when the
    command flushes stdout, which must end it like any other write, not with the interpreter's own
    "Exception ignored ... BrokenPipeError" and exit status 120."""
    kb = str(tmp_path / "kb")
    run_chunkwise("ingest", str(data_dir / "formats" / "Boarding Process.md"), "--kb", kb, check=True)
    done = _run_with_the_reader_gone("kb", "list", "--kb", kb, "--json")
    assert (done.returncode, done.stderr) == (BROKEN_PIPE_STATUS, "")


@pytest.mark.parametrize(
    "args",
    [["--help"], ["ingest", "--help"], ["kb", "list", "--help"], [], ["kb"]],
    ids=["--help", "ingest --help", "kb list --help", "no command", "kb alone"],
)
def test_help_whose_reader_is_gone(args):
    """``chunkwise --help | head -1``: typer prints help through a rich console of its own, which on a
    closed pipe exits with status 1; it ends like any other output instead. A group called without a
    command (``chunkwise``, ``chunkwise kb``) prints the same help."""
    done = _run_with_the_reader_gone(*args)
    assert (done.returncode, done.stderr) == (BROKEN_PIPE_STATUS, "")


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_one_large_write_whose_reader_leaves(tmp_path, as_json):
    """One write far larger than a pipe holds (a document's JSON line of megabytes, or its whole table),
    the reader leaving after a few bytes: the kernel reports the bytes the pipe took, not an error, and
    with ``PYTHONUNBUFFERED`` set Python's text stdout drops the rest without a word, so the command
    ended with status 0 as if the output had been read in full. It ends with 141, quietly."""
    big = tmp_path / "big.txt"
    big.write_text("".join(f"Paragraph {i} of a long plain text document.\n\n" for i in range(60_000)))
    command = subprocess.Popen(
        [sys.executable, "-m", "chunkwise", "parse", str(big), *(["--json"] if as_json else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert command.stdout is not None
    assert command.stderr is not None
    assert command.stdout.read(10)
    command.stdout.close()
    stderr = command.stderr.read()
    assert command.wait(timeout=600) == BROKEN_PIPE_STATUS
    assert stderr == b""


def test_one_large_error_line_whose_reader_leaves(tmp_path):
    """The same on stderr: with ``PYTHONUNBUFFERED`` set, an ``error:`` line far larger than a pipe holds
    (an id of 120,000 characters that is not stored), the reader of stderr leaving after a few bytes.
    The rest of the line was dropped without a word and the command ended with status 1, as if all of it
    had been read. It ends with 141."""
    kb = tmp_path / "kb"
    SQLiteStore(kb).close()  # an empty knowledge base
    command = subprocess.Popen(
        [sys.executable, "-m", "chunkwise", "kb", "delete", "x" * 120_000, "--kb", str(kb)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert command.stdout is not None
    assert command.stderr is not None
    assert command.stderr.read(10) == b"error: xxx"
    command.stderr.close()
    assert command.wait(timeout=600) == BROKEN_PIPE_STATUS
    assert command.stdout.read() == b""


@contextmanager
def _stderr_whose_reader_is_gone() -> Iterator[int]:
    """The write end of a pipe whose reader has already gone (``2>&1 | true``), for a command's stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        yield write_end
    finally:
        os.close(write_end)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_an_error_line_whose_reader_is_gone(tmp_path, unbuffered):
    """``chunkwise kb list --kb missing 2>&1 | true``: a library error is written as an ``error:`` line
    after the command has returned, and on a stderr whose reader had gone the write's error escaped,
    ending the command with status 1 (or the interpreter's 120). It ends with 141, quietly."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    with _stderr_whose_reader_is_gone() as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "chunkwise", "kb", "list", "--kb", str(tmp_path / "missing")],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env,
            check=False,
        )
    assert (done.returncode, done.stdout) == (BROKEN_PIPE_STATUS, "")
    assert not (tmp_path / "missing").exists()


@contextmanager
def _failing_stderr(kind: str) -> Iterator[int]:
    """A stderr every write to fails: a pipe whose reader has gone, or a full device."""
    if kind == "closed pipe":
        with _stderr_whose_reader_is_gone() as stderr:
            yield stderr
    else:
        with FULL.open("w") as full:
            yield full.fileno()


#: Where a failing stderr is, and whether the command's own status survives it: a closed pipe ends the
#: command with 141 like a closed stdout; a full device leaves the status the command would have had.
FAILING_STDERR = [
    pytest.param("closed pipe", True, id="closed pipe"),
    pytest.param(
        "full device",
        False,
        id="full device",
        marks=pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full, a device every write to fails"),
    ),
]


@pytest.mark.parametrize(("stderr_to", "pipe_status"), FAILING_STDERR)
@pytest.mark.parametrize("args", [["--bogus"], ["kb", "list", "--bogus"]], ids=["group", "sub-command"])
def test_a_usage_error_on_a_failing_stderr(stderr_to, pipe_status, args):
    """``chunkwise --bogus 2>&1 | true``: the usage error's lines were written from the command group's
    handling of the error, where the write's own error was not caught: click ended the command with
    status 1 (and a traceback for a full device). It ends with 141 for the closed pipe, and with a usage
    error's status 2 for the full device."""
    with _failing_stderr(stderr_to) as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "chunkwise", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            check=False,
        )
    assert (done.returncode, done.stdout) == (BROKEN_PIPE_STATUS if pipe_status else 2, "")


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full, a device every write to fails")
@pytest.mark.parametrize(("stderr_to", "pipe_status"), FAILING_STDERR)
def test_an_os_error_line_on_a_failing_stderr(data_dir, stderr_to, pipe_status):
    """stdout on a full device and stderr failing too: the ``error: No space left on device`` line
    could not be written either, and that write's error reached click (status 1). It ends with 141 when
    stderr's reader has gone, else with the operating-system error's status 2."""
    with FULL.open("w") as full, _failing_stderr(stderr_to) as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "chunkwise", "chunk", str(data_dir / "formats" / "Boarding Process.md")],
            stdout=full,
            stderr=stderr,
            check=False,
        )
    assert done.returncode == (BROKEN_PIPE_STATUS if pipe_status else 2)


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full, a device every write to fails")
def test_an_error_line_on_a_full_device_keeps_status_2(tmp_path):
    """The error line that cannot be written (stderr on a full device) leaves the library error's status
    2, without a traceback tried on the same stderr."""
    with FULL.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "chunkwise", "kb", "list", "--kb", str(tmp_path / "missing")],
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            check=False,
        )
    assert (done.returncode, done.stdout) == (2, "")
