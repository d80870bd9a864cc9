"""The optional compiled loops of the chunkers, and the switch that says whether they are used.

``_speedups`` is a small C extension (``_speedups.c``) that the package's build compiles when a C
compiler is present. It runs the per-chunk loops for character budgets (packing, overlap) and builds
the chunk objects with their ids for every unit. Each of its functions has a pure-Python counterpart
that stays the reference: without the extension, or with :data:`native` set to ``None`` (tests do,
to compare both), the chunkers give the same chunks, only slower.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def _load() -> ModuleType | None:
    """The compiled module, or ``None`` where it was not built (no C compiler at install time)."""
    try:
        return importlib.import_module("chunkwise.chunking._speedups")
    except ImportError:
        return None


native: ModuleType | None = _load()
