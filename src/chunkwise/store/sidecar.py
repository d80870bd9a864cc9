"""Stamps of the indexes kept beside the database (the bm25s index, the HNSW graph).

A sidecar index is a cache of one store generation: it is built from the database's rows, saved next to
it, and reused by any process that finds it current. Its stamp (a small JSON file) says which generation
it was built for, a digest of the chunk keys it covers (so a sidecar left by an earlier database in the
same directory is not taken for this one's when the generations happen to match) and a digest of each of
its files (so a truncated or overwritten file is rebuilt instead of being loaded: a graph library reading
a damaged file can crash the process). :func:`stamp_state` says whether a saved sidecar can be used and,
when it claims to be current but is not, why, which ``check()`` reports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

Keys = npt.NDArray[np.int64]
#: Bytes read at a time when hashing a file.
READ_BLOCK = 1 << 20


def keys_digest(keys: Keys) -> str:
    """A digest of the chunk keys a sidecar covers, in order."""
    return hashlib.sha256(np.ascontiguousarray(keys, dtype=np.int64).tobytes()).hexdigest()


def file_digest(path: Path) -> str:
    """The SHA-256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def sidecar_files(path: Path) -> list[Path]:
    """The files of a sidecar saved at ``path`` (a file, or every file of a folder), sorted."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def write_stamp(stamp: Path, generation: int, keys: Keys, saved: Path, variant: str = "") -> None:
    """Record that the sidecar saved at ``saved`` covers ``keys`` of ``generation``, built as ``variant``
    says (when an index can be built from the same rows in more than one way)."""
    files = {str(f.relative_to(saved.parent)): file_digest(f) for f in sidecar_files(saved)}
    body = {"generation": generation, "size": int(keys.size), "keys": keys_digest(keys), "files": files}
    if variant:
        body["variant"] = variant
    stamp.write_text(json.dumps(body, sort_keys=True), encoding="utf-8")


@dataclass(frozen=True, slots=True)
class StampState:
    """Whether the sidecar beside a stamp can be loaded (``usable``); ``problem`` says why a sidecar
    that claims the current generation cannot (``None`` when it can, or when it is absent or stale and
    will simply be rebuilt)."""

    usable: bool
    problem: str | None = None


def stamp_state(stamp: Path, generation: int, keys: Keys, saved: Path, variant: str = "") -> StampState:
    """Can the sidecar saved at ``saved``, stamped by ``stamp``, serve ``keys`` of ``generation``, built
    as ``variant``?"""
    if not stamp.exists():
        return StampState(False)
    try:
        body = json.loads(stamp.read_text(encoding="utf-8"))
        claimed = int(body["generation"])
        recorded: dict[str, str] = dict(body["files"])
        covered = str(body["keys"])
        built = str(body.get("variant", ""))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return StampState(False, f"{stamp.name} is unreadable ({type(exc).__name__})")
    if claimed != generation:
        return StampState(False)  # stale: the store has changed since, and the index is rebuilt on use
    if covered != keys_digest(keys):
        return StampState(False, f"{saved.name} was built for other chunks than the store holds")
    try:
        found = {str(f.relative_to(saved.parent)): file_digest(f) for f in sidecar_files(saved)}
    except OSError as exc:
        return StampState(False, f"{saved.name} cannot be read: {exc.strerror}")
    if found != recorded:
        changed = _differences(recorded, found)
        return StampState(False, f"{saved.name} does not match its stamp ({', '.join(changed)})")
    if built != variant:
        return StampState(False)  # intact, but built another way than wanted: rebuilt on use
    return StampState(True)


def _differences(recorded: dict[str, str], found: dict[str, str]) -> Sequence[str]:
    """The files that are missing, changed or unexpected, named."""
    missing = [f"{name} missing" for name in recorded if name not in found]
    changed = [f"{name} changed" for name in recorded if name in found and found[name] != recorded[name]]
    extra = [f"{name} unexpected" for name in found if name not in recorded]
    return missing + changed + extra
