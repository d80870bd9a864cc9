"""When and how long to wait before retrying a remote model call.

Retried: HTTP 408, 409, 429 and every 5xx, timeouts, refused or dropped connections, and bodies that are
not the JSON the endpoint promised (a proxy's HTML page, a body cut short). Not retried: other 4xx
(a wrong key or a bad request does not get better by asking again).

The wait before attempt ``n + 1`` is ``Retry-After`` when the server sent it (seconds or an HTTP date,
capped at ``backoff_max``), else exponential backoff with full jitter:
``uniform(0, min(backoff_max, backoff_base * 2**n))``. ``sleep`` is injectable so tests can record waits
instead of spending them.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another attempt."""
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), ``None`` if absent/bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    """Attempt cap and backoff parameters; ``sleep`` and ``rng`` are injectable for tests."""

    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * 2**attempt)
        return self.rng.uniform(0.0, ceiling)
