"""Stores for the tests: documents cut into fixed-size chunks with random unit vectors, put straight into
a store (no model involved), and the damage the hardening tests inject into a knowledge-base directory."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from chunkwise.chunking.chunk import Chunk, make_chunk
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.store.protocol import Store
from tests.support.documents import doc_from_markdown_lines

DOC = doc_from_markdown_lines(
    "guide.md",
    "# Travel guide\nChecked bags may weigh up to 23 kg.\n## Pets\nSmall pets travel in the cabin.\n"
    "## Refunds\nRefunds take seven working days.",
)

#: usearch's HNSW tests. A marker, not ``pytest.importorskip``: importing usearch before onnxruntime
#: crashes the process when onnxruntime loads (see ``chunkwise.store.dense.usearch_index``).
requires_usearch = pytest.mark.skipif(
    importlib.util.find_spec("usearch") is None, reason="usearch not installed"
)


def fixed_chunks(doc: Document, size: int) -> list[Chunk]:
    """``doc`` cut every ``size`` characters."""
    return [make_chunk(doc, s, min(s + size, len(doc.text))) for s in range(0, len(doc.text), size)]


def unit_vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    """``n`` random unit vectors."""
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def put(
    store: Store,
    doc: Document,
    size: int = 40,
    seed: int = 0,
    fingerprint: str = "f1",
    *,
    windowed: bool = False,
) -> list[Chunk]:
    """Store ``doc`` in chunks of ``size`` characters, headed by its id, under the embedder ``test``;
    ``windowed``: with ``i % 3`` passage windows of random vectors for the ``i``-th chunk."""
    chunks = fixed_chunks(doc, size)
    store.check_embedder("test", 8)
    owners = window_owners(len(chunks)) if windowed else []
    store.put(
        doc,
        chunks,
        [f"Document: {doc.id}"] * len(chunks),
        unit_vectors(len(chunks), seed=seed),
        fingerprint=fingerprint,
        windows=(owners, unit_vectors(len(owners), seed=seed + 100)) if windowed else None,
    )
    return chunks


def window_owners(chunks: int) -> list[int]:
    """The chunk of each passage window :func:`put` stores: ``i % 3`` windows for the ``i``-th chunk."""
    return [i for i in range(chunks) for _ in range(i % 3)]


def best_scores(chunks: int, seed: int, query: np.ndarray) -> np.ndarray:
    """Each chunk's best cosine to ``query``, whole or window, as :func:`put` with ``windowed`` stores
    them (``seed`` as given to it)."""
    scores = unit_vectors(chunks, seed=seed) @ query
    owners = window_owners(chunks)
    for owner, vector in zip(owners, unit_vectors(len(owners), seed=seed + 100), strict=True):
        scores[owner] = max(scores[owner], float(vector @ query))
    return scores


def best_windows(keys: list[int], seed: int, query: np.ndarray) -> dict[int, float]:
    """The best window cosine to ``query`` of each chunk that has windows, as :func:`put` with
    ``windowed`` stores them (``keys``: the chunks' keys by ordinal; ``seed`` as given to it)."""
    owners = window_owners(len(keys))
    best: dict[int, float] = {}
    for owner, cosine in zip(owners, unit_vectors(len(owners), seed=seed + 100) @ query, strict=True):
        best[keys[owner]] = max(best.get(keys[owner], -1.0), float(cosine))
    return best


def animal_doc(i: int, paragraphs: int = 12) -> Document:
    """A document about animal ``i``, whose words no other document shares (``animal{i}``)."""
    lines = (f"The animal{i} eats plant{i}x{p} near river{i}x{p} every morning." for p in range(paragraphs))
    body = "\n".join(lines)
    return doc_from_markdown_lines(f"animal{i}.md", f"# Animal {i}\n{body}")


def fill(store: Store, documents: int) -> None:
    """Put ``documents`` animal documents (see :func:`animal_doc`) into ``store``."""
    for i in range(documents):
        put(store, animal_doc(i), size=120, seed=i)


@contextmanager
def read_only_directory(directory: Path) -> Iterator[None]:
    """``directory`` and its files made unwritable for this process, and writable again afterwards: by
    permissions, or (as root, whom permissions do not stop) by the immutable attribute; skips the test
    where neither is possible."""
    paths = [directory, *directory.iterdir()]
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            yield
        finally:
            for p in paths:
                p.chmod(modes[p])
        return
    if subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, check=False).returncode:
        pytest.skip("running as root without the immutable attribute: no way to make a directory read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True, check=False)


def restore(directory: Path, backup: Path) -> None:
    """Put the copy ``backup`` of the database back in place, the sidecar indexes and their stamps left
    as they are (no connection is open, so the database is the whole file: the last connection to close
    folds its write-ahead log into it and deletes it)."""
    assert not list(directory.glob("kb.sqlite-*"))
    shutil.copyfile(backup, directory / "kb.sqlite")


def overwrite(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` into ``path`` at ``offset``, in place."""
    with path.open("r+b") as file:
        file.seek(offset)
        file.write(data)


#: Puts documents into a store and exits without closing it, so its commits stay in the write-ahead log.
_LOG_WRITER = """
import os, sys
from chunkwise.store.sqlite import SQLiteStore
from tests.support.store import fill
fill(SQLiteStore(sys.argv[1]), int(sys.argv[2]))
os._exit(0)
"""


def leave_log(kb: Path, documents: int) -> Path:
    """A store at ``kb`` holding ``documents`` animal documents whose commits are all still in the
    write-ahead log (the writer exits without a checkpoint); returns the log."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run(
        [sys.executable, "-c", _LOG_WRITER, str(kb), str(documents)], check=True, env=env, cwd=root
    )
    return kb / "kb.sqlite-wal"


def assert_embedder_recorded_and_checked(store: Store) -> None:
    """The embedder contract of every store, on an empty writable ``store``: a search
    (``record=False``) records nothing, an ingest records name, dimension and version, and another
    name, dimension or version is then refused, naming what built the vectors."""
    store.check_embedder("local:a", 8, "pkg==1.0", record=False)
    assert store.meta("embedder") is None
    store.check_embedder("local:a", 8, "pkg==1.0")
    assert (store.meta("embedder"), store.meta("dim"), store.meta("embedder_version")) == (
        "local:a",
        "8",
        "pkg==1.0",
    )
    store.check_embedder("local:a", 8, "pkg==1.0", record=False)
    for name, dim, version in (("local:b", 8, "pkg==1.0"), ("local:a", 16, "pkg==1.0"), ("local:a", 8, "")):
        with pytest.raises(ConfigError, match=r"built with embedder 'local:a' \(8-d, pkg==1.0\)"):
            store.check_embedder(name, dim, version, record=False)
