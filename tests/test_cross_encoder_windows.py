"""The bundled cross-encoder reading a passage through several windows: the tiling covers the passage,
and a passage's score is the highest of its windows' (BERT-MaxP), each window scored as the model's own
pair encoding of it would be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.models import Models
from chunkwise.models.config import ModelsConfig
from chunkwise.models.cross_encoder import MAX_LENGTH, OnnxCrossEncoder, tiled_windows
from tests.support.retrieval_sentences import QUERIES, SENTENCES
from tests.test_models_retrieval_models import reference_model


@given(st.integers(0, 5000), st.integers(1, 600), st.integers(1, 8))
def test_tiled_windows_cover_the_passage_when_they_can(length: int, width: int, most: int) -> None:
    starts = tiled_windows(length, width, most)
    assert starts == sorted(set(starts))
    assert 1 <= len(starts) <= max(1, most)
    assert starts[0] == 0
    if length <= width:
        assert starts == [0]
        return
    assert all(0 <= s <= length - width for s in starts)
    if most > 1:
        assert starts[-1] == length - width
    if most * width >= length:
        covered = np.zeros(length, dtype=bool)
        for start in starts:
            covered[start : start + width] = True
        assert covered.all()
        assert len(starts) == -(-length // width)  # no more windows than covering takes


def test_tiled_windows_golden() -> None:
    assert tiled_windows(450, 174, 3) == [0, 138, 276]
    assert tiled_windows(1000, 174, 3) == [0, 413, 826]  # three windows cannot cover it: spread evenly
    assert tiled_windows(350, 174, 4) == [0, 88, 176]
    assert tiled_windows(100, 174, 3) == [0]
    assert tiled_windows(450, 174, 1) == [0]


@pytest.fixture(scope="module")
def three() -> OnnxCrossEncoder:
    return OnnxCrossEncoder(windows=3)


def test_reading_windows_is_part_of_the_name(three: OnnxCrossEncoder) -> None:
    assert OnnxCrossEncoder().name == "local:ms-marco-MiniLM-L-12-v2-int8"
    assert three.name == "local:ms-marco-MiniLM-L-12-v2-int8@192x3"
    with pytest.raises(ValueError, match="at least one window"):
        OnnxCrossEncoder(windows=0)


def test_a_passage_scores_its_best_window(three: OnnxCrossEncoder) -> None:
    session, tokenizer = reference_model("reranker_en")
    query = "How much does extra baggage cost?"
    filler = "The weather report mentioned light rain over the hills and cold nights in the valley. "
    long_text = filler * 18 + "Extra baggage costs 50 dollars per bag. " + filler * 6
    texts = [SENTENCES[0], long_text, filler * 24]
    query_ids = tokenizer.encode(query, add_special_tokens=False).ids
    width = MAX_LENGTH - len(query_ids) - 3
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    expected = []
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        logits = []
        for start in tiled_windows(len(ids), width, 3):
            pair = [cls, *query_ids, sep, *ids[start : start + width], sep]
            types = [0] * (len(query_ids) + 2) + [1] * (len(pair) - len(query_ids) - 2)
            feed = {
                "input_ids": np.array([pair], dtype=np.int64),
                "attention_mask": np.ones((1, len(pair)), dtype=np.int64),
                "token_type_ids": np.array([types], dtype=np.int64),
            }
            logits.append(float(session.run(None, feed)[0][0, 0]))
        expected.append(max(logits))
    scores = three.score(query, texts)
    assert np.allclose(scores, expected, atol=0.2)  # int8 activations against float ones
    assert int(np.argmax(scores)) == 1
    pairs, owners = three.pairs(query, texts)
    assert owners == [0, 1, 1, 1, 2, 2, 2]
    assert all(len(p.ids) <= MAX_LENGTH for p in pairs)


def test_windows_score_the_same_in_any_batch(three: OnnxCrossEncoder) -> None:
    texts = [*SENTENCES, " ".join(SENTENCES * 6)]
    together = three.score(QUERIES[0], texts)
    alone = [three.score(QUERIES[0], [t])[0] for t in texts]
    assert np.allclose(together, alone, rtol=0, atol=1e-5)
    assert three.score(QUERIES[0], []).shape == (0,)


def test_the_maxp_spec_reads_three_windows(tmp_path: Path) -> None:
    reranker = Models(ModelsConfig(cache_dir=str(tmp_path))).reranker("local:ms-marco-minilm-maxp")
    assert reranker.name == "local:ms-marco-MiniLM-L-12-v2-int8@192x3"
    query = "How much does extra baggage cost?"
    filler = "The weather report mentioned light rain over the hills and cold nights in the valley. "
    # the query's terms sit at the start, the answer past the first window: the single best window is
    # drawn to the terms, the whole reading finds the answer
    lure = "Questions about extra baggage and what it may cost are common. " + filler * 12
    texts = [lure + "Extra baggage costs 50 dollars per bag.", lure + "Pets travel in the hold."]
    whole = reranker.score(query, texts)
    assert whole[0] > whole[1] + 1
    single = OnnxCrossEncoder().score(query, texts)
    assert single[0] == pytest.approx(single[1])  # both read as the same lure
