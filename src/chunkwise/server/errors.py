"""Every error a server answers with: ``{"error": {"type": ..., "message": ...}}`` and a fitting status.

The library's typed errors come from the request (a file that cannot be parsed, an unknown chunker, a
query without a word, a spent budget) and are 4xx; a remote model that keeps failing is 502 (the fault
is upstream, not the client's), and a store or a bundled model file that cannot be used 503 (the fault
is the server's installation: the client is told what failed, the log says where, as both name the
server's own files). Request bodies that do not validate
are 400 (malformed JSON, an empty body included) or 422 (wrong type, missing or unknown field), naming
the field; a body of a media type the route does not read is 415, on every route. Anything else
is a 500 whose body says only "internal error": the traceback goes to the server's log, never into a
response.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkwise.errors import (
    BudgetExceededError,
    ChunkingError,
    ChunkwiseError,
    ConfigError,
    DeadlineExceededError,
    FileTooLargeError,
    ModelError,
    ModelFileError,
    ParseError,
    QueryError,
    StoreError,
    UnsupportedFormatError,
)

logger = logging.getLogger("chunkwise.server")

#: Library error class -> (status, type), most specific first.
TYPED: tuple[tuple[type[ChunkwiseError], int, str], ...] = (
    (UnsupportedFormatError, 415, "unsupported_format"),
    (FileTooLargeError, 413, "file_too_large"),
    (ParseError, 422, "parse_error"),
    (QueryError, 400, "query_error"),
    (ModelFileError, 503, "model_unavailable"),
    (ConfigError, 400, "config_error"),
    (ChunkingError, 422, "chunking_error"),
    (DeadlineExceededError, 504, "timeout"),
    (BudgetExceededError, 402, "budget_exceeded"),
    (ModelError, 502, "model_error"),
    (StoreError, 503, "store_unavailable"),
    (ChunkwiseError, 400, "bad_request"),
)

#: The answer to a JSON body that cannot be read: status, type and message.
MALFORMED_JSON = (400, "malformed_json", "the request body is not valid JSON")

#: HTTP status -> error type, for the errors the framework raises (no route, wrong method, ...).
STATUS_TYPES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "body_timeout",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "queue_full",
    504: "timeout",
}


class ApiError(Exception):
    """An error the server raises itself, answered as it says (``headers`` such as ``Retry-After``)."""

    def __init__(self, status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = headers or {}


def error_response(
    status: int, type_: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The JSON error body with ``status``."""
    return JSONResponse({"error": {"type": type_, "message": message}}, status_code=status, headers=headers)


def typed_status(exc: ChunkwiseError) -> tuple[int, str]:
    """The status and type a library error is answered with."""
    for cls, status, type_ in TYPED:
        if isinstance(exc, cls):
            return status, type_
    raise AssertionError("ChunkwiseError is the last entry of TYPED")  # pragma: no cover


def public_message(exc: ChunkwiseError) -> str:
    """What a client is told of ``exc``: its message, except for the errors that name the server's own
    files (a store's directory, a bundled model's path), which say only what cannot be used."""
    if isinstance(exc, StoreError):
        return "the knowledge base cannot be used now"
    if isinstance(exc, ModelFileError):
        return "a model file of the server is missing or unreadable (the server's log names it)"
    return str(exc)


def validation_message(errors: list[dict[str, Any]]) -> tuple[int, str, str]:
    """Status, type and one readable message for pydantic's validation errors."""
    if any(e.get("type") in UNREADABLE or _no_body(e) for e in errors):
        return MALFORMED_JSON
    parts = []
    for error in errors:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        if error.get("type") == "extra_forbidden":
            parts.append(f"unknown field {where!r}")
        else:
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return 422, "invalid_request", "; ".join(parts)


#: pydantic's errors for a body that cannot be read as JSON text: invalid syntax, or a string that is no
#: Unicode (a lone surrogate escaped as ``\ud800``), which ``/v1/chunk`` met as a syntax error and the
#: other JSON routes as a wrong field type.
UNREADABLE = frozenset({"json_invalid", "string_unicode"})


def _no_body(error: dict[str, Any]) -> bool:
    """Whether ``error`` is FastAPI's for a JSON route's empty body: malformed JSON (an empty text is no
    JSON document), as ``/v1/chunk``, which reads its body itself, answers it."""
    return error.get("type") == "missing" and tuple(error.get("loc", ())) == ("body",)


def install_handlers(app: FastAPI) -> None:
    """Answer every error ``app`` meets as JSON (see the module docstring)."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.headers)

    @app.exception_handler(ChunkwiseError)
    async def _typed(request: Request, exc: ChunkwiseError) -> JSONResponse:
        status, type_ = typed_status(exc)
        if status >= 500:
            logger.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_response(status, type_, public_message(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        status, type_, message = validation_message(list(exc.errors()))
        return error_response(status, type_, message)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError | RecursionError):
            # FastAPI's "error parsing the body" for a JSON body its reader cannot hold (invalid UTF-8,
            # nested too deeply, an integer past Python's digit limit): malformed JSON like any other.
            return error_response(*MALFORMED_JSON)
        type_ = STATUS_TYPES.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method of the path, not only those of the route matched first
            headers["Allow"] = ", ".join(allowed_methods(request))
        return error_response(exc.status_code, type_, str(exc.detail), headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # the last resort, for a bug in a middleware outside :class:`InternalErrors`: Starlette raises
        # the error again once this is sent, and the HTTP server logs it and closes the connection
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(*INTERNAL)

    app.add_middleware(InternalErrors)


def allowed_methods(request: Request) -> list[str]:
    """The methods of every route of ``request``'s path, sorted: the ``Allow`` of a 405 (Starlette's
    names only the methods of the first route that matched the path, one of several when a path has a
    route per method)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


#: The answer to an error no handler took: status, type and message.
INTERNAL = (500, "internal", "internal error (the server's log has the details)")


class InternalErrors:
    """Answer an error of a route that no handler took (a bug) as :data:`INTERNAL`, logged once, on a
    connection that stays open. Starlette's handler for ``Exception`` answers too, but then raises the
    error again for the HTTP server, which logs it a second time and closes the client's keep-alive
    connection. After the response has begun the error is logged and the connection ends. An HTTP
    error (a body too large or too slow, met outside a route) is left to the middleware that raised it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        def answer(exc: Exception) -> Response:
            if isinstance(exc, HTTPException):
                raise exc
            logger.error("%s %s failed", scope["method"], scope["path"], exc_info=exc)
            return error_response(*INTERNAL)

        await answer_unless_started(self.app, scope, receive, send, caught=Exception, answer=answer)


async def answer_unless_started(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    caught: type[Exception],
    answer: Callable[[Exception], Response],
) -> None:
    """Run ``app``; an error of type ``caught`` that it raises is given to ``answer``, whose response is
    sent unless one has already begun (its status line is sent: the connection just ends)."""
    started = False

    async def watched(message: Message) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, watched)
    except caught as exc:
        response = answer(exc)
        if not started:
            await response(scope, receive, send)
