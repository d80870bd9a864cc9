"""Distributed ingestion on a real local Ray cluster (two CPUs) into real PostgreSQL and SQLite stores:
the same result as a serial ingest, per-file failures and progress events as a serial ingest reports
them, relative paths read from another working directory than the workers', a worker killed mid-run,
a cluster address that does not answer, and one other than the cluster the process is attached to."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkwise.config import from_dict
from chunkwise.errors import ClusterError
from chunkwise.ingest.ray_ingest import cluster_location, cluster_paths, connect, same_cluster
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.store import open_store
from chunkwise.store.pgurl import parse
from tests.support.cli import run_chunkwise
from tests.support.fakes import HashEmbedder
from tests.test_store_postgres import snapshot

ray = pytest.importorskip("ray")
pytest.importorskip("psycopg")

#: No embedding cache: the Ray workers must compute every vector themselves.
CONFIG = {"models": {"cache": False}}


@pytest.fixture(scope="module")
def ray_cluster():  # type: ignore[no-untyped-def]
    """A local Ray cluster of two CPUs for this module; its address."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, data_dir):
    """The committed fixtures in five formats and one file that cannot be parsed."""
    folder = tmp_path_factory.mktemp("inputs")
    for path in sorted((data_dir / "formats").iterdir())[::3]:
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a PDF")
    return folder


def stored_chunks(server, url: str) -> dict[str, tuple[str, str, np.ndarray]]:
    """chunk id -> (text, header, vector) of every chunk of the store at ``url``."""
    schema = parse(url).schema
    with server.admin() as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        rows = conn.execute(
            f'SELECT c.chunk_id, c.text, c.header, v.embedding FROM "{schema}".chunks c'
            f' JOIN "{schema}".vectors v USING (chunk_key)'
        ).fetchall()
    return {cid: (text, header, np.asarray(vector.to_numpy())) for cid, text, header, vector in rows}


def test_ray_ingest_equals_a_serial_ingest(pg_server, ray_cluster, inputs, tmp_path):
    config = from_dict(CONFIG)
    serial_url, ray_url = pg_server.url("serial_ingest"), pg_server.url("ray_ingest")
    with KnowledgeBase(serial_url, config) as kb:
        serial = kb.add([inputs])
    with KnowledgeBase(ray_url, config) as kb:
        distributed = kb.add([inputs], ray="auto")
    assert serial.failed == distributed.failed
    assert [source for source, _ in distributed.failed] == [str(inputs / "broken.pdf")]
    assert sorted(serial.added) == sorted(distributed.added)
    assert serial.chunks == distributed.chunks
    assert snapshot(serial_url) == snapshot(ray_url)
    recorded = []
    for url in (serial_url, ray_url):  # the actors embed with the driver's embedder, version included
        with open_store(url, read_only=True) as store:
            recorded.append([store.meta(key) for key in ("embedder", "dim", "embedder_version")])
    assert recorded[0] == recorded[1]
    assert recorded[0][2], "the default embedder's package version is recorded"
    one, other = stored_chunks(pg_server, serial_url), stored_chunks(pg_server, ray_url)
    assert one.keys() == other.keys()
    for chunk_id, (text, header, vector) in one.items():
        assert (text, header) == other[chunk_id][:2]
        # the actors batch other texts together; per-row INT8 activations make that no matter
        assert np.allclose(vector, other[chunk_id][2], rtol=0, atol=1e-5)
    with KnowledgeBase(ray_url, config) as kb:  # unchanged files are skipped on the cluster too
        again = kb.add([inputs], ray="auto")
    assert sorted(again.skipped) == sorted(serial.added)
    assert again.failed == serial.failed


def windowed_vectors(store: Any) -> dict[str, tuple[int, np.ndarray]]:
    """chunk id -> (its number of passage windows, its vector) of every chunk of a SQLite store."""
    index = store.dense_index()
    owners, counts = np.unique(index.owners, return_counts=True)
    windows = dict(zip(owners.tolist(), counts.tolist(), strict=True))
    return {c.chunk_id: (windows.get(c.key, 0), c.vector) for c in store.chunks(index.keys.tolist())}


def test_ray_ingest_into_sqlite_has_one_writer(pg_server, ray_cluster, inputs, tmp_path):
    """Into SQLite the driver writes what the actors embed; here with passage windows and no whole
    vectors, so the actors hand back each long chunk's vector pooled from its windows."""
    windows = {"windows": 64, "window_overlap": False, "embed_whole": False}
    config = from_dict({**CONFIG, "retrieval": windows})
    with KnowledgeBase(tmp_path / "serial", config) as kb:
        serial = kb.add([inputs])
        serial_docs = [d.to_dict() for d in kb.store.documents()]
        serial_vectors = windowed_vectors(kb.store)
    with KnowledgeBase(tmp_path / "ray", config) as kb:
        distributed = kb.add([inputs], ray="auto")
        assert kb.store.check() == []
        assert [d.to_dict() for d in kb.store.documents()] == serial_docs
        vectors = windowed_vectors(kb.store)
    assert distributed.failed == serial.failed
    assert vectors.keys() == serial_vectors.keys()
    assert 0 < sum(1 for count, _ in vectors.values() if count) < len(vectors)  # long and short chunks
    for chunk_id, (count, vector) in vectors.items():
        assert count == serial_vectors[chunk_id][0]
        # the same vector, whatever batch embedded it (see the test above)
        assert np.allclose(vector, serial_vectors[chunk_id][1], rtol=0, atol=1e-5)


def test_a_second_run_in_the_same_process_reads_the_store_anew(ray_cluster, tmp_path):
    """The workers outlive a run: a second run with the same settings must not reuse the store
    connection of the first (here to a database file deleted since), or it reports every file skipped
    and stores nothing."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name, body in [("a.md", "# Bags\n\nBags may weigh 23 kg.\n"), ("b.txt", "Lounges open at six.\n")]:
        (folder / name).write_text(body)
    config = from_dict(CONFIG)
    with KnowledgeBase(tmp_path / "kb", config) as kb:
        first = kb.add([folder], ray="auto")
    assert len(first.added) == 2
    shutil.rmtree(tmp_path / "kb")
    with KnowledgeBase(tmp_path / "kb", config) as kb:
        second = kb.add([folder], ray="auto")
        assert sorted(second.added) == sorted(first.added)
        assert second.skipped == []
        assert kb.store.counts()["documents"] == 2


def test_a_spent_budget_in_the_actors_fails_the_documents_it_stops(pg_server, ray_cluster, tmp_path):
    """Each worker's token budget refuses its embedding calls: every document fails, named in the
    report with the budget's one-line reason, and the run ends normally."""
    folder = tmp_path / "in"
    folder.mkdir()
    names = [f"note{i}.md" for i in range(4)]
    for name in names:
        (folder / name).write_text(f"# {name}\n\n" + "Checked bags may weigh 23 kg in economy. " * 20 + "\n")
    config = from_dict({"models": {"cache": False, "max_tokens": 20}})
    url = pg_server.url("ray_budget")
    with KnowledgeBase(url, config) as kb:
        report = kb.add([folder], ray="auto")
        assert kb.store.counts()["documents"] == 0
        assert kb.store.check() == []
    assert sorted(source for source, _ in report.failed) == [(folder / name).as_posix() for name in names]
    for _, reason in report.failed:
        assert "token budget exceeded" in reason
        assert "\n" not in reason
    assert report.added == report.skipped == []


def embed_workers() -> list[int]:
    """Process ids of the Ray actors that embed (their process title names the operator)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "MapBatches(Embed)" in cmdline:
            found.append(proc.info["pid"])
    return found


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(pg_server, ray_cluster, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(24):
        body = "\n\n".join(f"Note {i}, paragraph {j}: fare class F{j} allows {i + j} kg." for j in range(40))
        (folder / f"note{i:02}.md").write_text(f"# Note {i}\n\n{body}\n")
    config = tmp_path / "config.toml"
    config.write_text("[models]\ncache = false\n")
    url = pg_server.url("killed")
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    args = ("ingest", str(folder), "--kb", url, "--config", str(config), "--ray", ray_cluster, "--json")
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    run = subprocess.Popen(
        [sys.executable, "-m", "chunkwise", *args], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    killed = []
    while run.poll() is None and not killed:
        with open_store(url) as store:
            stored = store.counts()["documents"]
        workers = embed_workers()
        if stored >= 2 and workers:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])
        time.sleep(0.5)
    run.communicate(timeout=600)
    assert killed, "the ingest ended before a worker could be killed"
    with open_store(url) as store:
        assert store.check() == []  # whatever the first run stored is whole
    rerun = run_chunkwise(*args, env=env)
    assert rerun.returncode == 0, rerun.stderr
    reference = pg_server.url("killed_reference")
    with KnowledgeBase(reference, from_dict(CONFIG), models=Models(embedder=HashEmbedder())) as kb:
        kb.add([folder])
    assert snapshot(url) == snapshot(reference)


def test_a_ray_address_that_does_not_answer(tmp_path, data_dir):
    done = run_chunkwise(
        "ingest", str(data_dir / "formats"), "--kb", str(tmp_path / "kb"), "--ray", "127.0.0.1:1"
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: Ray cluster 127.0.0.1:1: does not answer")


def test_files_and_a_store_directory_go_to_the_workers_by_absolute_path(tmp_path, monkeypatch):
    """The workers run in the cluster's working directory: they get absolute paths, and the document
    ids of the paths as given (a relative path keeps its relative id, as in a serial ingest)."""
    monkeypatch.chdir(tmp_path)
    assert cluster_paths([Path("in/a.md"), tmp_path / "b.txt"]) == [
        (str(tmp_path / "in" / "a.md"), "in/a.md"),
        (str(tmp_path / "b.txt"), (tmp_path / "b.txt").as_posix()),
    ]
    assert cluster_location("kb") == str(tmp_path / "kb")
    assert cluster_location(Path("kb")) == str(tmp_path / "kb")
    url = "postgresql://user:secret@db:5432/rag?schema=support"
    assert cluster_location(url) == url


def test_relative_paths_from_another_working_directory_than_the_workers(ray_cluster, tmp_path, monkeypatch):
    """The cluster started in another working directory than the caller's now: relative file paths and
    a relative knowledge-base directory are still found, with the same ids as a serial ingest."""
    monkeypatch.chdir(tmp_path)
    Path("in").mkdir()
    Path("in/a.md").write_text("# Bags\n\nBags may weigh 23 kg.\n")
    Path("in/b.txt").write_text("Lounges open at six.\n")
    config = from_dict(CONFIG)
    with KnowledgeBase("serial", config) as kb:
        serial = kb.add(["in"])
    with KnowledgeBase("kb", config) as kb:
        distributed = kb.add(["in", "in/b.txt"], ray="auto")
        stored = sorted(d.doc_id for d in kb.store.documents())
    assert sorted(serial.added) == ["in/a.md", "in/b.txt"] == stored
    assert sorted(distributed.added + distributed.skipped) == ["in/a.md", "in/b.txt", "in/b.txt"]
    assert distributed.failed == []
    assert ray.is_initialized(), "a Ray the process was attached to is left running"


def test_progress_events_match_a_serial_ingest(ray_cluster, tmp_path):
    """A file named twice is stored once and skipped once, the second time at storage (both were
    prepared before either was stored): its skipped event carries no chunks on Ray either."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name, body in [("a.md", "# Bags\n\nBags may weigh 23 kg.\n"), ("b.txt", "Lounges open at six.\n")]:
        (folder / name).write_text(body)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a PDF")
    paths = [folder / "a.md", folder / "a.md", folder / "b.txt", folder / "broken.pdf"]
    config = from_dict(CONFIG)
    events: dict[str, list[Any]] = {"serial": [], "ray": []}
    with KnowledgeBase(tmp_path / "serial", config) as kb:
        serial = kb.add(paths, on_progress=events["serial"].append)
    with KnowledgeBase(tmp_path / "ray", config) as kb:
        distributed = kb.add(paths, on_progress=events["ray"].append, ray="auto")
    seen = {way: sorted((e.source, e.status, e.chunks) for e in found) for way, found in events.items()}
    assert seen["ray"] == seen["serial"]
    assert (folder / "a.md").as_posix() in [
        source for source, status, _ in seen["ray"] if status == "skipped"
    ]
    for found in events.values():
        assert [(e.done, e.total) for e in found] == [(n, 4) for n in range(1, 5)]
    assert distributed.chunks == serial.chunks


def test_another_address_than_the_attached_cluster_is_refused(ray_cluster, tmp_path):
    """Ray holds one cluster per process: an address that names another is refused, naming both,
    rather than ingesting on the attached one; the attached cluster is left as it was."""
    assert connect(ray_cluster) is False
    assert connect("auto") is False
    host, port = ray_cluster.rsplit(":", 1)
    assert connect(f"127.0.0.1:{port}") is False  # the same cluster, by this machine's loopback
    other = f"{host}:{int(port) + 1}"
    with pytest.raises(ClusterError) as refused:
        connect(other)
    assert other in str(refused.value)
    assert ray_cluster in str(refused.value)
    with KnowledgeBase(tmp_path / "kb", from_dict(CONFIG)) as kb, pytest.raises(ClusterError):
        kb.add([], ray=other)
    assert ray.is_initialized()
    assert ray.get_runtime_context().gcs_address == ray_cluster


def test_same_cluster() -> None:
    assert same_cluster("10.1.2.3:6379", "10.1.2.3:6379")
    assert same_cluster("ray://10.1.2.3:6379", "10.1.2.3:6379")
    assert not same_cluster("10.1.2.3:6380", "10.1.2.3:6379")
    assert not same_cluster("10.1.2.4:6379", "10.1.2.3:6379")
    assert same_cluster("localhost:6379", "127.0.0.1:6379")
    assert not same_cluster("no-port", "10.1.2.3:6379")
