"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests of the remote model paths.

It is a real server (``http.server`` in a thread) speaking the wire formats chunkwise uses:

- ``POST /v1/chat/completions``: the answer comes from ``answer(request) -> str`` (default: echoes the
  last user message); usage counts whitespace-separated words, so accounting totals are predictable.
- ``POST /v1/completions`` scores its prompt in either of vLLM's two shapes (``styles`` limits which
  the server understands, to play servers that know only one or neither): with ``echo`` + ``logprobs``
  (OpenAI's), or with ``prompt_logprobs`` (vLLM's: per position ``null`` first, then
  ``{token_id: {"logprob", "rank", "decoded_token"}}`` with the prompt's own token first and the top
  alternatives after it). The prompt is split into tokens with :func:`word_tokens` (words and single
  whitespace runs); each token gets the deterministic logprob :func:`token_logprob`, and the top
  alternatives are :data:`ALTERNATIVES`. ``max_tokens`` > 0 generates :data:`GENERATED`. A server that
  does not know ``echo`` ignores it (as ``transformers serve`` does); one that does not know
  ``prompt_logprobs`` refuses the request with HTTP 422 (as ``transformers serve`` does).
- ``POST /v1/embeddings``: hash-seeded unit vectors of ``dim`` dimensions (:func:`hash_vector`).
- ``POST /rerank`` and ``/v1/rerank`` (Cohere/Jina/TEI style): word-overlap scores.

Misbehaviour is scripted per request: :meth:`OpenAIServer.script` queues :class:`Reply` objects, and each
incoming request (any path) takes the next one before the default behaviour applies. Every request is
logged in :attr:`OpenAIServer.requests`.

Usage::

    with OpenAIServer(answer=lambda request: '{"cuts": [3, 7]}') as server:
        server.script(Reply.error(429, retry_after=0), Reply.hang(5))
        client = OpenAIChatLLM("gpt-test", base_url=server.base_url, api_key="k")
        ...
        assert server.requests[0].path == "/v1/chat/completions"
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

Answer = Callable[[dict[str, Any]], str]
ALTERNATIVES = ("\n\n", " the", ".")
#: The one token a completion generates.
GENERATED = " end"
#: The prompt-scoring request shapes a server may understand (vLLM understands both).
STYLES = ("echo", "prompt_logprobs")
_WORDS = re.compile(r"\s+|[^\s]+")


def word_tokens(text: str) -> list[str]:
    """The server's tokenisation: maximal runs of whitespace or of non-whitespace."""
    return _WORDS.findall(text)


def token_logprob(token: str) -> float:
    """Deterministic logprob of ``token`` in (-10, -0.01]."""
    digest = int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "big")
    return -0.01 - (digest % 1000) / 100


def hash_vector(text: str, dim: int) -> list[float]:
    """Deterministic unit vector of ``text`` (seeded by its SHA-256)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dim)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def word_count(text: str) -> int:
    """Usage counting of the server: whitespace-separated words."""
    return len(text.split())


@dataclass(frozen=True)
class Reply:
    """One scripted response; build with the class methods."""

    status: int = 200
    body: bytes | None = None
    content: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False

    @classmethod
    def answer(cls, content: str) -> Reply:
        """A well-formed chat completion whose message content is ``content``."""
        return cls(content=content)

    @classmethod
    def error(cls, status: int, retry_after: float | str | None = None) -> Reply:
        """An HTTP error with an OpenAI-style error body and optional ``Retry-After``."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        body = json.dumps({"error": {"message": f"scripted {status}", "type": "server_error"}}).encode()
        return cls(status=status, body=body, headers=headers)

    @classmethod
    def hang(cls, seconds: float) -> Reply:
        """Answer normally, but only after ``seconds`` (longer than the client's timeout)."""
        return cls(delay=seconds)

    @classmethod
    def disconnect(cls) -> Reply:
        """Close the connection without sending anything."""
        return cls(drop=True)

    @classmethod
    def raw(cls, body: str, status: int = 200, content_type: str = "application/json") -> Reply:
        """Send ``body`` verbatim: garbage JSON, truncated JSON, plain text."""
        return cls(status=status, body=body.encode(), headers={"Content-Type": content_type})


@dataclass(frozen=True)
class Request:
    """One logged request."""

    path: str
    json: Any
    headers: dict[str, str]


class OpenAIServer:
    """The loopback server; use as a context manager, then read :attr:`base_url` (ends in ``/v1``)."""

    def __init__(
        self,
        answer: Answer | None = None,
        *,
        dim: int = 32,
        model: str = "test-model",
        styles: tuple[str, ...] = STYLES,
    ) -> None:
        self.answer: Answer = answer or _echo_last_user
        self.dim = dim
        self.model = model
        self.styles = styles
        self._vocabulary: dict[str, int] = {}
        self.requests: list[Request] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no path)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``<url>/v1``."""
        return self.url + "/v1"

    def script(self, *replies: Reply) -> None:
        """Queue ``replies``; each request takes the next one before the default behaviour applies."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    def paths(self) -> list[str]:
        """The paths of the logged requests, in order."""
        return [r.path for r in self.requests]

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, request: Request) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            return self._script.popleft() if self._script else None

    def respond(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The well-behaved answer for ``path``; raises ``KeyError`` for an unknown path."""
        routes: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "/v1/chat/completions": self._chat,
            "/v1/completions": self._completions,
            "/v1/embeddings": self._embeddings,
            "/rerank": self._rerank,
            "/v1/rerank": self._rerank,
        }
        return routes[path](payload)

    def chat_response(self, payload: dict[str, Any], content: str) -> dict[str, Any]:
        """A chat completion carrying ``content``, with word-count usage."""
        prompt_words = sum(word_count(str(m.get("content", ""))) for m in payload.get("messages", []))
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": payload.get("model", self.model),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": word_count(content),
                "total_tokens": prompt_words + word_count(content),
            },
        }

    def _chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.chat_response(payload, self.answer(payload))

    def token_id(self, token: str) -> int:
        """The server's id of ``token`` (assigned on first sight)."""
        with self._lock:
            return self._vocabulary.setdefault(token, len(self._vocabulary))

    def _completions(self, payload: dict[str, Any]) -> dict[str, Any]:
        if "prompt_logprobs" in payload and "prompt_logprobs" not in self.styles:
            raise RefusedError("Unexpected fields in the request: {'prompt_logprobs'}")
        prompt = str(payload.get("prompt", ""))
        tokens = word_tokens(prompt)
        generated = [GENERATED] if int(payload.get("max_tokens", 16)) > 0 else []
        choice: dict[str, Any] = {"index": 0, "text": "".join(generated), "finish_reason": "length"}
        echo = bool(payload.get("echo")) and "echo" in self.styles
        if echo:
            choice["text"] = prompt + choice["text"]
            if payload.get("logprobs") is not None:
                choice["logprobs"] = self._echo_logprobs([*tokens, *generated])
        if payload.get("prompt_logprobs") is not None:
            choice["prompt_logprobs"] = [None, *(self._position(t) for t in tokens[1:])]
        return {
            "id": "cmpl-test",
            "object": "text_completion",
            "model": payload.get("model", self.model),
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(tokens),
                "completion_tokens": len(generated),
                "total_tokens": len(tokens) + len(generated),
            },
        }

    @staticmethod
    def _echo_logprobs(tokens: list[str]) -> dict[str, Any]:
        """OpenAI's ``logprobs`` object over ``tokens`` (the first has no logprob)."""
        offsets = [0]
        for token in tokens[:-1]:
            offsets.append(offsets[-1] + len(token))
        return {
            "tokens": tokens,
            "token_logprobs": [None, *(token_logprob(t) for t in tokens[1:])],
            "top_logprobs": [
                None,
                *({t: token_logprob(t), **{a: token_logprob(a) for a in ALTERNATIVES}} for t in tokens[1:]),
            ],
            "text_offset": offsets,
        }

    def _position(self, token: str) -> dict[str, dict[str, Any]]:
        """vLLM's prompt logprobs at one position: the prompt's token first, then the top alternatives."""
        ranked = sorted(ALTERNATIVES, key=token_logprob, reverse=True)
        own_rank = 1 + sum(token_logprob(a) > token_logprob(token) for a in ranked if a != token)
        entries = {str(self.token_id(token)): _logprob_entry(token, own_rank)}
        for rank, alternative in enumerate(ranked, start=1):
            entries.setdefault(str(self.token_id(alternative)), _logprob_entry(alternative, rank))
        return entries

    def _embeddings(self, payload: dict[str, Any]) -> dict[str, Any]:
        inputs = payload["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        tokens = sum(word_count(t) for t in texts)
        return {
            "object": "list",
            "model": payload.get("model", self.model),
            "data": [
                {"object": "embedding", "index": i, "embedding": hash_vector(t, self.dim)}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _rerank(self, payload: dict[str, Any]) -> dict[str, Any]:
        query = set(str(payload["query"]).lower().split())
        documents = [d if isinstance(d, str) else d.get("text", "") for d in payload["documents"]]
        scores = [len(query & set(d.lower().split())) / (len(query) or 1) for d in documents]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        top_n = payload.get("top_n") or len(order)
        tokens = word_count(str(payload["query"])) * len(documents) + sum(word_count(d) for d in documents)
        return {
            "id": "rerank-test",
            "model": payload.get("model", self.model),
            "results": [{"index": i, "relevance_score": scores[i]} for i in order[:top_n]],
            "usage": {"total_tokens": tokens},
        }


class RefusedError(Exception):
    """A request the server does not accept (answered with HTTP 422 and ``detail``, as FastAPI does)."""


def _logprob_entry(token: str, rank: int) -> dict[str, Any]:
    return {"logprob": token_logprob(token), "rank": rank, "decoded_token": token}


def _echo_last_user(payload: dict[str, Any]) -> str:
    users = [m for m in payload.get("messages", []) if m.get("role") == "user"]
    return f"echo: {users[-1]['content']}" if users else "echo:"


def _handler_class(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: tests read :attr:`OpenAIServer.requests` instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                payload = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                payload = None
            reply = server._next(Request(self.path, payload, dict(self.headers.items())))
            if reply is not None and reply.delay and server._stopping.wait(reply.delay):
                return
            if reply is not None and reply.drop:
                self.close_connection = True
                self.connection.close()
                return
            if reply is not None and reply.body is not None:
                headers = {"Content-Type": "application/json", **reply.headers}
                self._send(reply.status, reply.body, headers)
                return
            try:
                body = (
                    server.chat_response(payload, reply.content)
                    if reply is not None and reply.content is not None
                    else server.respond(self.path, payload)
                )
            except RefusedError as exc:
                self._send(422, json.dumps({"detail": str(exc)}).encode(), {})
                return
            except (KeyError, TypeError, AttributeError) as exc:
                message = {"error": {"message": f"bad request: {exc!r}"}}
                self._send(404 if isinstance(exc, KeyError) else 400, json.dumps(message).encode(), {})
                return
            headers = {"Content-Type": "application/json", **(reply.headers if reply else {})}
            self._send(reply.status if reply else 200, json.dumps(body).encode(), headers)

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
