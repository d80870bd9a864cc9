"""A reference for the bundled INT8 graphs: the same int8 weights, multiplied with float activations.

Each ``DynamicQuantizeLinear`` -> ``MatMulInteger`` -> ``Cast`` -> ``Mul`` chain of a dynamically
quantized graph becomes one float ``MatMul`` of the unquantised activations with the weights dequantised
(``(w - zero point) * scale``, per output channel where the graph has one scale per channel). What the
per-row activation quantisation of :mod:`chunkwise.models.row_quantize` should come close to, computed
here without any of its code.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np


@functools.cache
def float_activation_session(path: Path) -> Any:
    """An onnxruntime session of ``path`` with float activations (see the module docstring), built once."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    weights = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    producer = {name: node for node in graph.node for name in node.output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        quantized, weight, _, weight_zero = node.input
        quantizer = producer[quantized]
        (cast,) = readers[node.output[0]]
        (dequantize,) = readers[cast.output[0]]
        scales = producer[next(i for i in dequantize.input if i != cast.output[0])]
        weight_scale = next(i for i in scales.input if i != quantizer.output[1])
        dequantized = (
            weights[weight].astype(np.float32) - weights[weight_zero].astype(np.float32)
        ) * weights[weight_scale].astype(np.float32)
        name = f"{weight}_float"
        graph.initializer.append(numpy_helper.from_array(dequantized.astype(np.float32), name))
        replaced[id(dequantize)] = helper.make_node(
            "MatMul", [quantizer.input[0], name], [dequantize.output[0]]
        )
        dropped.update({id(node), id(cast)})
    nodes = [replaced.get(id(node), node) for node in graph.node if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # the quantizers left without readers are dropped, with a warning each
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
