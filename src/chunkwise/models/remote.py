"""What every model behind an HTTP API shares: its name, its client, and the usage of its last call."""

from __future__ import annotations

from typing import ClassVar

from chunkwise.models.http_client import JsonClient
from chunkwise.models.protocols import Usage, UsageSlot


class RemoteModel:
    """A model served over HTTP, named ``<backend>:<model>``; subclasses set ``backend`` and store the
    usage of each call in ``_usage`` for the accounting wrappers to read."""

    backend: ClassVar[str]

    def __init__(self, model: str, client: JsonClient) -> None:
        self.model = model
        self._client = client
        self._usage = UsageSlot()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, {self._client!r})"

    def close(self) -> None:
        """Close the HTTP client's connection pool (a call after it fails)."""
        self._client.close()

    @property
    def name(self) -> str:
        """``<backend>:<model>``."""
        return f"{self.backend}:{self.model}"

    @property
    def last_usage(self) -> Usage | None:
        """Tokens of the calling thread's most recent call (summed over the batches of a batched call)."""
        return self._usage.get()
