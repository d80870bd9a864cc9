"""Schema versions of a store: an older schema is upgraded step by step, a newer one is refused.

Each store records the version of the schema it was created with; opening it runs the upgrade steps
from that version to the current one (each step in its own transaction, recording the version it
reaches), and refuses a schema from a newer chunkwise with :class:`~chunkwise.errors.SchemaVersionError`
rather than misreading it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from chunkwise.errors import CorruptStoreError, SchemaVersionError


def upgrade(location: str, found: int, current: int, steps: Mapping[int, Callable[[], None]]) -> None:
    """Bring the schema of the store at ``location`` from version ``found`` to ``current``:
    ``steps[v]`` upgrades version ``v`` to ``v + 1`` and records it."""
    if found > current:
        raise SchemaVersionError(
            location,
            f"store schema {found} is newer than the supported {current}; upgrade chunkwise to open it",
        )
    for version in range(found, current):
        if version not in steps:
            raise SchemaVersionError(location, f"store schema {version} cannot be upgraded to {current}")
        steps[version]()


def recorded_version(location: str, value: str | None) -> int:
    """The schema version a store recorded as ``value`` (0 when none is: the first schema recorded none);
    :class:`CorruptStoreError` when it is not a whole number, which no chunkwise wrote."""
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        reason = f"the recorded schema version {value[:40]!r} is not a number"
        raise CorruptStoreError(location, reason) from None
