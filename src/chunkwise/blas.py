"""Query-time linear algebra on one BLAS thread.

The products a query needs (a 100 × 384 Gram matrix for redundancy removal, one matrix-vector product
over the stored vectors) are small or memory-bound, so extra BLAS threads only add synchronisation; on a
busy machine OpenBLAS's spinning threads made the Gram matrix 20-30 times slower (24 ms against 0.8 ms
on one thread, measured here on two cores under load). Model inference is never run inside this limit.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@functools.cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit the BLAS libraries loaded so far to one thread inside the block."""
    with _controller().limit(limits=1, user_api="blas"):
        yield
