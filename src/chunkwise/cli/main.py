"""Entry point of the ``chunkwise`` command.

Each sub-command lives in its own module exposing ``register(app)``; this module wires them together and
turns library errors into a one-line ``error: <file>: <reason>`` with exit status 2, never a traceback.
Ctrl-C (SIGINT) is one ``error: interrupted`` line and exit status 130: what a command had finished is
kept (an ingest stores each document in its own transaction, so the one in progress is not stored).
An operating-system error that reaches the command (stdout on a full disk, say) is one ``error:`` line
and exit status 2 too; a closed pipe (``| head``) ends the command quietly with exit status 141.
A usage error (an unknown option, a missing argument, a value out of range) is one ``error:`` line with
click's message and a line naming the ``--help`` to try, exit status 2 (click's own status for it).
Everything printed from a file name or a document goes through :mod:`chunkwise.cli.terminal`.
"""

from __future__ import annotations

import errno
import importlib
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO

import typer
from typer.core import TyperGroup

from chunkwise.cli.terminal import error_line, printable
from chunkwise.errors import ChunkwiseError

#: Modules that add commands to the app, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "chunkwise.cli.parse_cmd",
    "chunkwise.cli.chunk_cmd",
    "chunkwise.cli.ingest_cmd",
    "chunkwise.cli.search_cmd",
    "chunkwise.cli.segments_cmd",
    "chunkwise.cli.ask_cmd",
    "chunkwise.cli.kb_cmd",
    "chunkwise.cli.serve_cmd",
    "chunkwise.cli.eval_cmd",
    "chunkwise.cli.tune_cmd",
    "chunkwise.cli.pg_cmd",
)

#: Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED_STATUS = 130

#: Exit status of a command whose reader went away (``| head``): 128 + SIGPIPE, what a shell reports
#: for a program that SIGPIPE ends (``yes | head -1``), and the same rule as :data:`INTERRUPTED_STATUS`.
#: Python ignores SIGPIPE, so the write fails with EPIPE instead; typer, rich and the Python
#: documentation's recipe then exit with status 1, which here also means a finding (``kb check``: the
#: knowledge base has problems), so a script could not tell a cut-off listing from one. Status 0 would
#: hide, under ``set -o pipefail``, that the output was cut off.
BROKEN_PIPE_STATUS = 141

#: click's ``UsageError``, the base of every usage error (unknown option or command, missing argument,
#: bad value), from whichever click typer runs on: its own copy in recent versions, the click package in
#: older ones. Typer exports only the ``BadParameter`` subclass, so the class is found through it.
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _Commands(TyperGroup):
    """The command group, telling the user why a command stopped: a usage error, Ctrl-C, a closed pipe
    or another operating-system error.

    Typer shows a usage error as a boxed panel, turns a :class:`KeyboardInterrupt` into exit status 130
    without a word, a closed pipe into status 1 (its help's too) and another :class:`OSError` into a
    traceback; catching them here, where the arguments are parsed (and help printed) and the command
    runs, makes each one ``error:`` line (none for the closed pipe)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """Parse the group's own arguments (``chunkwise --bogus``), a usage error as ``error:`` lines."""
        try:
            with _help_on_a_closed_pipe():
                return super().make_context(*args, **kwargs)
        except _USAGE_ERROR as exc:
            _usage_error(exc)
        except OSError as exc:  # ``chunkwise --help | head -1``
            _os_error(exc)

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context, which it keeps private
        try:
            try:
                with _help_on_a_closed_pipe():  # a sub-command's or sub-group's help
                    return super().invoke(ctx)
            finally:  # what is still buffered fails here, not in the interpreter's flush at exit
                sys.stdout.flush()
        except _USAGE_ERROR as exc:  # a sub-command's options and arguments, or a BadParameter
            _usage_error(exc)
        except KeyboardInterrupt:
            _fail(INTERRUPTED_STATUS, "interrupted")
        except OSError as exc:
            _os_error(exc)


@contextmanager
def _help_on_a_closed_pipe() -> Iterator[None]:
    """A closed pipe met while typer prints help raised as the :class:`BrokenPipeError` it is.

    Typer prints help (``--help``, or a group called without a command) through a rich console of its
    own, which handles a closed pipe by pointing stdout at the null device and raising ``SystemExit(1)``
    while it handles the :class:`BrokenPipeError` (see :class:`chunkwise.cli.terminal._Console`), so
    ``chunkwise --help | head -1`` ended with status 1. That error is raised again here, to end the
    command as every other closed pipe does."""
    try:
        yield
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):
            raise exc.__context__ from None
        raise


def _os_error(exc: OSError) -> NoReturn:
    """End the command for an operating-system error: quietly with :data:`BROKEN_PIPE_STATUS` for a
    closed pipe, else one ``error:`` line and exit status 2."""
    _drop_pending_output(sys.stdout)
    if exc.errno == errno.EPIPE:  # the reader went away (``| head``): nothing to tell it
        raise typer.Exit(BROKEN_PIPE_STATUS) from None
    reason = exc.strerror or str(exc)
    _fail(2, f"{exc.filename}: {reason}" if exc.filename else reason)


def _usage_error(exc: Any) -> NoReturn:
    """``error: <click's message>``, then the ``--help`` to try, and click's exit status (2).

    ``exc`` is a click ``UsageError``. One that stands for the help itself (``chunkwise`` or
    ``chunkwise kb`` alone: click's ``NoArgsIsHelpError``, matched by name as typer does) is raised
    again, so that typer prints the help as before."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    ctx = exc.ctx
    hints = []
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        hints.append(f"try '{printable(ctx.command_path)} {ctx.help_option_names[0]}'")
    _fail(exc.exit_code, exc.format_message(), *hints)


def _fail(status: int, message: str, *more: str) -> NoReturn:
    """End the command with ``status`` after ``error: <message>`` and the lines ``more`` on stderr.

    Every ``error:`` line of the command goes through here: a usage error's, Ctrl-C's, an
    operating-system error's (from the command group) and a library error's (from :func:`run`). The
    write may fail itself, and the failure is handled here because the callers write from an ``except``
    block, whose sibling ``except OSError`` does not see an error raised in it: it reached click, which
    ended the command with status 1. A stderr whose reader has gone (``2>&1 | head``) ends the command
    quietly with :data:`BROKEN_PIPE_STATUS`, as a closed stdout does; another failure (a full disk)
    keeps ``status``, the lines unwritten."""
    try:
        error_line(message)
        for line in more:
            sys.stderr.write(f"{line}\n")
        sys.stderr.flush()
    except OSError as unwritten:
        _drop_pending_output(sys.stderr)
        if unwritten.errno == errno.EPIPE:
            status = BROKEN_PIPE_STATUS
    raise SystemExit(status)


def _drop_pending_output(stream: TextIO) -> None:
    """Point ``stream`` (stdout or stderr) at the null device, so that what could not be written (a full
    disk, a failing device, a closed pipe) is not tried again when the interpreter exits, which would
    print a traceback of its own and end with status 120."""
    with open(os.devnull, "w", encoding="utf-8") as null:
        os.dup2(null.fileno(), stream.fileno())


app = typer.Typer(
    cls=_Commands,
    name="chunkwise",
    help="Documents into retrieval-ready chunks, and answers from them, with every step measurable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Documents into retrieval-ready chunks, and answers from them, with every step measurable."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


class _WholeWrites(io.RawIOBase):
    """An unbuffered stdout's or stderr's file, each write taken in full: the file's ``write`` is called
    until every byte has gone, as a buffered stream's flush does.

    With ``PYTHONUNBUFFERED`` (or ``python -u``) the text stdout and stderr write straight to their
    files and take no notice of how many bytes a write took. A write larger than a pipe holds, whose
    reader leaves after reading a part (``| head -c 10``, ``2>&1 | head -c 10``), takes what the pipe
    took: the kernel reports those bytes, not an error. The rest was dropped without a word and the
    command ended as if its output had been read in full. Written on, the next write fails with EPIPE
    and the command ends as for any closed pipe; a write a signal cuts short goes on where it stopped."""

    def __init__(self, file: io.FileIO) -> None:
        super().__init__()
        self._file = file

    @property
    def name(self) -> Any:
        """The file's name (``<stderr>``), which the text stream reports as its own."""
        return self._file.name

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return self._file.isatty()

    def write(self, data: Any) -> int:
        with memoryview(data) as view, view.cast("B") as octets:
            done = 0
            while done < len(octets):
                taken = self._file.write(octets[done:])
                if taken is None:  # a non-blocking stdout that is full: as a buffered one reports it
                    raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN), done)
                done += taken
            return done


def _written_whole(stream: TextIO) -> TextIO:
    """``stream`` (stdout or stderr) on a file that takes each write in full when it writes unbuffered
    (see :class:`_WholeWrites`); a buffered one already does, and is returned as it is."""
    if isinstance(stream, io.TextIOWrapper) and isinstance(stream.buffer, io.FileIO):
        return io.TextIOWrapper(
            _WholeWrites(stream.buffer),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
            write_through=True,
        )
    return stream


def run() -> None:
    """Run the CLI; library errors become one line on stderr and exit status 2.

    The line is written after the command has returned, outside the command group's handling of
    operating-system errors; :func:`_fail` ends the run for a stderr that fails as the group does:
    quietly with :data:`BROKEN_PIPE_STATUS` when stderr's reader has gone (``2>&1 | head``), else with
    status 2, the line unwritten."""
    sys.stdout, sys.stderr = _written_whole(sys.stdout), _written_whole(sys.stderr)
    try:
        app()
    except ChunkwiseError as exc:
        _fail(2, str(exc))
