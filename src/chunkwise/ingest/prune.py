"""Which stored documents an ingest of folders leaves behind: those whose files are gone.

``chunkwise ingest DIR --prune`` takes the store as a mirror of the folders it is given. A file's
document id is its path as given (``docs/a.md`` for ``chunkwise ingest docs``, see
:func:`~chunkwise.document.path_id`), so a stored id that names a path inside one of the folders, read
by no walk of them and not on disk, is a document whose file was deleted or moved away since it was
ingested. A file still there is never pruned, read or not (one that failed to parse keeps its former
version, and the failure is reported). Documents added another way (uploads, ``add_documents``) whose
ids happen to name paths inside a folder are taken for its files: prune only the folders a store
mirrors.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path

__all__ = ["stale_documents"]


def stale_documents(stored: Iterable[str], folders: Iterable[Path], walked: Collection[str]) -> list[str]:
    """The ids among ``stored`` inside one of ``folders`` (as their paths were given) that are neither in
    ``walked`` (the ids of the files an ingest of them found) nor a path that exists, in order."""
    prefixes = [_prefix(folder) for folder in folders]
    return [
        doc_id
        for doc_id in stored
        if doc_id not in walked
        and any(_inside(doc_id, prefix) for prefix in prefixes)
        and not os.path.lexists(doc_id)
    ]


def _prefix(folder: Path) -> str:
    """What the ids of files inside ``folder`` start with: its path and a slash (nothing for ``.``,
    whose files are named without it)."""
    posix = folder.as_posix()
    return "" if posix == "." else posix.rstrip("/") + "/"


def _inside(doc_id: str, prefix: str) -> bool:
    """Whether ``doc_id`` names a path inside the folder whose ids start with ``prefix``; inside ``.``,
    any relative path that does not climb out of it."""
    if prefix:
        return doc_id.startswith(prefix)
    return not doc_id.startswith(("/", "../")) and doc_id != ".." and "://" not in doc_id
