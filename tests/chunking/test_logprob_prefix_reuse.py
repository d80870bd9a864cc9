"""The local model's faster logprob scoring changes the work done, never the boundaries LlamaChunk picks.

Windows scored two at a time with key/value reuse must choose exactly the boundaries of one window at a
time with every pass computed whole; and a call that repeats most of an earlier one (as a mid-token
evaluation repeats its window's prompt and text up to the cut) takes the earlier keys and values and
gives the same logprobs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.chunking import get_chunker
from chunkwise.chunking.llm_report import ChunkingRun
from chunkwise.models.local_llm import LocalLLM
from chunkwise.parsing import parse_file

pytestmark = pytest.mark.slow


def chunk(llm: LocalLLM, path: Path, workers: int) -> ChunkingRun:
    doc = parse_file(path, doc_id=path.name)
    params = {"max_size": 400, "min_size": 40, "window_chars": 700, "overlap_chars": 100, "workers": workers}
    return get_chunker("logprob", llm=llm, **params).run(doc)  # type: ignore[attr-defined, no-any-return]


def test_parallel_windows_with_reuse_keep_the_boundaries(data_dir: Path) -> None:
    path = data_dir / "formats" / "Boarding Process.md"
    after = chunk(LocalLLM(kv_cache=2), path, workers=2)
    before = chunk(LocalLLM(kv_cache=0), path, workers=1)
    assert len(after.report.windows) >= 4
    assert after.curve is not None
    assert before.curve is not None
    assert after.curve.chosen == before.curve.chosen
    assert [(c.start, c.end) for c in after.chunks] == [(c.start, c.end) for c in before.chunks]
    assert after.curve.offsets == before.curve.offsets
    assert after.curve.logprobs == pytest.approx(before.curve.logprobs, abs=1e-3)


def test_a_call_repeating_an_earlier_one_reuses_its_keys_and_values() -> None:
    prompt = "Repeat the text.\n\nThe boarding gate closes 20 minutes before departure.\n"
    text = "Passengers must show a boarding pass and an identity document at the gate."
    cut = text.index(" an identity")
    reusing, fresh = LocalLLM(kv_cache=2), LocalLLM(kv_cache=0)
    reusing.logprobs(prompt, text)
    reused = reusing.logprobs(prompt + text[:cut], text[cut:], [" an", "."])
    computed = fresh.logprobs(prompt + text[:cut], text[cut:], [" an", "."])
    # Everything but the last prompt token, whose logits are needed, comes from the first call.
    assert reusing.reused_tokens == reusing.count_tokens(prompt + text[:cut]) - 1
    assert fresh.reused_tokens == 0
    assert reused.tokens == computed.tokens
    assert reused.logprobs == pytest.approx(computed.logprobs, abs=1e-4)
    for mine, theirs in zip(reused.candidates, computed.candidates, strict=True):
        assert mine == pytest.approx(theirs, abs=1e-4)
