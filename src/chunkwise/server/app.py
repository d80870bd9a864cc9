"""The ASGI application of ``chunkwise serve``: the HTTP API over one knowledge base and the inspector page.

Endpoints (``/openapi.json`` describes each; the page at ``/`` lists them too):

- ``POST /v1/chunk``: JSON text or a multipart upload -> the body of ``chunkwise chunk --json``;
- ``POST /v1/documents`` (multipart files -> an ingest job, 202), ``GET /v1/jobs/{id}``, ``GET /v1/jobs``
  (the newest jobs), ``GET /v1/documents``, ``GET /v1/documents/{id}`` (text, units, chunk spans),
  ``DELETE /v1/documents/{id}``;
- ``POST /v1/search``, ``/v1/segments``, ``/v1/answer`` -> the bodies of ``chunkwise search --json``,
  ``segments --json`` and ``ask --json``;
- ``GET /v1/chunkers`` (names and default parameters), ``GET /healthz`` (liveness), ``GET /readyz``
  (readiness: the store answers a read), ``GET /metrics``.

Concurrency: one writer process stores ingest jobs (:mod:`.jobs`, :mod:`.writer`) on its own store
connection, at a lower CPU priority, while readers search on another (SQLite in WAL mode and PostgreSQL
both let them proceed at once); at most ``readers`` requests compute at once, each in a worker thread,
each as one run with its own :class:`~chunkwise.models.Models` (so its ``accounting`` and budget are its
own). Every request's body is limited in size, every computing request in time, and errors are JSON
(:mod:`.errors`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hmac
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from importlib.metadata import version
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ValidationError
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkwise.api import parse_text
from chunkwise.chunking import CHUNKERS, get_chunker, normalised_params
from chunkwise.config import PipelineConfig
from chunkwise.errors import ParseError, UnsupportedFormatError
from chunkwise.kb import KnowledgeBase
from chunkwise.models.context import Models
from chunkwise.parsing import parse_bytes
from chunkwise.parsing.detect import detect_format
from chunkwise.query.pipeline import QueryPipeline
from chunkwise.results import answer_body, chunk_result, search_body, segments_body
from chunkwise.server.errors import (
    STATUS_TYPES,
    ApiError,
    answer_unless_started,
    error_response,
    install_handlers,
)
from chunkwise.server.jobs import IngestQueue, Job, JobStatus, QueueFullError
from chunkwise.server.journal import open_journal
from chunkwise.server.metrics import ServerMetrics
from chunkwise.server.schemas import (
    ERROR_RESPONSES,
    TEXT_ROUTE_ERROR_RESPONSES,
    AnswerRequest,
    ChunkOptions,
    ChunkRequest,
    SearchRequest,
    SegmentsRequest,
    check_remote_params,
)
from chunkwise.server.settings import ServerSettings
from chunkwise.store import open_store

logger = logging.getLogger("chunkwise.server")

STATIC = Path(__file__).parent / "static"
#: Paths that need the bearer key when one is set (the page and its files are public; they hold no data).
PROTECTED_PREFIXES = ("/v1/", "/metrics")
#: How many jobs ``GET /v1/jobs`` lists unless asked, and at most.
DEFAULT_JOBS_LISTED, MAX_JOBS_LISTED = 50, 1000
#: The multipart fields of ``POST /v1/chunk`` and ``POST /v1/documents``.
CHUNK_FORM_FIELDS = frozenset({"file", "chunker", "params", "document"})
DOCUMENT_FORM_FIELDS = frozenset({"files", "file"})

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)


class Service:
    """What the endpoints share: the knowledge base's stores and configuration, the ingest queue, the
    limits and the metrics. Opened when the app starts, closed when it stops."""

    def __init__(self, location: str | Path, config: PipelineConfig | None, settings: ServerSettings) -> None:
        self.settings = settings
        self.metrics = ServerMetrics()
        # The writer's knowledge base resolves the configuration (given, else the recorded one, else the
        # defaults) and owns the writer connection; readers get their own connection with its settings.
        self.writer = KnowledgeBase(location, config)
        self.config = self.writer.config
        self.reader = open_store(location)
        self.reader.settings = self.writer.store.settings
        self.jobs = IngestQueue(
            location,
            self.config,
            size=settings.queue_size,
            keep=settings.keep_jobs,
            on_finish=self._finished,
            journal=open_journal(self.writer.store, settings.keep_jobs, settings.jobs_file),
        )
        self.limiter = anyio.CapacityLimiter(settings.readers)

    def close(self) -> None:
        """Stop the writer after its current document and close both connections."""
        self.jobs.stop()
        self.reader.close()
        self.writer.close()

    def models(self) -> Models:
        """A fresh model context: one request is one run, with its own ledger and budget, and in
        :meth:`compute` the request's deadline (no model call starts once it has timed out)."""
        return Models(self.config.models, deadline=_DEADLINE.get())

    def query(self) -> QueryPipeline:
        """A query pipeline on the readers' connection, for one request."""
        return QueryPipeline(self.reader, self.models(), self.config)

    async def compute(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a worker thread once a reader slot is free, within the request timeout (504).

        A request past its timeout is answered at once, but a thread cannot be stopped: its ``fn`` runs on
        and keeps the slot until it ends (:class:`_ReaderSlot`), so at most ``readers`` computations ever
        run at once, however many requests time out. The model contexts ``fn`` makes (:meth:`models`)
        carry the request's deadline, so an ``fn`` that calls models (an LLM chunker, an answer) ends at
        its first model call after the timeout instead of holding the slot to its end."""
        timeout = self.settings.request_timeout
        slot = _ReaderSlot(self.limiter)
        within = partial(_within_deadline, time.monotonic() + timeout, fn)
        try:
            with anyio.fail_after(timeout):
                await self.limiter.acquire_on_behalf_of(slot)
                try:
                    return await anyio.to_thread.run_sync(slot.run, within, abandon_on_cancel=True)
                finally:
                    slot.leave()
        except TimeoutError:
            raise ApiError(504, "timeout", f"the request took longer than {timeout:g} s") from None

    def _finished(self, job: Job, accounting: dict[str, Any]) -> None:
        self.metrics.jobs.labels(job.status).inc()
        self.metrics.observe_accounting(accounting)


#: The deadline (a :func:`time.monotonic` instant) of the request a worker thread computes for.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("chunkwise_deadline", default=None)


def _within_deadline(deadline: float, fn: Callable[[], T]) -> T:
    """In a worker thread: ``fn()`` with ``deadline`` as the deadline of the model contexts it makes."""
    _DEADLINE.set(deadline)
    return fn()


class _ReaderSlot:
    """One reader slot of ``limiter``, acquired by a request for one computation and released once both
    the request has left and the computation has ended (or is known never to start).

    The request leaves first when it times out: the thread it started goes on (a thread cannot be
    stopped), so the thread releases the slot when it ends. The thread may also never start (the request was
    cancelled before a worker took it up): then the request releases the slot as it leaves. A lock
    decides which of the two releases it, exactly once."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter
        self._lock = threading.Lock()
        self._running = False  # the computation has started and not ended
        self._closed = False  # the computation will not start (any more): the slot is no longer its

    def run(self, fn: Callable[[], T]) -> T:
        """In the worker thread: ``fn()``, unless the request has already left (``None`` then: no one
        reads it); releases the slot at the end if the request has left meanwhile."""
        with self._lock:
            if self._closed:
                return None  # type: ignore[return-value]
            self._running = True
        try:
            return fn()
        finally:
            with self._lock:
                self._running = False
                left, self._closed = self._closed, True
            if left:
                with contextlib.suppress(RuntimeError):  # the event loop has ended: no slot to give back
                    anyio.from_thread.run_sync(self.limiter.release_on_behalf_of, self)

    def leave(self) -> None:
        """In the event loop, as the request leaves (answered, timed out or cancelled): release the slot
        unless the computation still runs, in which case its thread releases it when it ends."""
        with self._lock:
            running, self._closed = self._running, True
        if not running:
            self.limiter.release_on_behalf_of(self)


def create_app(
    location: str | Path,
    *,
    config: PipelineConfig | None = None,
    settings: ServerSettings | None = None,
) -> FastAPI:
    """The application serving the knowledge base at ``location`` (created when absent).

    ``config``: the pipeline configuration (``None``: the one recorded in the store, else the defaults).
    ``settings``: the key and limits (:class:`ServerSettings` defaults: no key, 32 MiB bodies, 120 s).
    The stores open and the writer process starts when the app starts; both stop when it stops. While
    it runs, ``app.state.service`` is its :class:`Service`.
    """
    settings = settings or ServerSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = Service(location, config, settings)
        service.jobs.start()
        app.state.service = service
        logger.info("serving the knowledge base at %s", service.reader.location)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.close)

    app = FastAPI(
        title="chunkwise",
        version=version("chunkwise"),
        description="Chunk documents, ingest them into a knowledge base, search it and answer from it.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        # a path with a slash too many is an unknown route (404 with the error body), not a 307
        # redirect with an empty body that a JSON client cannot read
        redirect_slashes=False,
    )
    install_handlers(app)

    def service() -> Service:
        running: Service = app.state.service
        return running

    _routes(app, service)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes)
    app.add_middleware(BodyTimeout, seconds=settings.body_timeout)
    app.add_middleware(BearerKey, key=settings.api_key)
    app.add_middleware(RequestMetrics, metrics=lambda: _metrics_of(app))
    return app


def _metrics_of(app: FastAPI) -> ServerMetrics | None:
    """The metrics of ``app``'s service, ``None`` before it has started."""
    service: Service | None = getattr(app.state, "service", None)
    return service.metrics if service is not None else None


def _routes(app: FastAPI, service: Callable[[], Service]) -> None:
    """Add the endpoints to ``app`` (see the module docstring)."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get(
        "/healthz",
        summary="Liveness: the server answers and its ingest worker is up (503 when it has stopped).",
        response_model=None,
    )
    async def healthz() -> dict[str, Any] | JSONResponse:
        jobs = service().jobs
        if not jobs.alive:
            return error_response(503, "unhealthy", "the ingest worker has stopped: no job would run")
        return {"status": "ok", "queue": jobs.depth}

    @app.get(
        "/readyz",
        summary="Readiness: the knowledge base answers a read (503 when it cannot be used now).",
    )
    async def readyz() -> dict[str, Any]:
        # Beside the readers' slots, so that a probe measures the store, not the queue of searches;
        # within the request timeout (a PostgreSQL pool waiting for a server that went away).
        s = service()
        timeout = s.settings.request_timeout
        try:
            with anyio.fail_after(timeout):
                await anyio.to_thread.run_sync(s.reader.meta, "schema_version", abandon_on_cancel=True)
        except TimeoutError:
            raise ApiError(
                503, "store_unavailable", f"the knowledge base did not answer within {timeout:g} s"
            ) from None
        return {"status": "ready"}

    @app.get(
        "/metrics",
        summary="Prometheus metrics: requests, latency, model calls, tokens, cost.",
        response_class=PlainTextResponse,  # documented as the text it is, not as JSON
        responses=TEXT_ROUTE_ERROR_RESPONSES,
    )
    async def metrics() -> Response:
        s = service()
        s.metrics.queue_depth.set(s.jobs.depth)
        return Response(s.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/chunkers", summary="The chunkers and their default parameters.")
    async def chunkers() -> dict[str, Any]:
        defaults = {name: normalised_params(name, {}) for name in CHUNKERS}
        return {
            "chunkers": {
                name: {k: v for k, v in params.items() if k not in ("llm", "embedder")}
                for name, params in defaults.items()
            }
        }

    @app.post(
        "/v1/chunk",
        summary="Chunk a text (JSON) or an uploaded file (multipart): the body of `chunkwise chunk --json`"
        " (with `document`: the parsed document too).",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": ChunkRequest.model_json_schema()},
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "required": ["file"],
                            "properties": {
                                "file": {"type": "string", "format": "binary"},
                                "chunker": {"type": "string", "default": "recursive"},
                                "params": {"type": "string", "description": "a JSON object"},
                                "document": {"type": "string", "enum": ["true", "false"]},
                            },
                        }
                    },
                },
            }
        },
    )
    async def chunk(request: Request) -> dict[str, Any]:
        s = service()
        kind = media_type(request)
        if kind == JSON:
            body = _validated(ChunkRequest, await request.body())
            options: ChunkOptions = body
            # The text is the document itself, never a file name; plain text is kept verbatim.
            parse = partial(parse_text, body.text, body.format, body.doc_id, s.config.limits.parse_limits())

        elif kind == MULTIPART:
            # every field may arrive as a file part (and is then refused by name): Starlette's own
            # refusal of a part past ``max_files`` is a 400 naming no field
            async with request.form(max_files=len(CHUNK_FORM_FIELDS)) as form:
                _check_fields(form.keys(), CHUNK_FORM_FIELDS)
                if len(form.getlist("file")) > 1:
                    raise ApiError(422, "invalid_request", "field 'file': one file a request")
                upload = form.get("file")
                if not isinstance(upload, UploadFile):
                    raise ApiError(422, "invalid_request", "field 'file': an uploaded file is required")
                name, data = upload_name(upload.filename), await upload.read()
                fields: dict[str, Any] = {}
                for key in ("chunker", "params", "document"):
                    value = form.get(key)
                    if isinstance(value, UploadFile):
                        raise ApiError(422, "invalid_request", f"field {key!r} must be text, not a file")
                    if value is not None:
                        fields[key] = value
            if "params" in fields:
                fields["params"] = _json_object(fields["params"], "params")
            if "document" in fields:
                fields["document"] = _form_flag(fields["document"], "document")
            options = _validated(ChunkOptions, json.dumps(fields).encode())
            parse = partial(parse_bytes, data, name, limits=s.config.limits.parse_limits())

        else:
            raise ApiError(415, "unsupported_media_type", f"send {JSON} or {MULTIPART}")
        check_remote_params(options.chunker, options.params)

        def work() -> dict[str, Any]:
            models = s.models()
            chunker = get_chunker(options.chunker, models=models, **options.params)
            result = chunk_result(parse(), chunker, options.params, models, s.config.limits.max_chunks)
            body = result.to_dict()
            if options.document:
                body["document"] = result.doc.to_dict()
            s.metrics.observe_accounting(body["accounting"])
            return body

        return await s.compute(work)

    @app.post(
        "/v1/search",
        summary="The best chunks for a query: the body of `chunkwise search --json`.",
        dependencies=[Depends(json_only)],
    )
    async def search(body: SearchRequest) -> dict[str, Any]:
        s = service()
        return await s.compute(partial(_observed, s, lambda: search_body(s.query(), body.query, body.k)))

    @app.post(
        "/v1/segments",
        summary="Relevant segments: the body of `chunkwise segments --json`.",
        dependencies=[Depends(json_only)],
    )
    async def segments(body: SegmentsRequest) -> dict[str, Any]:
        s = service()
        return await s.compute(
            partial(_observed, s, lambda: segments_body(s.query(), body.query, body.preset))
        )

    @app.post(
        "/v1/answer",
        summary="A grounded answer with citations: the body of `chunkwise ask --json`.",
        dependencies=[Depends(json_only)],
    )
    async def answer(body: AnswerRequest) -> dict[str, Any]:
        s = service()
        return await s.compute(partial(_observed, s, lambda: answer_body(s.query(), body.query)))

    @app.post(
        "/v1/documents",
        status_code=202,
        summary="Upload files (multipart `files`) as an ingest job.",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "required": ["files"],
                            "properties": {
                                "files": {"type": "array", "items": {"type": "string", "format": "binary"}}
                            },
                        }
                    }
                },
            }
        },
    )
    async def add_documents(request: Request) -> JSONResponse:
        s = service()
        if media_type(request) != MULTIPART:
            raise ApiError(415, "unsupported_media_type", f"send the files as {MULTIPART}")
        files: list[tuple[str, bytes]] = []
        async with request.form(max_files=1000) as form:
            _check_fields(form.keys(), DOCUMENT_FORM_FIELDS)
            for upload in form.getlist("files") + form.getlist("file"):
                if not isinstance(upload, UploadFile):
                    raise ApiError(422, "invalid_request", "field 'files': uploaded files are expected")
                name = upload_name(upload.filename)
                if any(name == taken for taken, _ in files):
                    # One job stores each name once: the second file would replace the first
                    # (``a/notes.md`` and ``b/notes.md`` are both ``notes.md`` once their folders go).
                    raise ApiError(422, "invalid_request", f"field 'files': two files are named {name!r}")
                data = await upload.read()
                _check_supported(data, name)
                files.append((name, data))
        if not files:
            raise ApiError(422, "invalid_request", "field 'files': at least one file is required")
        try:  # the journal's write off the event loop (a database's round trip)
            job, queued = await anyio.to_thread.run_sync(s.jobs.submit, files)
        except QueueFullError as exc:
            raise ApiError(429, "queue_full", str(exc), {"Retry-After": str(exc.retry_after)}) from None
        return JSONResponse(queued, status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})

    @app.get(
        "/v1/jobs",
        summary="The newest ingest jobs, newest first (every server's over PostgreSQL), of one status"
        " when `status` is given.",
    )
    async def list_jobs(
        limit: Annotated[int, Query(ge=1, le=MAX_JOBS_LISTED)] = DEFAULT_JOBS_LISTED,
        status: JobStatus | None = None,
    ) -> dict[str, Any]:
        jobs = service().jobs
        return {"jobs": await anyio.to_thread.run_sync(jobs.recent, limit, status)}

    @app.get("/v1/jobs/{job_id}", summary="An ingest job: progress, per-file errors, the report.")
    async def get_job(job_id: str) -> dict[str, Any]:
        job = await anyio.to_thread.run_sync(service().jobs.describe, job_id)
        if job is None:
            raise ApiError(404, "not_found", f"no job {job_id!r}")
        return job

    @app.get("/v1/documents", summary="The stored documents.")
    async def list_documents() -> dict[str, Any]:
        s = service()
        return {"documents": [d.to_dict() for d in await s.compute(s.reader.documents)]}

    @app.get("/v1/documents/{doc_id:doc_id}", summary="A stored document: text, units and chunk spans.")
    async def get_document(doc_id: str) -> dict[str, Any]:
        s = service()

        def read() -> dict[str, Any]:
            try:  # text and spans of one version, whatever a writer replaces meanwhile
                doc, spans = s.reader.document_spans(doc_id)
            except KeyError:
                raise ApiError(404, "not_found", f"no document {doc_id!r}") from None
            return dict(doc.to_dict(), chunks=spans)

        return await s.compute(read)

    @app.delete("/v1/documents/{doc_id:doc_id}", summary="Remove a document and its chunks.")
    async def delete_document(doc_id: str) -> dict[str, Any]:
        s = service()
        if not await s.compute(partial(s.writer.store.delete, doc_id)):
            raise ApiError(404, "not_found", f"no document {doc_id!r}")
        return {"deleted": doc_id}


def _observed(service: Service, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``work()``'s body, its accounting added to the metrics."""
    body = work()
    service.metrics.observe_accounting(body.get("accounting", {}))
    return body


#: The media types of request bodies: JSON (``application/json`` and any ``application/...+json``, as
#: FastAPI reads them) and multipart forms (uploads). A body without a ``Content-Type`` is of neither.
JSON, MULTIPART = "application/json", "multipart/form-data"


def media_type(request: Request) -> str:
    """The request body's media type: :data:`JSON` for every JSON type, else as sent (lower case, without
    parameters; empty when none was sent)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    json_type = kind == JSON or (kind.startswith("application/") and kind.endswith("+json"))
    return JSON if json_type else kind


async def json_only(request: Request) -> None:
    """Refuse a JSON route's body of another media type (415), as ``/v1/chunk`` does, before FastAPI
    would read it as a wrong JSON type (a form sent by ``curl -d`` was a 422 about a dictionary)."""
    if media_type(request) != JSON:
        raise ApiError(415, "unsupported_media_type", f"send {JSON}")


def _validated(model: type[ModelT], raw: bytes) -> ModelT:
    """``raw`` JSON validated as ``model``; errors answered like FastAPI's own (400 or 422)."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None


def _json_object(raw: str, field: str) -> dict[str, Any]:
    """A form field holding a JSON object. Text Python's JSON reader cannot hold is malformed too: nested
    past the recursion limit (``RecursionError``) or an integer past the digit limit (``ValueError``,
    which ``JSONDecodeError`` also is); either would otherwise be a 500."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "malformed_json", f"field {field!r} is not valid JSON") from None
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_request", f"field {field!r} must be a JSON object")
    return value


def _form_flag(raw: str, field: str) -> bool:
    """A form field holding ``true`` or ``false``."""
    if raw not in ("true", "false"):
        raise ApiError(422, "invalid_request", f"field {field!r} must be true or false")
    return raw == "true"


def _check_fields(names: Any, allowed: frozenset[str]) -> None:
    """422 naming the first form field outside ``allowed``."""
    for name in names:
        if name not in allowed:
            raise ApiError(422, "invalid_request", f"unknown field {name!r}")


def upload_name(filename: str | None) -> str:
    """The document id of an upload: its file name without any directory part (a client cannot name
    a place on the server)."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name.strip()
    if name in ("", ".", ".."):
        raise ApiError(422, "invalid_request", "an uploaded file has no name")
    return name


class _DocumentId(Convertor[str]):
    """A document id in a URL path: anything, slashes and line breaks included (Starlette's ``path``
    stops at a line break, and a file name may hold one)."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("doc_id", _DocumentId())


def _check_supported(data: bytes, name: str) -> None:
    """Refuse the request (415) for a file of no supported format, before anything is queued; a damaged
    file of a supported format (a ``.docx`` that is no zip archive) is left for the job, which reports it
    beside the files it stores."""
    try:
        detect_format(data, name)
    except UnsupportedFormatError:
        raise
    except ParseError:
        pass


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by their ``Content-Length`` or, when they are
    streamed without one, once that many bytes have arrived."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise _TooLargeError(self.message)
            return message

        await _refuse_unless_started(self.app, scope, limited, send, _TooLargeError)

    @property
    def message(self) -> str:
        """What a refused request is told."""
        return f"the request body exceeds the limit of {self.max_bytes} bytes"

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(413, "payload_too_large", self.message, CLOSE)(scope, receive, send)


#: The header of a refusal sent before the body was read whole: the connection cannot be reused.
CLOSE = {"Connection": "close"}


async def _refuse_unless_started(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, refusal: type[HTTPException]
) -> None:
    """Run ``app`` with the body read through ``receive``; a ``refusal`` raised while reading it (and not
    answered by the app) is answered here, as JSON with its status and ``Connection: close``, unless a
    response has already begun (its status line is sent: the connection just ends)."""

    def refuse(exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, STATUS_TYPES[exc.status_code], exc.detail, CLOSE)

    await answer_unless_started(app, scope, receive, send, caught=refusal, answer=refuse)


class _TooLargeError(HTTPException):
    """The body went past the limit while it was read: an HTTP error, so that a framework reading the
    body for a route answers it as 413 (FastAPI turns any other error met while reading a form or a
    JSON body into a 400), and this middleware answers it when nothing else did."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message, CLOSE)


class BodyTimeout:
    """Answer 408 and close the connection when the next part of a request body has not arrived within
    ``seconds`` (a body shorter than its ``Content-Length`` would otherwise hold the connection for ever:
    the HTTP server waits for the rest without a limit). Each part has its own ``seconds``, so a slow
    upload that keeps arriving is never cut; once the body is whole, ``receive`` is passed through as it
    is (it then waits for the client to disconnect, which may take as long as the response)."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        whole = False

        async def timed() -> Message:
            nonlocal whole
            if whole:
                return await receive()
            try:
                with anyio.fail_after(self.seconds):
                    message = await receive()
            except TimeoutError:
                raise _BodyTimeoutError(self.message) from None
            whole = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await _refuse_unless_started(self.app, scope, timed, send, _BodyTimeoutError)

    @property
    def message(self) -> str:
        """What a request whose body stalled is told."""
        return f"the request body did not arrive within {self.seconds:g} s"


class _BodyTimeoutError(HTTPException):
    """The body stalled while it was read: an HTTP error for the reason :class:`_TooLargeError` is one
    (a route reading its body answers it as 408 rather than FastAPI's 400)."""

    def __init__(self, message: str) -> None:
        super().__init__(408, message, CLOSE)


class BearerKey:
    """Require ``Authorization: Bearer <key>`` on the protected paths when a key is set (401 otherwise)."""

    def __init__(self, app: ASGIApp, key: str | None) -> None:
        self.app = app
        self.key = key.encode() if key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.key is not None and scope["type"] == "http" and scope["path"].startswith(PROTECTED_PREFIXES):
            header = dict(scope["headers"]).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.key):
                reason = "a bearer key is required" if not header else "the bearer key is wrong"
                response = error_response(401, "unauthorized", reason, {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class RequestMetrics:
    """Count every HTTP request by method, route template and status, and time it."""

    def __init__(self, app: ASGIApp, metrics: Callable[[], ServerMetrics | None]) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            metrics = self.metrics()
            if metrics is not None:
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                metrics.observe_request(scope["method"], route, status, time.perf_counter() - began)
