"""Distributed ingestion on Ray Data: ``chunkwise ingest PATH... --kb URL --ray auto|ADDRESS``.

The file list becomes a Ray dataset, one file per row, and flows through the ingest pipeline's own steps:

1. **Prepare, in tasks**: each file is parsed (:func:`~.pipeline.parse_one`), skipped when the store
   already holds it with the same content and settings (:meth:`~.pipeline.IngestPipeline.unchanged`),
   else chunked and given its headers (:meth:`~.pipeline.IngestPipeline.prepare`). Each worker process
   builds its pipeline once (its store connection and its own :class:`~chunkwise.models.Models`).
2. **Embed, in an actor pool**: each actor loads the embedder once and embeds the chunks of a batch of
   documents sorted by length (similar lengths share a model batch, so little padding is computed).
3. **Store, one transaction per document**: a server store (PostgreSQL) takes any number of writers, so
   the actors store what they embedded; SQLite takes one writer, so the driver stores it. Either way
   :meth:`~chunkwise.store.protocol.Store.put` decides ``added``/``replaced``/``skipped`` inside the
   transaction, so a retried batch never stores a document twice.

The result equals a serial ingest: the same documents, chunk ids, texts and headers, and the same
embedder (name, dimension and package version, checked by every actor against the one recorded), and the
same vectors: the bundled INT8 embedders quantise each token's activations on its own
(:mod:`~chunkwise.models.row_quantize`), so a text's vector does not depend on the batch it meets. A
file that cannot be parsed or chunked (a chunker's bug included) is reported as a serial ingest reports
it. Ray retries the tasks and restarts the actors of a worker that dies; documents committed before stay
committed, and a re-run stores the rest. Each worker process keeps its own model ledger and budget:
``--max-cost`` bounds each worker, not the cluster. An error of the embedder or of a server store in an
actor fails the documents it stops, named in the report, rather than the whole run: a spent budget or a
server that keeps failing fails the documents of each batch it meets; a text the embedder refuses fails
its document alone, as in a serial ingest. An error that does end the run (a worker's embedder not the
one recorded, the cluster lost) is raised as the worker's own typed error, or as a one-line
:class:`ClusterError`.

The driver loads the embedder once to record it in the store and fingerprint the settings (as a serial
ingest does), then reads the results as they arrive, for the progress bar and the report. Imported only
with ``--ray``: Ray is the ``[ray]`` extra.

The workers run in the cluster's working directory, not the caller's: each file is sent by its absolute
path (with the document id of the path as given, so ids match a serial ingest's), and a knowledge-base
directory by its absolute path. A Ray this run initialised (a local instance it started, or its
connection to a cluster) is shut down when the run ends; one the process was already attached to is left
as it was, and a different address is refused rather than ingested on the other cluster. The library
prints nothing: Ray is started without forwarding the workers' output, and Ray Data's progress bars and
log lines are off for the run.
"""

from __future__ import annotations

import ipaddress
import logging
import pickle
import re
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import numpy as np

from chunkwise.config import PipelineConfig
from chunkwise.document import path_id
from chunkwise.errors import ChunkwiseError, ClusterError, ModelError, failure_reason
from chunkwise.ingest.paths import expand_paths
from chunkwise.ingest.pipeline import (
    Failure,
    IngestPipeline,
    Prepared,
    chunk_texts,
    parse_one,
    refused_input,
    shown_id,
    unexpected,
    unstorable_text,
)
from chunkwise.ingest.report import IngestEvent, IngestReport, ProgressFn, Status
from chunkwise.models.context import Models
from chunkwise.models.protocols import Vectors
from chunkwise.store import is_url, open_store

#: Ray resources of one prepare task and one embedding actor: on N cores, N actors and N prepare tasks
#: fit at once, and each actor's model runs on one thread (Ray sets OMP_NUM_THREADS from ``num_cpus``).
PREPARE_CPUS = 0.25
EMBED_CPUS = 0.75
#: Documents per embedding batch.
DOCS_PER_BATCH = 8
#: Seconds to wait for a cluster address to accept a connection.
CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Job:
    """What every worker needs: the store location as given (it may carry a password: it travels to the
    workers in memory and is never shown), the configuration, the run's fingerprint, whether the
    workers store (a server store) or the driver does (SQLite), and the run's own id.

    The run id makes two runs with the same settings different jobs: a worker process outlives a run,
    and the pipeline it built for an earlier one holds a store connection (to a database file that may
    since have been deleted and created again) and that run's model ledger and budget."""

    location: str = field(repr=False)
    config: PipelineConfig
    fingerprint: str
    workers_store: bool
    run: str


@dataclass
class Outcome:
    """One file's way through the dataset: ``source`` (document id once parsed), ``status`` (``failed``,
    ``skipped``, ``prepared``, ``embedded``, or what the store committed), and what later steps need."""

    source: str
    status: str
    reason: str = ""
    prepared: Prepared | None = None
    vectors: Vectors | None = field(default=None, repr=False)
    chunks: int = 0
    embed_seconds: float = 0.0


def connect(address: str) -> bool:
    """Join the Ray cluster at ``address`` (``auto``: the one this process is attached to, else the one
    ``RAY_ADDRESS`` or a local ``ray start`` names, else a new local one). True when this call
    initialised Ray in this process, for the caller to shut it down when done; False when the process
    was already attached, to a cluster ``address`` names (``auto`` takes it as it is, and so does a Ray
    Client address, ``ray://HOST:PORT``: its port is the client server's, not the cluster's GCS).

    Ray is initialised quietly: its own messages at ERROR level and above only, the workers' output not
    forwarded to this process (a library call prints nothing), no dashboard.

    Raises:
        ClusterError: the address does not answer, Ray cannot join it, or this process is already
            attached to another cluster (Ray holds one per process: ingesting there would put the work
            on a cluster the caller did not name).
    """
    import ray

    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        client = address.startswith("ray://")  # a Ray Client port, which the GCS address cannot confirm
        if address != "auto" and not client and not same_cluster(address, current):
            raise ClusterError(
                f"Ray cluster {address}: this process is already attached to the Ray cluster at {current}"
                " (ingest with ray='auto' to use it, or call ray.shutdown() first)"
            )
        return False
    options: dict[str, Any] = {
        "logging_level": logging.ERROR,
        "include_dashboard": False,
        "log_to_driver": False,
    }
    if address != "auto":
        try:
            host, port = _host_port(address)
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
        except (OSError, ValueError) as exc:
            raise ClusterError(f"Ray cluster {address}: does not answer ({exc})") from None
        options["address"] = address
    try:
        ray.init(**options)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError or its own types here
        raise ClusterError(f"Ray cluster {address}: {type(exc).__name__}: {exc}") from None
    return True


def _host_port(address: str) -> tuple[str, int]:
    """The host and port of a Ray address (``HOST:PORT`` or ``ray://HOST:PORT``); ValueError without."""
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    host, port = parts.hostname, parts.port
    if not host or not port:
        raise ValueError("expected HOST:PORT")
    return host, port


def same_cluster(address: str, current: str) -> bool:
    """Whether the Ray address ``address`` names the cluster whose GCS is at ``current``: the same port,
    and hosts that resolve to the same address or both to this machine (a loopback address, or the
    address Ray gives this node: ``ray start`` prints the latter, a user may write ``127.0.0.1``)."""
    try:
        (host, port), (current_host, current_port) = _host_port(address), _host_port(current)
        if port != current_port:
            return False
        wanted, there = socket.gethostbyname(host), socket.gethostbyname(current_host)
    except (OSError, ValueError):
        return address == current
    return wanted == there or (_this_machine(wanted) and _this_machine(there))


def _this_machine(ip: str) -> bool:
    """Whether ``ip`` is a loopback address or the one Ray gives this node."""
    from ray.util import get_node_ip_address

    return ipaddress.ip_address(ip).is_loopback or ip == get_node_ip_address()  # type: ignore[no-untyped-call]


@contextmanager
def quiet_ray_data() -> Iterator[None]:
    """Ray Data without progress bars, execution banners or log lines on this process's stderr for the
    duration of a run (the caller shows its own progress; an error that ends the run is raised as a
    typed error, not logged); the settings before are restored after, as the process may use Ray Data
    for its own work."""
    import ray

    context = ray.data.DataContext.get_current()
    logger = logging.getLogger("ray.data")
    before = (context.enable_progress_bars, context.print_on_execution_start, logger.level)
    context.enable_progress_bars = context.print_on_execution_start = False
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        context.enable_progress_bars, context.print_on_execution_start = before[:2]
        logger.setLevel(before[2])


def cluster_paths(files: Sequence[Path]) -> list[tuple[str, str]]:
    """Each file as the workers read it, its absolute path (they run in the cluster's working
    directory, not this process's), with its document id: the path as given, as a serial ingest names
    it (:func:`~chunkwise.parsing.parse_file`), so a relative path keeps its relative id."""
    return [(str(file.absolute()), path_id(file.as_posix())) for file in files]


def cluster_location(location: str | Path) -> str:
    """The store location as the workers open it: a URL as given, a knowledge-base directory by its
    absolute path (the workers' working directory is not this process's)."""
    return str(location) if is_url(str(location)) else str(Path(location).absolute())


#: This worker process's pipeline and the job it was built for (at most one).
_WORKER: list[tuple[Job, IngestPipeline]] = []


def _pipeline(job: Job) -> IngestPipeline:
    """This worker process's pipeline for ``job`` (built once per run: a store connection and a Models);
    the pipeline of an earlier run is dropped and its store closed (a server store's connection pool
    would otherwise stay open as long as the worker process)."""
    if not _WORKER or _WORKER[0][0] != job:
        if _WORKER:
            _WORKER.pop()[1].store.close()
        store = open_store(job.location, create=False)
        _WORKER.append((job, IngestPipeline(store, Models(job.config.models), job.config)))
    return _WORKER[0][1]


def prepare_row(row: dict[str, Any], job: Job) -> dict[str, Any]:
    """Task: parse, skip-check and prepare one file (a failure becomes the file's outcome)."""
    pipeline = _pipeline(job)
    item = parse_one(Path(row["path"]), job.config.limits.parse_limits(), row["id"])
    if isinstance(item, Failure):
        outcome = Outcome(item.source, "failed", item.reason)
    elif invalid := unstorable_text(item):
        outcome = Outcome(shown_id(item.id), "failed", invalid)
    elif pipeline.unchanged(item, job.fingerprint):
        outcome = Outcome(item.id, "skipped")
    else:
        try:
            outcome = Outcome(item.id, "prepared", prepared=pipeline.prepare(item))
        except ChunkwiseError as exc:
            outcome = Outcome(item.source or item.id, "failed", failure_reason(exc))
        except Exception as exc:  # a chunker bug fails its file, as in a serial ingest
            outcome = Outcome(item.source or item.id, "failed", unexpected(exc))
    return {"outcome": pickle.dumps(outcome)}


class Embed:
    """Actor: embeds the prepared documents of a batch (their chunks sorted by length, as passages:
    ``embed``, never the query side) and, for a server store, stores each in its transaction. On start
    it checks its embedder against the one the driver recorded (name, dimension and package version):
    a worker with another release of the model's package would write vectors that cannot be compared."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.pipeline = _pipeline(job)
        self.pipeline.begin()  # the driver recorded the embedder: this only checks it (ConfigError)
        self.embedder = self.pipeline.models.embedder()

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[bytes]]:
        """The batch's outcomes, each prepared document embedded (and, for a server store, stored), or
        failed with the reason: an error of the embedder or the store fails the documents it stops, not
        the run (see :meth:`embed`)."""
        outcomes: list[Outcome] = [pickle.loads(blob) for blob in batch["outcome"]]
        ready = [o for o in outcomes if o.prepared is not None]
        self.embed(ready)
        for outcome in ready:
            if self.job.workers_store and outcome.status == "embedded":
                assert outcome.prepared is not None
                assert outcome.vectors is not None
                try:
                    outcome.status = self.pipeline.store_prepared(
                        outcome.prepared, outcome.vectors, self.job.fingerprint
                    )
                except ChunkwiseError as exc:
                    outcome.status, outcome.reason = "failed", failure_reason(exc)
            if outcome.status == "failed":
                outcome.chunks = 0
            if self.job.workers_store or outcome.status == "failed":
                outcome.prepared = outcome.vectors = None
        return {"outcome": [pickle.dumps(o) for o in outcomes]}

    def embed(self, ready: list[Outcome]) -> None:
        """Embed the documents of ``ready`` in one call, or fail them: when the embedder refuses the call
        for what it read (:func:`~.pipeline.refused_input`), each is embedded in a call of its own and
        only those refused again fail; any other model error (a spent budget, a server that keeps
        failing) fails them all with its reason, and the next batch tries again."""
        try:
            self.embed_together(ready)
        except ModelError as exc:
            if not refused_input(exc) or len(ready) == 1:
                for outcome in ready:
                    outcome.status, outcome.reason = "failed", failure_reason(exc)
                return
            for outcome in ready:
                try:
                    self.embed_together([outcome])
                except ModelError as alone:
                    outcome.status, outcome.reason = "failed", failure_reason(alone)

    def embed_together(self, ready: list[Outcome]) -> None:
        """Embed the documents of ``ready`` in one call, their texts sorted by length, and mark them
        ``embedded`` with their vectors."""
        texts = chunk_texts([o.prepared for o in ready if o.prepared is not None])
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        began = time.perf_counter()
        if texts:
            vectors[order] = self.embedder.embed([texts[i] for i in order])
        seconds = time.perf_counter() - began
        row = 0
        for outcome in ready:
            assert outcome.prepared is not None
            n = len(outcome.prepared.embedded)  # its chunks (but the pooled ones), then its windows
            outcome.vectors, outcome.status = outcome.prepared.vectors(vectors[row : row + n]), "embedded"
            outcome.chunks = len(outcome.prepared.chunks)
            outcome.embed_seconds = seconds * n / max(1, len(texts))
            row += n


def ray_add_files(
    pipeline: IngestPipeline,
    location: str | Path,
    paths: Sequence[str | Path],
    address: str = "auto",
    on_progress: ProgressFn | None = None,
) -> IngestReport:
    """Ingest files on the Ray cluster at ``address`` into the store at ``location`` (the same store as
    ``pipeline.store``, named so that workers can open it); see the module docstring. A Ray this call
    initialised (see :func:`connect`) is shut down when it returns or raises, so that a library call
    leaves no Ray processes behind."""
    began = time.perf_counter()
    started = connect(address)
    try:
        with quiet_ray_data():
            return _ray_add_files(pipeline, location, paths, on_progress, began)
    finally:
        if started:
            import ray

            ray.shutdown()


def _ray_add_files(
    pipeline: IngestPipeline,
    location: str | Path,
    paths: Sequence[str | Path],
    on_progress: ProgressFn | None,
    began: float,
) -> IngestReport:
    """:func:`ray_add_files` on the cluster this process is attached to."""
    import ray

    files = expand_paths(paths)
    report = IngestReport()
    fingerprint = pipeline.begin()
    workers_store = is_url(str(location))
    job = Job(cluster_location(location), pipeline.config, fingerprint, workers_store, run=uuid.uuid4().hex)
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    cpus = max(1, int(resources.get("CPU", 1)))
    dataset = (
        ray.data.from_items(
            [{"path": path, "id": doc_id} for path, doc_id in cluster_paths(files)],
            override_num_blocks=max(1, len(files)),
        )
        .map(partial(prepare_row, job=job), num_cpus=PREPARE_CPUS)
        .map_batches(
            Embed,
            fn_constructor_kwargs={"job": job},
            batch_size=DOCS_PER_BATCH,
            compute=ray.data.ActorPoolStrategy(size=cpus),
            num_cpus=EMBED_CPUS,
        )
    )
    done = 0
    try:
        rows = dataset.iter_rows() if files else iter(())
        for row in rows:
            outcome: Outcome = pickle.loads(row["outcome"])
            status = _finish(pipeline, outcome, fingerprint)
            chunks = outcome.chunks if status in ("added", "replaced") else 0  # as a serial ingest counts
            if status == "failed":
                report.failed.append((outcome.source, outcome.reason))
            else:
                report.record(outcome.source, status, chunks)
            report.embed_seconds += outcome.embed_seconds
            done += 1
            if on_progress is not None:
                on_progress(IngestEvent(outcome.source, status, done, len(files), chunks))
    except ChunkwiseError:
        raise
    except Exception as exc:  # a failure of the cluster as a whole (retries exhausted, lost driver)
        if isinstance(cause := _task_error(exc), ChunkwiseError):
            raise cause from None  # a worker's own error (an embedder not the one recorded, say)
        raise ClusterError(
            f"Ray ingest stopped after {done} of {len(files)} files: {_last_line(cause)}"
        ) from None
    finally:
        report.seconds = time.perf_counter() - began
    return report


def _finish(pipeline: IngestPipeline, outcome: Outcome, fingerprint: str) -> Status:
    """The outcome's final status: the driver stores what the workers embedded but did not store."""
    if outcome.status == "embedded":
        assert outcome.prepared is not None
        assert outcome.vectors is not None
        return pipeline.store_prepared(outcome.prepared, outcome.vectors, fingerprint)
    return cast(Status, outcome.status)


def _task_error(exc: BaseException) -> BaseException:
    """The error a Ray task or actor raised, out of the exceptions Ray wraps it in (``cause`` of a
    ``RayTaskError``, ``__cause__`` of Ray Data's ``UserCodeException``), else ``exc``."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


#: ANSI colour codes, which Ray puts in the text of remote errors.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _last_line(exc: BaseException) -> str:
    """``exc`` in one short line: its type and the last line of its message, without the remote
    traceback or the colour codes Ray puts in it."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1][:300]}" if lines else type(exc).__name__
