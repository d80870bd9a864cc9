"""The int8 MiniLM that chunkwise builds from the shipped file (``local:minilm-q8``, the ``fast``
preset's embedder): built once per cache directory, multiplying in int8, close to the float32
reference, and a typed error naming the file when its source cannot be built."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from chunkwise.config import from_dict
from chunkwise.errors import ModelFileError
from chunkwise.models import Models
from chunkwise.models.bundled import LOCAL_INSTALL, minilm_int8_onnx
from chunkwise.models.config import ModelsConfig
from chunkwise.models.onnx_embedder import MINILM_Q8, OnnxEmbedder
from chunkwise.models.onnx_quantize import RECIPE, quantized_model
from chunkwise.models.protocols import embed_queries
from tests.support.retrieval_sentences import ANSWERS, QUERIES, SENTENCES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("q8-cache")
    return quantized_model(minilm_int8_onnx(), cache, LOCAL_INSTALL, heads=12, hidden=384)


def test_the_build_is_made_once_and_named_by_its_source_and_recipe(built: Path) -> None:
    assert built.parent.name == "models"
    assert built.name.startswith("model-")
    assert RECIPE in built.name
    stamp = built.stat().st_mtime_ns
    again = quantized_model(minilm_int8_onnx(), built.parent.parent, LOCAL_INSTALL, heads=12, hidden=384)
    assert again == built
    assert again.stat().st_mtime_ns == stamp
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no build folder left behind


def test_the_build_multiplies_in_int8_except_after_gelu(built: Path) -> None:
    import onnx

    graph = onnx.load(str(built)).graph
    ops = Counter(node.op_type for node in graph.node)
    weights = {init.name for init in graph.initializer}
    gelu = {out for node in graph.node if "Gelu" in node.op_type for out in node.output}
    float_projections = [
        n for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights and n.input[0] in gelu
    ]
    # six layers: query, key, value, attention output and feed-forward input in int8; the six
    # feed-forward output projections in float32
    assert ops["MatMulInteger"] == 30
    assert len(float_projections) == 6
    assert ops["BiasGelu"] == 6
    assert ops["SkipLayerNormalization"] == 12


def test_vectors_stay_close_to_sentence_transformers(embedder: object, tmp_path: Path) -> None:
    q8 = Models(ModelsConfig(cache_dir=str(tmp_path))).embedder("local:minilm-q8").inner
    assert isinstance(q8, OnnxEmbedder)
    assert q8.name == MINILM_Q8.name == "local:all-MiniLM-L6-v2-q8"
    assert q8.version.endswith(f"+{RECIPE}")
    vectors = q8.embed(SENTENCES)
    reference = embed_queries(embedder, SENTENCES)  # type: ignore[arg-type]
    cosines = np.sum(vectors * reference, axis=1)
    assert cosines.min() > 0.98
    assert cosines.mean() > 0.99
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    scores = q8.embed(QUERIES) @ vectors.T
    assert list(np.argmax(scores, axis=1)) == ANSWERS


def test_the_fast_preset_embeds_with_it() -> None:
    assert from_dict({"preset": "fast"}).models.embedder == "local:minilm-q8"


def test_a_missing_or_unbuildable_source_names_the_file_and_the_package(tmp_path: Path) -> None:
    missing = tmp_path / "absent.onnx"
    with pytest.raises(ModelFileError, match="model file not found") as caught:
        quantized_model(missing, tmp_path, LOCAL_INSTALL, heads=12, hidden=384)
    assert str(missing) in str(caught.value)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not an onnx model at all" * 50)
    with pytest.raises(ModelFileError, match="could not build its int8 model") as caught:
        quantized_model(garbage, tmp_path, LOCAL_INSTALL, heads=12, hidden=384)
    assert str(garbage) in str(caught.value)
    assert LOCAL_INSTALL in str(caught.value)
    assert not list((tmp_path / "models").iterdir())  # nothing half-built is left
