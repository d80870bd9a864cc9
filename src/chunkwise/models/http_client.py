"""JSON over HTTP for remote model endpoints, with timeouts and retries.

:class:`JsonClient` POSTs a JSON payload and returns the decoded JSON object, retrying transient faults
per :class:`~chunkwise.models.retry.RetryPolicy`; when attempts run out, or the server refuses the request
(a 4xx other than 408/409/429), it raises :class:`~chunkwise.errors.ModelCallError` naming the endpoint
(without credentials) and the last fault, with the last HTTP status, so a caller can tell a refused
parameter from a failing server.

The API key lives only in the ``Authorization`` header of the underlying ``httpx.Client``: it is not an
attribute, not in ``repr``, not in any error message, and URLs in messages have their user-info removed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from chunkwise.errors import ModelCallError
from chunkwise.models.retry import RetryPolicy, is_retryable_status, parse_retry_after

T = TypeVar("T")
SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError)


def redact_url(url: str) -> str:
    """``url`` without user-info and query string (either may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class JsonClient:
    """A retrying JSON POST client for one base URL."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        policy: RetryPolicy | None = None,
        label: str = "",
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout)
        self._base = redact_url(base_url)
        self.policy = policy or RetryPolicy()
        self.label = label or "remote model"

    def __repr__(self) -> str:
        return f"JsonClient({self._base!r})"

    @property
    def base_url(self) -> str:
        """The base URL without credentials (what errors name, and what identifies the endpoint)."""
        return self._base

    def _redact(self, text: str) -> str:
        """``text`` with the API key, should a server echo it, replaced by ``***``."""
        key = self._client.headers.get("Authorization", "").removeprefix("Bearer ")
        return text.replace(key, "***") if key else text

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def post(self, path: str, payload: dict[str, Any], parse: Callable[[dict[str, Any]], T]) -> T:
        """POST ``payload`` to ``path`` (relative to the base URL) and return ``parse`` of the JSON answer.

        ``parse`` raises ``KeyError``/``IndexError``/``TypeError``/``ValueError`` when the object lacks what
        the endpoint promised; such an answer is retried like an unreadable body.
        """
        where = f"{self._base.rstrip('/')}/{path.lstrip('/')}"
        reason = "no attempt"
        status: int | None = None
        for attempt in range(self.policy.max_attempts):
            retry_after: float | None = None
            try:
                response = self._client.post(path.lstrip("/"), json=payload)
            except UnicodeEncodeError as exc:  # a lone surrogate: no attempt can send it
                reason = f"the request is not valid Unicode text ({exc.reason}); it was not sent"
                raise ModelCallError(self.label, f"{where}: {reason}") from exc
            except httpx.TimeoutException:
                reason = f"timed out after {self._client.timeout.read}s"
            except httpx.TransportError as exc:
                reason = f"connection failed ({type(exc).__name__})"
            else:
                status = response.status_code
                if response.status_code < 300:
                    body = _decode(response)
                    try:
                        if body is not None:
                            return parse(body)
                        reason = f"HTTP {response.status_code} with a body that is not a JSON object"
                    except SHAPE_ERRORS as exc:
                        reason = f"unexpected response shape ({type(exc).__name__}: {str(exc)[:100]})"
                else:
                    reason = f"HTTP {response.status_code}: {self._redact(_error_message(response))}"
                    if not is_retryable_status(response.status_code):
                        break
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if attempt + 1 < self.policy.max_attempts:
                self.policy.sleep(self.policy.delay(attempt, retry_after))
        raise ModelCallError(self.label, f"{where}: {reason} (after {attempt + 1} attempts)", status)


def usage_counts(body: dict[str, Any]) -> dict[str, int]:
    """The token counts of a response's ``usage`` object that are whole, finite and not negative.

    Usage is bookkeeping the answer does not depend on, so a malformed one (not an object; a count that is
    negative, fractional, infinite, a string or a boolean) is read as not reported rather than discarding
    a good answer; the caller then counts by its estimate. A negative count is never taken: it would
    lower the ledger's totals and let a run spend past its budget.
    """
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return {}
    counts: dict[str, int] = {}
    for key, value in usage.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            continue
        if value >= 0:
            counts[str(key)] = int(value)
    return counts


def _decode(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


def _error_message(response: httpx.Response) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body text."""
    body = _decode(response)
    error = body.get("error") if body else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:200]
    return response.text[:200].strip() or response.reason_phrase
