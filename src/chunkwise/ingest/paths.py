"""Which files an ingest reads: files named directly, and the supported files under named directories."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from chunkwise.parsing.files import folder_files
from chunkwise.parsing.formats import EXTENSIONS

#: What the ingest entry points accept as the files to read: one path, or a sequence of them.
Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def path_list(paths: object) -> list[str | Path]:
    """``paths`` as a list of paths: a lone ``str`` or path-like object is one path. A ``str`` is itself
    a sequence, so iterating it would ingest each character (``"."`` the working directory, ``"/"`` the
    whole filesystem); ``bytes`` and a sequence of anything but paths are refused for the same reason
    (their items are numbers or other objects, not paths).

    Raises:
        TypeError: ``paths`` is ``bytes`` (file contents go to ``add_bytes``), not a sequence, or holds
            something other than ``str`` or path-like items.
    """
    if isinstance(paths, str | os.PathLike):
        return [paths if isinstance(paths, str) else Path(paths)]
    if isinstance(paths, bytes | bytearray | memoryview) or not isinstance(paths, Sequence):
        raise TypeError(
            f"paths must be a path or a sequence of paths, not {type(paths).__name__} "
            "(to store a file's bytes use add_bytes)"
        )
    named: list[str | Path] = []
    for path in paths:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"paths must hold str or path-like items, not {type(path).__name__}: {path!r}")
        named.append(path if isinstance(path, str) else Path(path))
    return named


def expand_paths(paths: Paths) -> list[Path]:
    """Files named directly (whatever their type: parsing reports what it cannot read), plus the files
    with a supported extension under named directories (recursive, sorted; special files such as a named
    pipe called ``notes.txt`` are kept, for parsing to report). ``paths`` is read by :func:`path_list`:
    one path alone is that path, never its characters.

    Raises:
        TypeError: ``paths`` is ``bytes`` or holds something other than paths (see :func:`path_list`).
    """
    files: list[Path] = []
    for raw in path_list(paths):
        path = Path(raw)
        if path.is_dir():
            files.extend(folder_files(path, EXTENSIONS))
        else:
            files.append(path)
    return files
