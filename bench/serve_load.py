"""``chunkwise serve`` under load and under ``kill -9``: latency, throughput, errors, and a consistent store.

Setup: the sample documents and the test formats folder (26 documents) in a fresh knowledge base (the
default preset: bge-small INT8), served by ``chunkwise serve`` in its own process on 127.0.0.1; the
questions of ``tests/data/eval/rmc_mini``.

1. **Lone client**: one client sends searches (k = 5) one after another for ``--lone`` seconds: p50/p99.
2. **Capacity**: ``--clients`` (32) clients search as fast as they can (closed loop: each sends its next
   search when the last is answered) for ``--seconds`` (60) while one more client ingests: it uploads the
   Markdown and HTML test files, each with a line naming the round added (so every round is a new
   version of each document to parse, chunk, embed and store in place of the last: the store keeps its
   size, and the lone client's p50 stays the measure of the same search), waits for the job, and starts
   again. Per search: latency; overall: p50/p99, throughput, the statuses seen, and the ingest jobs
   completed.
3. **Paced load**: the same clients and ingest, each client now sending searches on a fixed schedule so
   that together they offer a share (``--utilisation``: 25% and 50%) of phase 2's throughput; a search's
   latency counts from when it was due, so a queue cannot hide by slowing the clients down. The goal: no
   5xx and p99 within 5× the lone client's p50. (With closed-loop clients and no pause between searches,
   the goal cannot hold on a machine with fewer cores than a fifth of the clients: 32 clients sharing 2
   cores each wait for about 16 searches' work, whatever a search costs.)
4. **kill -9**: a job of three revisions of every test file is sent, the server is killed with SIGKILL as
   soon as the job has stored its first document, the store is checked (``SQLiteStore.check``), the
   server restarted, the same job sent again: it completes, skipping what was stored, and the store is
   checked again.

Clients and server share the machine (two cores here), so the clients' own work is part of the numbers.

    .venv/bin/python bench/serve_load.py            # prints a Markdown table, writes the JSON
    .venv/bin/python bench/serve_load.py --seconds 10 --lone 5   # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from chunkwise.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "serve_load.json"
FORMATS = REPO / "tests" / "data" / "formats"
QUERIES = REPO / "tests" / "data" / "eval" / "rmc_mini" / "queries.jsonl"
PATIENCE_S = 600.0
#: Revisions of every test file sent as the job that is killed: enough documents that it is mid-way.
KILL_ROUNDS = 3
#: Numbers the ingest client's rounds across the phases, so each round's files are new versions.
ROUNDS = itertools.count(1)


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """``chunkwise serve`` in its own process (output to a log file in ``workdir``)."""

    def __init__(self, kb: Path, workdir: Path) -> None:
        self.kb = kb
        self.log = workdir / "serve.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers."""
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "chunkwise", "serve", "--kb", str(self.kb), "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            )
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server with ``sig`` and wait for it."""
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(120)


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile, in milliseconds, of values in seconds."""
    return round(float(np.percentile(np.asarray(values) * 1000, q)), 1) if values else float("nan")


def revised(path: Path, round_: int, *, same_id: bool = False) -> tuple[str, bytes]:
    """``path`` as an upload with a line naming ``round_`` added: new content, under a new document id,
    or (``same_id``) as a new version of the document ``path`` names."""
    data = path.read_bytes()
    line = f"\n\nRevision {round_} of this document.\n".encode()
    if path.suffix == ".html":
        data = data.replace(b"</body>", b"<p>" + line.strip() + b"</p></body>")
    else:
        data += line
    return (path.name if same_id else f"r{round_}-{path.name}"), data


async def search_client(
    http: httpx.AsyncClient,
    queries: list[str],
    start: int,
    deadline: float,
    *,
    latencies: list[float],
    codes: Counter[int],
    failures: Counter[str],
    interval: float | None = None,
    offset: float = 0.0,
) -> None:
    """Search, query after query, until ``deadline``; record each latency and status (0: no response,
    its exception's class counted in ``failures``).

    ``interval`` None: closed loop, the next search as soon as the last is answered. Otherwise paced: the
    ``n``-th search is due at ``offset + n × interval`` seconds after the start, sent then (at once when
    the client is behind), and its latency counts from when it was due, so time spent waiting for an
    earlier answer is part of it (a slow server cannot hide its queue by slowing the clients down).
    """
    i = start
    began = time.perf_counter()
    due = began + offset
    while time.monotonic() < deadline:
        if interval is not None:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
        sent = time.perf_counter() if interval is None else due
        try:
            response = await http.post("/v1/search", json={"query": queries[i % len(queries)], "k": 5})
            codes[response.status_code] += 1
        except httpx.TransportError as exc:
            codes[0] += 1
            failures[type(exc).__name__] += 1
            continue
        finally:
            due += interval or 0.0
        latencies.append(time.perf_counter() - sent)
        i += 1


async def ingest_client(http: httpx.AsyncClient, deadline: float, jobs: Counter[str]) -> None:
    """Upload a round of revised Markdown and HTML files, wait for the job, repeat until ``deadline``."""
    files = sorted([*FORMATS.glob("*.md"), *FORMATS.glob("*.html")])
    while time.monotonic() < deadline:
        round_ = next(ROUNDS)
        uploads = [("files", revised(path, round_, same_id=True)) for path in files]
        response = await http.post("/v1/documents", files=uploads)
        if response.status_code != 202:
            jobs[f"refused {response.status_code}"] += 1
            await asyncio.sleep(1)
            continue
        job_id = response.json()["id"]
        while True:
            job = (await http.get(f"/v1/jobs/{job_id}")).json()
            if job["status"] not in ("queued", "running"):
                jobs[job["status"]] += 1
                result = job["result"] or {}
                jobs["documents"] += len(result.get("added", [])) + len(result.get("replaced", []))
                break
            await asyncio.sleep(0.2)


async def under_load(
    http: httpx.AsyncClient, queries: list[str], clients: int, seconds: float, rate: float | None
) -> dict[str, Any]:
    """``clients`` searching (closed loop when ``rate`` is None, else ``rate`` searches/s in all) while
    one more client ingests, for ``seconds``."""
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    failures: Counter[str] = Counter()
    jobs: Counter[str] = Counter()
    interval = clients / rate if rate else None
    deadline = time.monotonic() + seconds
    began = time.perf_counter()
    await asyncio.gather(
        ingest_client(http, deadline, jobs),
        *(
            search_client(
                http,
                queries,
                i,
                deadline,
                latencies=latencies,
                codes=codes,
                failures=failures,
                interval=interval,
                offset=(interval or 0.0) * i / clients,
            )
            for i in range(clients)
        ),
    )
    elapsed = time.perf_counter() - began
    return {
        "clients": clients,
        "offered_per_s": round(rate, 1) if rate else None,
        "seconds": round(elapsed, 1),
        "searches": len(latencies),
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
        "statuses": {str(k): v for k, v in sorted(codes.items())},
        "no_response": dict(failures),
        "errors": sum(v for k, v in codes.items() if k != 200),
        "server_errors_5xx": sum(v for k, v in codes.items() if k >= 500),
        "ingest_jobs": dict(jobs),
    }


async def load(
    url: str, queries: list[str], clients: int, seconds: float, *, lone: float, utilisation: list[float]
) -> dict[str, Any]:
    """Phase 1 (lone client), 2 (closed-loop clients while one ingests: the capacity) and 3 (the same
    clients paced at each share in ``utilisation`` of that capacity while one ingests)."""
    limits = httpx.Limits(max_connections=clients + 4)
    async with httpx.AsyncClient(base_url=url, timeout=PATIENCE_S, limits=limits) as http:
        for query in queries[:3]:  # warm up: the embedder loads on the first search
            (await http.post("/v1/search", json={"query": query, "k": 5})).raise_for_status()
        lone_latencies: list[float] = []
        lone_codes: Counter[int] = Counter()
        await search_client(
            http,
            queries,
            0,
            time.monotonic() + lone,
            latencies=lone_latencies,
            codes=lone_codes,
            failures=Counter(),
        )
        saturated = await under_load(http, queries, clients, seconds, None)
        paced = [
            {
                **await under_load(http, queries, clients, seconds, share * saturated["throughput_per_s"]),
                "utilisation": share,
            }
            for share in utilisation
        ]
    lone_p50 = pct(lone_latencies, 50)
    for phase in (saturated, *paced):
        phase["p99_over_lone_p50"] = round(phase["p99_ms"] / lone_p50, 1)
    return {
        "lone": {"searches": len(lone_latencies), "p50_ms": lone_p50, "p99_ms": pct(lone_latencies, 99)},
        "load": saturated,
        "paced": paced,
    }


def kill_mid_ingest(kb: Path, workdir: Path) -> dict[str, Any]:
    """Phase 4: SIGKILL during a job, check the store, restart, send the job again, check again."""
    files = sorted(FORMATS.iterdir())
    uploads = [("files", revised(path, round_)) for round_ in range(-KILL_ROUNDS, 0) for path in files]
    with SQLiteStore(kb) as store:
        before = store.counts()["documents"]
    server = Server(kb, workdir)
    server.start()
    with httpx.Client(base_url=server.url, timeout=PATIENCE_S) as http:
        job = http.post("/v1/documents", files=uploads).json()
        while not any(e["status"] == "added" for e in http.get(f"/v1/jobs/{job['id']}").json()["events"]):
            time.sleep(0.01)
        server.stop(signal.SIGKILL)  # the first document is stored: the job is under way
    with SQLiteStore(kb) as store:
        after_kill = {"problems": store.check(), "stored_by_the_job": store.counts()["documents"] - before}
    server = Server(kb, workdir)
    server.start()
    with httpx.Client(base_url=server.url, timeout=PATIENCE_S) as http:
        job = http.post("/v1/documents", files=uploads).json()
        while (state := http.get(f"/v1/jobs/{job['id']}").json())["status"] in ("queued", "running"):
            time.sleep(0.2)
    server.stop()
    result = state["result"] or {}
    with SQLiteStore(kb) as store:
        after_resend = {"problems": store.check(), "stored_by_the_job": store.counts()["documents"] - before}
    return {
        "files": len(uploads),
        "after_kill": after_kill,
        "resent_job": {
            "status": state["status"],
            "added": len(result.get("added", [])),
            "skipped": len(result.get("skipped", [])),
            "failed": len(result.get("failed", [])),
        },
        "after_resend": after_resend,
    }


def table(results: dict[str, Any]) -> str:
    """The Markdown table of the README."""
    lone, saturated, paced = results["lone"], results["load"], results["paced"]
    kill = results["kill_9"]

    def phase(name: str, run: dict[str, Any]) -> list[str]:
        return [
            f"| {name}: searches in {run['seconds']:.0f} s "
            f"| {run['searches']} ({run['throughput_per_s']}/s) |",
            f"| {name}: p50 / p99 | {run['p50_ms']} / {run['p99_ms']} ms "
            f"({run['p99_over_lone_p50']}× the lone p50) |",
            f"| {name}: errors (5xx); ingest jobs done (documents) | {run['errors']} "
            f"({run['server_errors_5xx']}); {run['ingest_jobs'].get('done', 0)} "
            f"({run['ingest_jobs'].get('documents', 0)}) |",
        ]

    rows = [
        "| measure | value |",
        "|---|---|",
        f"| one client alone: searches, p50 / p99 "
        f"| {lone['searches']}, {lone['p50_ms']} / {lone['p99_ms']} ms |",
        *phase(f"{saturated['clients']} clients, closed loop, + 1 ingesting", saturated),
        *(
            row
            for run in paced
            for row in phase(
                f"{run['clients']} clients at {run['offered_per_s']}/s in all "
                f"({run['utilisation']:.0%} of that), + 1 ingesting",
                run,
            )
        ),
        "| kill -9 mid-job: its documents stored, store problems | "
        f"{kill['after_kill']['stored_by_the_job']} of "
        f"{kill['files']}, {len(kill['after_kill']['problems'])} |",
        f"| job sent again: added / skipped / failed, problems | {kill['resent_job']['added']} / "
        f"{kill['resent_job']['skipped']} / {kill['resent_job']['failed']}, "
        f"{len(kill['after_resend']['problems'])} |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--lone", type=float, default=20.0, help="seconds of the lone client")
    parser.add_argument(
        "--utilisation",
        type=float,
        nargs="+",
        default=[0.25, 0.5],
        help="the paced phases' rates, as shares of the closed-loop phase's throughput",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        workdir = Path(tmp)
        kb = workdir / "kb"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "chunkwise",
                "ingest",
                "samples/docs",
                str(FORMATS),
                "--kb",
                str(kb),
                "--json",
            ],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        server = Server(kb, workdir)
        server.start()
        try:
            results = asyncio.run(
                load(
                    server.url,
                    queries,
                    args.clients,
                    args.seconds,
                    lone=args.lone,
                    utilisation=args.utilisation,
                )
            )
        finally:
            server.stop()
        results["kill_9"] = kill_mid_ingest(kb, workdir)
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.system(),
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(results))


if __name__ == "__main__":
    main()
