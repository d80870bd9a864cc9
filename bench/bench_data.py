"""Where the benchmarks find the shared data, and how their results name it.

Every script takes ``--data`` (default: ``../shared/data`` beside the repository) and writes paths into
its results relative to the repository (``../shared/data/chroma``), never as this machine's absolute
path, so a committed result reads the same on any checkout.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"


def add_data_option(parser: argparse.ArgumentParser, default: Path = DEFAULT_DATA) -> None:
    """The ``--data`` option: the shared data folder (or, with ``default``, one folder of it)."""
    parser.add_argument("--data", type=Path, default=default, help=f"data folder (default: {shown(default)})")


def shown(path: Path) -> str:
    """``path`` as results print it: relative to the repository, in POSIX form."""
    return Path(os.path.relpath(Path(path).resolve(), REPO)).as_posix()
