"""Which files an ingest reads: files named directly, and the supported files under named directories."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from chunkwise.parsing.files import folder_files
from chunkwise.parsing.formats import EXTENSIONS


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly (whatever their type: parsing reports what it cannot read), plus the files
    with a supported extension under named directories (recursive, sorted; special files such as a named
    pipe called ``notes.txt`` are kept, for parsing to report)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(folder_files(path, EXTENSIONS))
        else:
            files.append(path)
    return files
