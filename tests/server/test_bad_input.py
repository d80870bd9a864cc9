"""Bad requests get a JSON error with the right status, never a traceback, and never touch the server's
files: malformed JSON, wrong types, unknown fields and chunkers, refused parameters, oversized and
unsupported uploads, unknown ids, a full ingest queue and a request past its timeout."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chunkwise.errors import ConfigError
from chunkwise.kb import KnowledgeBase
from chunkwise.parsing.text import text_document
from chunkwise.server import ServerSettings, create_app
from chunkwise.server.schemas import (
    MAX_REMOTE_PIECES,
    MAX_REMOTE_WORKERS,
    MIN_REMOTE_PIECE,
    check_remote_params,
)
from chunkwise.store.sqlite import DB_NAME
from tests.support.server import PATIENCE_S, error_of, running_app, upload, wait_job, writer_processes

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


def _error(response: httpx.Response, status: int, type_: str) -> str:
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["type"] == type_, error
    return error["message"]


def test_malformed_json_and_wrong_types(client: httpx.Client) -> None:
    headers = {"Content-Type": "application/json"}
    for path in ("/v1/search", "/v1/chunk", "/v1/answer"):
        _error(client.post(path, content=b'{"query": ', headers=headers), 400, "malformed_json")
    assert _error(client.post("/v1/search", json={"query": 5}), 422, "invalid_request").startswith("query:")
    assert "k:" in _error(client.post("/v1/search", json={"query": "bags", "k": "5"}), 422, "invalid_request")
    _error(client.post("/v1/search", json={"query": "bags", "k": 0}), 422, "invalid_request")
    assert "Field required" in _error(client.post("/v1/segments", json={}), 422, "invalid_request")
    _error(client.post("/v1/chunk", json={"text": "a text", "params": []}), 422, "invalid_request")
    _error(client.post("/v1/chunk", json=["a text"]), 422, "invalid_request")
    _error(client.post("/v1/search", json={"query": "?!"}), 400, "query_error")
    for path in ("/v1/search", "/v1/segments", "/v1/answer"):  # no word, as the README says: 400 (was 422)
        for query in ("", "   "):
            assert "holds no word" in _error(client.post(path, json={"query": query}), 400, "query_error")


def test_chunker_parameters_keep_their_json_types(client: httpx.Client) -> None:
    """A chunker parameter is taken as JSON typed it, like every other field: a number or a boolean sent
    as a string, or a boolean for a number, is a 422 naming the parameter, never read as what it spells
    (the command line's strings are parsed; a JSON client's are not)."""

    def chunk(chunker: str, **params: object) -> httpx.Response:
        return client.post("/v1/chunk", json={"text": "a text", "chunker": chunker, "params": params})

    for chunker, params in (
        ("recursive", {"max_size": "10"}),
        ("fixed", {"overlap": "0.5"}),
        ("recursive", {"min_size": True}),
        ("sentence", {"unit": 5}),
        ("wrac", {"reprompt": "false"}),  # refused before any model is loaded
    ):
        [name] = params
        message = _error(chunk(chunker, **params), 422, "invalid_request")
        assert message.startswith(f"params: {name}: expected "), message
    form = client.post(
        "/v1/chunk", files=[("file", ("a.md", b"# A\n\ntext"))], data={"params": '{"max_size": "10"}'}
    )
    assert _error(form, 422, "invalid_request").startswith("params: max_size: expected int")
    typed = chunk("fixed", max_size=10, overlap=0.5)  # a float where a float is expected, an int for an int
    assert typed.status_code == 200, typed.text
    assert typed.json()["params"]["max_size"] == 10


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ('{"overlap": NaN}', "overlap"),
        ('{"max_size": Infinity}', "max_size"),
        ('{"threshold": -Infinity}', "threshold"),
    ],
)
def test_a_nan_or_infinite_parameter_is_a_400_naming_it(client: httpx.Client, params: str, name: str) -> None:
    """Python's JSON reader takes ``NaN`` and ``Infinity``: such a number is a value out of range, 400
    as the chunker would answer it, not a wrong type (422), in a JSON body and in a form alike."""
    chunker = "semantic" if name == "threshold" else "fixed"
    body = f'{{"text": "hello world", "chunker": "{chunker}", "params": {params}}}'
    json_body = client.post("/v1/chunk", content=body, headers={"Content-Type": "application/json"})
    assert _error(json_body, 400, "config_error").startswith(f"{name}: expected a finite number, got ")
    form = client.post(
        "/v1/chunk", files=[("file", ("a.md", b"# A\n\ntext"))], data={"chunker": chunker, "params": params}
    )
    assert _error(form, 400, "config_error").startswith(f"{name}: expected a finite number, got ")


@pytest.mark.parametrize(
    ("chunker", "params", "message"),
    [
        (
            "logprob",
            {"window_chars": 2, "overlap_chars": 0, "workers": 100000, "min_size": 0},
            "workers must be between 1 and 8 on this server, got 100000",
        ),
        ("logprob", {"workers": 9}, "workers must be between 1 and 8 on this server, got 9"),
        ("logprob", {"window_chars": 2, "overlap_chars": 0}, "window_chars must be at least 1000"),
        ("logprob", {"overlap_chars": 3999}, "overlap_chars must be at most half of window_chars (2000)"),
        ("logprob", {"window_chars": 1000, "overlap_chars": 501}, "at most half of window_chars (500)"),
        ("logprob", {"max_extra": 10**6}, "max_extra must be between 0 and 32 on this server"),
        ("agentic", {"window_size": 16}, "window_size must be at least 256 on this server, got 16"),
        ("wrac", {"window_size": 64}, "window_size must be at least 256 on this server, got 64"),
        ("sections", {"window_chars": 200}, "window_chars must be at least 2000 on this server, got 200"),
        (
            "semantic",
            {"method": "cluster", "piece_size": 1, "max_size": 5000},
            "piece_size must be at least 157 on this server with max_size 5000",
        ),
        ("semantic", {"method": "cluster", "max_size": 64}, "piece_size must be at least 16 on this server"),
    ],
)
def test_parameters_that_multiply_the_servers_work_are_bounded(
    client: httpx.Client, chunker: str, params: dict[str, int], message: str
) -> None:
    """A client cannot make one request start thousands of threads or model calls: the LLM chunkers'
    workers and windows have bounds on the server (a 400 naming the parameter and its range, before
    any model is loaded)."""
    text = " ".join(["word"] * 150)
    response = client.post("/v1/chunk", json={"text": text, "chunker": chunker, "params": params})
    assert message in _error(response, 400, "config_error")


@given(workers=st.integers(-(10**9), 10**9), window=st.integers(1, 10**6), overlap=st.integers(0, 10**6))
def test_remote_logprob_bounds_refuse_exactly_what_is_out_of_range(
    workers: int, window: int, overlap: int
) -> None:
    params = {"workers": workers, "window_chars": window, "overlap_chars": overlap}
    allowed = 1 <= workers <= MAX_REMOTE_WORKERS and window >= 1000 and overlap <= window // 2
    if allowed:
        check_remote_params("logprob", params)
    else:
        with pytest.raises(ConfigError):
            check_remote_params("logprob", params)


@given(
    method=st.sampled_from(["cluster", "greedy"]),
    size=st.integers(1, 10**6),
    piece=st.integers(0, 10**6),
)
def test_remote_semantic_pieces_refuse_exactly_too_small_or_too_many(
    method: str, size: int, piece: int
) -> None:
    """The cluster method's pieces (``piece_size``, 0 for an eighth of ``max_size``) must be of at least
    MIN_REMOTE_PIECE units and at most MAX_REMOTE_PIECES to a chunk; the greedy method has no pieces."""
    assume(piece <= size)  # the chunker's own rule, checked after
    params = {"method": method, "max_size": size, "piece_size": piece}
    effective = piece or max(1, size // 8)
    allowed = method == "greedy" or (effective >= MIN_REMOTE_PIECE and size <= effective * MAX_REMOTE_PIECES)
    if allowed:
        check_remote_params("semantic", params)
    else:
        with pytest.raises(ConfigError, match="piece_size must be at least"):
            check_remote_params("semantic", params)


def test_unknown_fields_are_refused_and_a_path_is_never_read(client: httpx.Client, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("the launch code is 0000")
    for path, body in (
        ("/v1/chunk", {"text": "a text", "path": str(secret)}),
        ("/v1/search", {"query": "launch code", "path": str(secret)}),
        ("/v1/answer", {"query": "launch code", "file": str(secret)}),
    ):
        response = client.post(path, json=body)
        message = _error(response, 422, "invalid_request")
        assert message.startswith("unknown field")
        assert "0000" not in response.text
    form = client.post("/v1/chunk", files=upload(secret, field="file"), data={"path": str(secret)})
    assert _error(form, 422, "invalid_request") == "unknown field 'path'"
    docs = client.post("/v1/documents", files=upload(secret), data={"path": str(secret)})
    assert _error(docs, 422, "invalid_request") == "unknown field 'path'"
    # A text that names a file is chunked as the text it is.
    chunks = client.post("/v1/chunk", json={"text": str(secret)}).json()["chunks"]
    assert [c["text"] for c in chunks] == [str(secret)]


def test_unknown_chunkers_and_refused_parameters(client: httpx.Client) -> None:
    def chunk(chunker: str, **params: object) -> httpx.Response:
        return client.post("/v1/chunk", json={"text": "a text", "chunker": chunker, "params": params})

    assert _error(chunk("nope"), 400, "config_error").startswith("unknown chunker 'nope'")
    _error(chunk("os.path:join"), 400, "config_error")  # a dotted class path is never imported
    assert "max_sise" in _error(chunk("recursive", max_sise=5), 400, "config_error")
    _error(chunk("recursive", max_size=-1), 400, "config_error")
    assert "'llm'" in _error(chunk("wrac", llm="local:/tmp/model.gguf"), 400, "config_error")
    _error(chunk("semantic", embedder="local:/tmp"), 400, "config_error")
    _error(chunk("recursive", unit="hf:/etc/tokenizer.json"), 400, "config_error")
    _error(chunk("sections", inner="os.path:join"), 400, "config_error")
    form = client.post("/v1/chunk", files=[("file", ("a.md", b"# A\n\ntext"))], data={"params": "{oops"})
    _error(form, 400, "malformed_json")
    wrong = client.post("/v1/chunk", files=[("file", ("a.md", b"# A\n\ntext"))], data={"document": "yes"})
    _error(wrong, 422, "invalid_request")
    _error(client.post("/v1/chunk", data={"chunker": "recursive"}), 415, "unsupported_media_type")
    _error(
        client.post("/v1/chunk", content=b"a text", headers={"Content-Type": "text/plain"}),
        415,
        "unsupported_media_type",
    )


def test_unsupported_and_unparsable_uploads(client: httpx.Client) -> None:
    png = [("file", ("image.png", PNG))]
    assert "image.png" in _error(client.post("/v1/chunk", files=png), 415, "unsupported_format")
    docs = client.post("/v1/documents", files=[("files", ("image.png", PNG)), ("files", ("a.md", b"# A"))])
    _error(docs, 415, "unsupported_format")  # the whole request is refused, nothing is queued
    assert client.get("/healthz").json()["queue"] == 0
    broken = [("file", ("report.pdf", b"%PDF-1.7 truncated"))]
    assert "report.pdf" in _error(client.post("/v1/chunk", files=broken), 422, "parse_error")
    _error(client.post("/v1/chunk", files=[("file", ("empty.md", b""))]), 422, "parse_error")
    damaged = [("files", ("broken.docx", b"not a zip archive")), ("files", ("kept.md", b"# Kept\n\nStored."))]
    job = wait_job(
        client, client.post("/v1/documents", files=damaged).json()["id"]
    )  # queued: one file is fine
    assert job["result"]["added"] == ["kept.md"]
    assert [f["source"] for f in job["result"]["failed"]] == ["broken.docx"]
    assert "not a zip archive" in job["result"]["failed"][0]["error"]
    client.delete("/v1/documents/kept.md").raise_for_status()  # the shared store as it was
    _error(client.post("/v1/documents", data={"x": "1"}), 415, "unsupported_media_type")  # no multipart
    unknown = client.post("/v1/documents", files=[("files", ("a.md", b"# A"))], data={"x": "1"})
    assert _error(unknown, 422, "invalid_request") == "unknown field 'x'"
    _error(client.post("/v1/documents", files=[("files", ("/", b"# A"))]), 422, "invalid_request")


def test_a_document_id_with_a_line_break_can_be_read_and_deleted(client: httpx.Client, kb_dir: Path) -> None:
    doc_id = "two\nlines.md"  # a file name may hold a line break (the command line stores it as it is)
    with KnowledgeBase(kb_dir) as kb:
        assert kb.add_documents([text_document(doc_id, "A file name may hold a line break.")]).added == [
            doc_id
        ]
    path = "/v1/documents/" + quote(doc_id)
    assert client.get(path).json()["doc_id"] == doc_id
    assert client.delete(path).json() == {"deleted": doc_id}
    _error(client.get(path), 404, "not_found")


def test_unknown_ids_routes_and_methods(client: httpx.Client) -> None:
    assert _error(client.get("/v1/documents/nope.md"), 404, "not_found") == "no document 'nope.md'"
    _error(client.delete("/v1/documents/samples/docs/nope.md"), 404, "not_found")
    _error(client.get("/v1/jobs/job-0-00000000"), 404, "not_found")
    _error(client.get("/v1/nothing"), 404, "not_found")
    _error(client.get("/v1/search"), 405, "method_not_allowed")
    # a slash too many is an unknown route with the error body (it was a 307 redirect, empty, not JSON)
    for method, path in (("DELETE", "/v1/documents/"), ("GET", "/v1/jobs/"), ("POST", "/v1/search/")):
        _error(client.request(method, path, follow_redirects=False), 404, "not_found")


@pytest.fixture
def small(kb_dir: Path) -> Iterator[httpx.Client]:
    """A server over the shared knowledge base that takes request bodies of 2,000 bytes at most."""
    app = create_app(kb_dir, settings=ServerSettings(max_upload_bytes=2000))
    with running_app(app) as url, httpx.Client(base_url=url, timeout=600) as http:
        yield http


def test_oversized_bodies_are_refused(small: httpx.Client) -> None:
    assert "2000 bytes" in _error(
        small.post("/v1/chunk", json={"text": "x" * 5000}), 413, "payload_too_large"
    )
    big = [("files", ("big.md", b"# Big\n\n" + b"word " * 1000))]
    _error(small.post("/v1/documents", files=big), 413, "payload_too_large")

    def streamed() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"text": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'

    for route in ("/v1/chunk", "/v1/search", "/v1/answer"):  # read by the route, or by FastAPI for a model
        chunked = small.post(route, content=streamed(), headers={"Content-Type": "application/json"})
        _error(chunked, 413, "payload_too_large")
    assert small.post("/v1/chunk", json={"text": "a short text"}).status_code == 200


@contextmanager
def write_locked(kb: Path) -> Iterator[None]:
    """Hold the store's write lock from another connection (as another process's writer would)."""
    lock = sqlite3.connect(kb / DB_NAME, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def running_job(http: httpx.Client, files: Any) -> dict[str, Any]:
    """Send ``files`` as a job and wait until the writer has taken it."""
    job: dict[str, Any] = http.post("/v1/documents", files=files).json()
    while http.get(f"/v1/jobs/{job['id']}").json()["status"] == "queued":
        time.sleep(0.01)
    return job


def test_a_full_queue_answers_429_and_a_slow_request_504(tmp_path: Path, data_dir: Path) -> None:
    """The writer is held up by another process's write lock on the store (deterministically): the
    running job waits, one more job fits in the queue, the next is refused; a delete waiting for the lock
    past the request timeout is answered 504. Once the lock goes, every queued job completes."""
    kb = tmp_path / "kb"
    settings = ServerSettings(queue_size=1, request_timeout=1.0)
    with (
        running_app(create_app(kb, settings=settings)) as url,
        httpx.Client(base_url=url, timeout=600) as http,
    ):
        doc = upload(data_dir / "formats" / "accessories.md")
        with write_locked(kb):
            first = running_job(http, doc)
            second = http.post("/v1/documents", files=doc)
            assert second.status_code == 202
            third = http.post("/v1/documents", files=doc)
            assert _error(third, 429, "queue_full").startswith("the ingest queue is full")
            assert int(third.headers["retry-after"]) >= 1
            _error(http.delete("/v1/documents/other.md"), 504, "timeout")
        assert wait_job(http, first["id"])["result"]["added"] == ["accessories.md"]
        assert wait_job(http, second.json()["id"])["result"]["skipped"] == ["accessories.md"]
        metrics = http.get("/metrics").text
        assert (
            'chunkwise_http_requests_total{method="POST",route="/v1/documents",status="429"} 1.0' in metrics
        )
        assert 'chunkwise_ingest_jobs_total{status="done"} 2.0' in metrics


def test_a_request_past_its_timeout_keeps_its_reader_slot_until_its_work_ends(tmp_path: Path) -> None:
    """With one reader slot, a delete held up by another process's write lock (deterministically) is
    answered 504, but its thread still waits for the lock: the slot stays its own, so reads that would
    otherwise be answered at once wait for it and time out too (no second computation starts beside
    it). Once the lock goes the delete ends, its slot is free, and a read is answered."""
    kb = tmp_path / "kb"
    settings = ServerSettings(readers=1, request_timeout=1.0)
    with (
        running_app(create_app(kb, settings=settings)) as url,
        httpx.Client(base_url=url, timeout=600) as http,
    ):
        assert http.get("/v1/documents").json() == {"documents": []}
        with write_locked(kb):
            _error(http.delete("/v1/documents/other.md"), 504, "timeout")
            for _ in range(3):
                _error(http.get("/v1/documents"), 504, "timeout")
        deadline = time.monotonic() + PATIENCE_S
        while (listed := http.get("/v1/documents")).status_code == 504 and time.monotonic() < deadline:
            pass
        assert listed.json() == {"documents": []}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the writer in Linux's /proc")
def test_a_writer_process_that_dies_fails_its_job_and_the_next_job_gets_a_new_one(
    tmp_path: Path, data_dir: Path
) -> None:
    """The writer is held mid-job by another process's write lock, then killed: its job fails with an
    internal error (no traceback in the response), the store holds nothing of it, and the next job is
    stored by a writer started in its place."""
    kb = tmp_path / "kb"
    before = set(writer_processes(os.getpid()))
    with running_app(create_app(kb)) as url, httpx.Client(base_url=url, timeout=600) as http:
        (writer,) = set(writer_processes(os.getpid())) - before
        doc = upload(data_dir / "formats" / "accessories.md")
        with write_locked(kb):
            job = running_job(http, doc)
            os.kill(writer, signal.SIGKILL)
            failed = wait_job(http, job["id"])
        assert failed["status"] == "failed"
        assert failed["error"] == {
            "type": "internal",
            "message": "the writer process died (the server's log has it)",
        }
        assert http.get("/v1/documents").json()["documents"] == []
        again = wait_job(http, http.post("/v1/documents", files=doc).json()["id"])
        assert again["result"]["added"] == ["accessories.md"]
        assert writer not in writer_processes(os.getpid())


def test_every_typed_error_has_its_status() -> None:
    """The library's typed errors map to the statuses the README lists (most specific class first)."""
    from chunkwise import errors
    from chunkwise.server.errors import typed_status

    cases = {
        errors.UnsupportedFormatError("a.png", "binary"): (415, "unsupported_format"),
        errors.FileTooLargeError("a.pdf", "too big"): (413, "file_too_large"),
        errors.CorruptFileError("a.pdf", "broken"): (422, "parse_error"),
        errors.QueryError("no word"): (400, "query_error"),
        errors.ConfigError("unknown key"): (400, "config_error"),
        errors.BudgetExceededError("local", "spent"): (402, "budget_exceeded"),
        errors.DeadlineExceededError("local", "deadline"): (504, "timeout"),
        errors.ModelCallError("openai:m", "timed out"): (502, "model_error"),
        errors.CorruptStoreError("kb", "damaged"): (503, "store_unavailable"),
        errors.DatasetError("q.jsonl", "bad"): (400, "bad_request"),
    }
    for error, expected in cases.items():
        assert typed_status(error) == expected, error


def test_a_chunk_form_field_sent_as_a_file_is_refused_by_name(client: httpx.Client) -> None:
    """``chunker``, ``params`` or ``document`` sent as a file part, or a second ``file``, is a 422 naming
    the field (it was Starlette's 400 "Too many files", naming none)."""
    upload = ("file", ("a.md", b"# A\n\ntext"))
    for field, value in (("chunker", b"recursive"), ("params", b"{}"), ("document", b"true")):
        response = client.post("/v1/chunk", files=[upload, (field, ("x.txt", value))])
        assert _error(response, 422, "invalid_request") == f"field {field!r} must be text, not a file"
    two = client.post("/v1/chunk", files=[upload, ("file", ("b.md", b"# B"))])
    assert _error(two, 422, "invalid_request") == "field 'file': one file a request"
    extra = [upload, ("chunker", ("x.txt", b"1")), ("extra", ("x.txt", b"1"))]
    assert _error(client.post("/v1/chunk", files=extra), 422, "invalid_request") == "unknown field 'extra'"
