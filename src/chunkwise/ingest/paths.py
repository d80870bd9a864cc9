"""Which files an ingest reads: files named directly, and the supported files under named directories."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from chunkwise.parsing.formats import EXTENSIONS


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly (whatever their type: parsing reports what it cannot read), plus the files
    with a supported extension under named directories (recursive, sorted)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS))
        else:
            files.append(path)
    return files
