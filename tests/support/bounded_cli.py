"""The ``chunkwise`` command in a subprocess under ``ulimit -v 4000000``, as a hostile input meets it.

The address-space limit turns runaway memory into a failure of the command (a ``MemoryError``) rather
than work for the machine's out-of-memory killer; the timeout turns a hang into a failed test.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

#: ``ulimit -v 4000000``: kilobytes of address space.
ADDRESS_SPACE_KB = 4_000_000


def _limit_memory() -> None:
    limit = ADDRESS_SPACE_KB * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_bounded(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``chunkwise ARGS...`` with the memory limit; output is captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "chunkwise", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        preexec_fn=_limit_memory,  # only sets a resource limit in the child
    )
