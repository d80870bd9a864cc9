"""Stamps of the indexes kept beside the database (the bm25s index, the HNSW graph).

A sidecar index is a cache of one store generation: it is built from the database's rows, saved next to
it, and reused by any process that finds it current. Its stamp (a small JSON file) says which database
(its random ``store`` id: a sidecar left by an earlier database in the same directory is not taken for
this one's, although a new database numbers its generations and chunk keys from 1 again) and which
generation it was built for (with that generation's random ``token`` where the store draws one: a
database restored from a backup reaches the same generation numbers again with other data), a digest
of the chunk keys it covers and a digest of each of its files (so a truncated or overwritten file is
rebuilt instead of being loaded: a graph library reading a damaged file can crash the process).
:func:`stamp_state` says whether a saved sidecar can be used and, when it claims to be current but is
not, why, which ``check()`` reports. A stamp may also carry counts its sidecar's own code reads back
(:attr:`Stamp.counts`): the HNSW graph's tell whether a graph of an earlier generation can be brought
up to date instead of built again (:mod:`.dense`).

Several processes may build the same sidecar at once (server workers sharing a store). :func:`publish`
lets each build under a name of its own, digests what it built before moving it into place and writes
the stamp last, through a name of its own too: a stamp only ever vouches for the bytes its writer built,
so an interleaving of two saves at worst leaves a stamp that does not match the file, and the sidecar is
built again. A reader that checks a file's digest and then loads it should load the bytes it checked
(``found``), not read the path twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

Keys = npt.NDArray[np.int64]
#: Bytes read at a time when hashing a file.
READ_BLOCK = 1 << 20


def keys_digest(keys: Keys) -> str:
    """A digest of the chunk keys a sidecar covers, in order."""
    return hashlib.sha256(np.ascontiguousarray(keys, dtype=np.int64).tobytes()).hexdigest()


def content_digest(data: bytes) -> str:
    """The SHA-256 of bytes read whole, as :func:`file_digest` gives it for a file holding them."""
    return hashlib.sha256(data).hexdigest()


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


def file_digests(root: Path, name: str) -> dict[str, str]:
    """The digest of each file of the sidecar at ``root`` (a file, or a folder's files), named as they
    are once the sidecar is saved as ``name``: ``name`` itself, or ``name/<path in the folder>``."""
    return {
        name if file == root else f"{name}/{file.relative_to(root).as_posix()}": file_digest(file)
        for file in sidecar_files(root)
    }


def scratch_path(saved: Path) -> Path:
    """A name beside ``saved`` that only this process and thread build under."""
    return saved.with_name(f"{saved.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def publish(
    built: Path,
    saved: Path,
    stamp: Path,
    generation: int,
    keys: Keys,
    *,
    variant: str = "",
    store: str = "",
    counts: Mapping[str, int] | None = None,
    lists: Mapping[str, Sequence[int]] | None = None,
    token: str = "",
) -> None:
    """Move the sidecar built at ``built`` (a :func:`scratch_path`) to ``saved`` and stamp it as covering
    ``keys`` of ``generation`` (whose token is ``token``) of database ``store``, built as ``variant``
    says (when an index can be built from the same rows in more than one way), with the ``counts`` its
    own code reads back (:attr:`Stamp.counts`), and the lists of chunk keys it reads back likewise
    (:attr:`Stamp.lists`). The digests are taken of what was built, before the
    move, and the stamp is written last, whole (see the module docstring)."""
    files = file_digests(built, saved.name)
    body: dict[str, object] = {
        "generation": generation,
        "size": int(keys.size),
        "keys": keys_digest(keys),
        "files": files,
    }
    if variant:
        body["variant"] = variant
    if store:
        body["store"] = store
    if counts:
        body["counts"] = dict(counts)
    if lists:
        body["lists"] = {name: [int(key) for key in keys] for name, keys in lists.items()}
    if token:
        body["token"] = token
    try:
        if built.is_dir():  # a folder cannot be replaced while it holds files: the old one goes first
            shutil.rmtree(saved, ignore_errors=True)
        os.replace(built, saved)
    except OSError:  # another process's folder moved in between: it stamps its own, this one is dropped
        if built.is_dir():
            shutil.rmtree(built, ignore_errors=True)
        else:
            built.unlink(missing_ok=True)
        return
    written = scratch_path(stamp)
    written.write_text(json.dumps(body, sort_keys=True), encoding="utf-8")
    os.replace(written, stamp)


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a stamp records (:func:`publish`): the ``generation`` of database ``store`` the sidecar was
    built for and its ``token`` ("" when none was recorded), the digest of the chunk ``keys`` it
    covers, the digest of each of its ``files``, the ``variant`` it was built as, and ``counts`` and
    ``lists``: numbers and lists of chunk keys the sidecar's own code records and reads back (the HNSW
    graph's, :mod:`.dense`)."""

    generation: int
    keys: str
    files: dict[str, str]
    variant: str = ""
    store: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    lists: dict[str, tuple[int, ...]] = field(default_factory=dict)
    token: str = ""


def read_stamp(stamp: Path) -> Stamp:
    """The stamp at ``stamp``. :class:`OSError` when it cannot be read (:class:`FileNotFoundError`
    when there is none); :class:`ValueError`, :class:`KeyError` or :class:`TypeError` when it is not a
    stamp."""
    body = json.loads(stamp.read_text(encoding="utf-8"))
    return Stamp(
        generation=int(body["generation"]),
        keys=str(body["keys"]),
        files={str(name): str(digest) for name, digest in dict(body["files"]).items()},
        variant=str(body.get("variant", "")),
        store=str(body.get("store", "")),
        counts={str(name): int(count) for name, count in dict(body.get("counts", {})).items()},
        lists={str(name): tuple(map(int, keys)) for name, keys in dict(body.get("lists", {})).items()},
        token=str(body.get("token", "")),
    )


@dataclass(frozen=True, slots=True)
class StampState:
    """Whether the sidecar beside a stamp can be loaded (``usable``); ``problem`` says why a sidecar
    that claims the current generation cannot (``None`` when it can, or when it is absent or stale and
    will simply be rebuilt); ``stamp``: what the stamp records, when it is usable."""

    usable: bool
    problem: str | None = None
    stamp: Stamp | None = None


def stamp_state(
    stamp: Path,
    generation: int,
    keys: Keys,
    saved: Path,
    variant: str = "",
    *,
    store: str = "",
    found: Mapping[str, str] | None = None,
    token: str = "",
) -> StampState:
    """Can the sidecar saved at ``saved``, stamped by ``stamp``, serve ``keys`` of ``generation`` (whose
    token is ``token``, "" for none) of database ``store``, built as ``variant``? ``found``: the digests
    of the sidecar's files as the caller read them (:func:`file_digests`), which it then loads; by
    default they are read from ``saved``."""
    try:
        recorded = read_stamp(stamp)
    except FileNotFoundError:
        return StampState(False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return StampState(False, f"{stamp.name} is unreadable ({type(exc).__name__})")
    if recorded.generation != generation or recorded.store != store or recorded.token != token:
        return StampState(False)  # stale, or another database's or history's: rebuilt on use
    if recorded.keys != keys_digest(keys):
        return StampState(False, f"{saved.name} was built for other chunks than the store holds")
    if found is None:
        try:
            found = file_digests(saved, saved.name)
        except OSError as exc:
            return StampState(False, f"{saved.name} cannot be read: {exc.strerror}")
    if found != recorded.files:
        changed = _differences(recorded.files, found)
        return StampState(False, f"{saved.name} does not match its stamp ({', '.join(changed)})")
    if recorded.variant != variant:
        return StampState(False)  # intact, but built another way than wanted: rebuilt on use
    return StampState(True, stamp=recorded)


def _differences(recorded: Mapping[str, str], found: Mapping[str, str]) -> Sequence[str]:
    """The files that are missing, changed or unexpected, named."""
    missing = [f"{name} missing" for name in recorded if name not in found]
    changed = [f"{name} changed" for name in recorded if name in found and found[name] != recorded[name]]
    extra = [f"{name} unexpected" for name in found if name not in recorded]
    return missing + changed + extra
