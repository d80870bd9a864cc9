"""Files a command writes when its work is done (``eval --json/--html``, ``tune --json``, ``chunk
--scores``): checked before the work starts, so that a mistyped folder costs an error line, not an
evaluation thrown away at its end."""

from __future__ import annotations

import os
from pathlib import Path

from chunkwise.errors import ConfigError


def check_output(path: Path | None, option: str) -> None:
    """:class:`ConfigError` naming ``option`` unless ``path`` (when given) can be written: it is not a
    folder, and its folder exists and is writable."""
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder, not a file")
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{option} {path}: the folder {folder} cannot be written")
