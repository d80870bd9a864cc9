"""Running the real ``chunkwise`` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

#: ``ulimit -v 4000000`` (KiB): the address space the hardening tests give the command, so that runaway
#: memory fails the command instead of waking the machine's out-of-memory killer.
ULIMIT_V = 4_000_000 * 1024


def run_chunkwise(
    *args: str,
    env: dict[str, str] | None = None,
    cache: Path | None = None,
    check: bool = False,
    cwd: Path | None = None,
    timeout: float = 600,
    address_space: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """``chunkwise ARGS...`` through its entry point (``python -m chunkwise``), output captured as text.

    ``env`` adds to (or overrides) the current environment. ``cache`` becomes ``XDG_CACHE_HOME`` (and
    the session's ``CHUNKWISE_CACHE_DIR`` is dropped, so every cache goes under it). The models stay
    offline and tables are 200 columns wide. ``address_space`` limits the command's virtual memory to
    that many bytes (``ulimit -v``).
    """
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200", **(env or {})}
    if cache is not None:
        full["XDG_CACHE_HOME"] = str(cache)
        full.pop("CHUNKWISE_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "chunkwise", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=timeout,
        check=check,
        preexec_fn=None if address_space is None else lambda: _limit_memory(address_space),
    )


def _limit_memory(size: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


def run_bounded(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """:func:`run_chunkwise` under ``ulimit -v 4000000`` (:data:`ULIMIT_V`)."""
    return run_chunkwise(*args, address_space=ULIMIT_V, **options)
