"""Reading input files: regular files only, and never more than the size limit.

A path on the command line or in a folder may name anything. A symlink is followed (its target is what
is read, the name given is what errors show); a directory, a character or block device (``/dev/zero``
reports a size of 0 and never ends), a named pipe (opening one for reading blocks until a writer comes)
or a socket is refused with :class:`~chunkwise.errors.NotRegularFileError` before it is opened. The
type is checked again on the open descriptor, which is opened non-blocking, so a path swapped for a
pipe in between can neither block nor be read. Reading stops at ``max_bytes + 1`` bytes whatever
``stat`` said, so a file that grows while it is read, or whose size the file system misreports
(``/proc``, network and FUSE mounts), is refused at the limit instead of being read to its end.

:func:`folder_files` lists the candidates of a folder for ingest. It opens nothing, and it keeps the
special files whose names look like documents (a pipe named ``notes.txt``), so that reading reports
each of them by name rather than the walk dropping them unseen.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from pathlib import Path

from chunkwise.errors import FileTooLargeError, NotRegularFileError, ParseError

#: Largest single read: honest files come in one call (their size is known), the rest in blocks.
_BLOCK = 1 << 20

#: Flags of the open: never block on a pipe or a device, never become its controlling terminal.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC


def file_kind(mode: int) -> str:
    """The kind of file a ``st_mode`` describes, in words (``"named pipe"``, ``"directory"``...)."""
    for test, kind in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISFIFO, "named pipe"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "special file"


def _require_regular(mode: int, source: str) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(source, f"not a regular file ({file_kind(mode)})")


def _cannot_read(source: str, exc: OSError) -> ParseError:
    return ParseError(source, f"cannot read file: {exc.strerror or exc}")


def read_file(path: str | Path, source: str, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed); ``source`` names it in errors.

    Raises :class:`NotRegularFileError` for anything but a regular file, :class:`FileTooLargeError`
    when the file holds more than ``max_bytes`` bytes (by its size, or by what was read), and
    :class:`ParseError` when it cannot be opened or read.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise _cannot_read(source, exc) from exc
    _require_regular(info.st_mode, source)
    if info.st_size > max_bytes:
        raise FileTooLargeError(source, f"{info.st_size} bytes exceeds the limit of {max_bytes}")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _cannot_read(source, exc) from exc
    try:
        _require_regular(os.fstat(fd).st_mode, source)
        blocks: list[bytes] = []
        size = 0
        want = min(info.st_size, max_bytes) + 1
        while size <= max_bytes:
            block = os.read(fd, want)
            if not block:
                break
            blocks.append(block)
            size += len(block)
            want = min(_BLOCK, max_bytes + 1 - size)
    except OSError as exc:
        raise _cannot_read(source, exc) from exc
    finally:
        os.close(fd)
    if size > max_bytes:
        raise FileTooLargeError(
            source, f"more than {max_bytes} bytes read (the file grew or misreports its size), over the limit"
        )
    return b"".join(blocks)


def folder_files(folder: Path, suffixes: Collection[str]) -> list[Path]:
    """Every entry under ``folder`` (recursively, sorted) whose lower-cased suffix is in ``suffixes``,
    except directories; special files are kept for :func:`read_file` to report (see the module doc)."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in suffixes and not p.is_dir())
