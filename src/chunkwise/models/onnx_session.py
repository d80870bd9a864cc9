"""What every ONNX backend shares: loading a model and its tokenizer with typed errors, thread settings,
and length-sorted batches padded per batch.

A bundled model file can be missing (the package is not installed), truncated (an interrupted install)
or the wrong file (another model's ONNX under the expected name). Each case raises
:class:`~chunkwise.errors.ModelFileError` naming the file and the command that installs the package,
instead of an onnxruntime stack trace or, worse, vectors of the wrong shape that fail much later.

Batching: transformer cost grows with the padded width of a batch, so texts are sorted by token count
and cut into batches whose padded size (rows x width) stays under a token budget. Short texts then run
many to a batch, long ones few, and no batch pads a short text to the length of a long one.

Threads: a session runs each call on the calling thread alone, and the batches of one call run on
several threads at once (:func:`run_batches`). Small batches gain little from splitting each operator
over threads, whose synchronisation costs more than it saves; whole batches side by side keep every
core busy without it (MiniLM, 700-character passages, two cores: 75 chunks/s against 64 with one
two-threaded call at a time). A single short query, one batch, is as fast on one thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.errors import ModelFileError

Ints = npt.NDArray[np.int64]


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def first_line(exc: Exception) -> str:
    """The first line of ``exc``'s message, at most 200 characters (its type name when it has none):
    what a :class:`ModelFileError` quotes of an error raised by onnx or onnxruntime."""
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def onnx_session(path: Path, install: str) -> Any:
    """An onnxruntime CPU session for ``path`` that runs each call on the calling thread.

    One intra-op and one inter-op thread: parallelism comes from running batches side by side
    (:func:`run_batches`), and one session serves any number of threads at once. No memory pattern:
    it plans buffers for one input shape, and every batch here has its own (45 MB less at peak).
    """
    import onnxruntime

    if not path.is_file():
        raise ModelFileError(path, "model file not found", install)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_mem_pattern = False
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types for unreadable files
        raise ModelFileError(path, f"not a readable ONNX model ({first_line(exc)})", install) from exc


def load_tokenizer(path: Path, install: str, max_length: int) -> Any:
    """A ``tokenizers`` tokenizer from ``tokenizer.json``, truncating at ``max_length``, never padding."""
    from tokenizers import Tokenizer

    if not path.is_file():
        raise ModelFileError(path, "tokenizer file not found", install)
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for malformed JSON
        raise ModelFileError(path, f"not a readable tokenizer ({exc})", install) from exc
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()
    return tokenizer


def check_output(session: Any, path: Path, install: str, expected: Sequence[int | None]) -> None:
    """:class:`ModelFileError` unless the first output has ``len(expected)`` axes and the fixed sizes given
    (``None`` accepts any size): catches another model's file put in place of this one."""
    shape = list(session.get_outputs()[0].shape)
    fixed = [s if isinstance(s, int) else None for s in shape]
    matches = len(fixed) == len(expected) and all(
        want is None or got == want for got, want in zip(fixed, expected, strict=True)
    )
    if not matches:
        wanted = ["*" if w is None else w for w in expected]
        raise ModelFileError(path, f"wrong output shape {shape}, expected {wanted}", install)


def length_batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indices grouped into batches, shortest first, so that ``rows x longest`` stays within
    ``max_tokens`` and ``rows`` within ``max_rows``; a text over the budget on its own gets its own batch.

    Every index appears exactly once. The order inside and across batches is by length (ties by index).
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = lengths[index]  # sorted, so the newcomer is the longest
        if current and (len(current) >= max_rows or (len(current) + 1) * width > max_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


_POOL_LOCK = threading.Lock()
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of ``threads`` threads for model batches, made on first use."""
    with _POOL_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="chunkwise-onnx")
        return _POOLS[threads]


def run_batches(
    batches: Sequence[list[int]], run: Callable[[list[int]], Any], out: npt.NDArray[Any], threads: int
) -> None:
    """``out[batch] = run(batch)`` for every batch, up to ``threads`` batches at once (one call's batches
    share a process-wide pool; a single batch runs on the calling thread)."""
    if threads <= 1 or len(batches) <= 1:
        for batch in batches:
            out[batch] = run(batch)
        return
    for batch, result in zip(batches, _pool(threads).map(run, batches), strict=True):
        out[batch] = result


def pad_batch(encodings: Sequence[Any], *, type_ids: bool = False) -> dict[str, Ints]:
    """``input_ids``, ``attention_mask`` and ``token_type_ids`` padded to the batch's longest encoding
    (token types from the encodings when ``type_ids``, as a cross-encoder's pairs need; zeros otherwise)."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n] = encoding.ids
        mask[row, :n] = 1
        if type_ids:
            types[row, :n] = encoding.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def run_session(session: Any, feed: dict[str, Ints]) -> Any:
    """The session's first output, fed with the inputs it declares (some exports drop token types)."""
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feed.items() if k in names})[0]
