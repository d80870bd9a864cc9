"""Files a command writes when its work is done (``eval --json/--html``, ``tune --json``, ``chunk
--scores``): checked before the work starts, so that a mistyped folder costs an error line, not an
evaluation thrown away at its end."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from chunkwise.errors import ConfigError


def check_outputs(outputs: Mapping[str, Path | None], reads: Sequence[Path] = ()) -> None:
    """:class:`ConfigError` naming the option unless each given path of ``outputs`` (option to path)
    can be written (:func:`_check_output`) and is its own file: not the file of another option (``--json
    out.json --html out.json`` left the HTML alone), nor one of ``reads``, the files the command reads
    (``--json data/queries.jsonl`` overwrote the queries)."""
    written: dict[Path, str] = {}
    read = {path.resolve() for path in reads}
    for option, path in outputs.items():
        if path is None:
            continue
        _check_output(path, option)
        where = path.resolve()
        if where in written:
            raise ConfigError(f"{option} {path}: {written[where]} writes the same file")
        if where in read:
            raise ConfigError(f"{option} {path}: the command reads this file; write to another")
        written[where] = option


def _check_output(path: Path, option: str) -> None:
    """:class:`ConfigError` naming ``option`` unless ``path`` can be written: it is not a folder, and
    its folder exists and is writable."""
    folder = path.parent
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder, not a file")
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{option} {path}: the folder {folder} cannot be written")
