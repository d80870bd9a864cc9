"""The SQLite model cache: content addressing, persistence, and two processes writing at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from chunkwise.models.cache import CachedCall, ModelCache, cache_key

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from chunkwise.models.cache import CachedCall, ModelCache, cache_key

    cache = ModelCache(sys.argv[1])
    offset = int(sys.argv[2])
    for start in range(0, 400, 20):
        texts = [f"text {i}" for i in range(offset + start, offset + start + 20)]
        vectors = np.stack([np.full(8, float(t.split()[1]), dtype=np.float32) for t in texts])
        cache.put_vectors("m", texts, vectors, [len(t) for t in texts])
        for text in texts:
            cache.put_call(cache_key("llm", "chat", text), CachedCall({"answer": text}, 3, 4))
        assert len(cache.get_vectors("m", texts)) == 20
    """
)


def test_keys_depend_on_model_input_and_parameters() -> None:
    base = cache_key("openai:a", "chat", [{"role": "user", "content": "x"}], 512)
    assert base == cache_key("openai:a", "chat", [{"content": "x", "role": "user"}], 512)
    assert base != cache_key("openai:b", "chat", [{"role": "user", "content": "x"}], 512)
    assert base != cache_key("openai:a", "chat", [{"role": "user", "content": "y"}], 512)
    assert base != cache_key("openai:a", "chat", [{"role": "user", "content": "x"}], 256)


def test_vectors_and_calls_persist_across_instances(tmp_path: Path) -> None:
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4)
    ModelCache(tmp_path).put_vectors("m", ["a", "b", "c"], vectors, [1, 2, 3])
    ModelCache(tmp_path).put_call("k", CachedCall({"x": [1, "é"]}, 10, 2))
    reopened = ModelCache(tmp_path)
    found = reopened.get_vectors("m", ["c", "zzz", "a"])
    assert sorted(found) == [0, 2]
    assert np.array_equal(found[0][0], vectors[2])
    assert found[2][1] == 1
    assert reopened.get_vectors("other-model", ["a"]) == {}
    assert reopened.get_call("k") == CachedCall({"x": [1, "é"]}, 10, 2)
    assert reopened.get_call("missing") is None


def test_two_processes_share_the_cache(tmp_path: Path) -> None:
    """Two real processes write overlapping entries at the same time; both finish and nothing is lost."""
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(offset)], stderr=subprocess.PIPE)
        for offset in (0, 200)
    ]
    errors = [w.communicate(timeout=300)[1].decode() for w in writers]
    assert [w.returncode for w in writers] == [0, 0], errors
    cache = ModelCache(tmp_path)
    texts = [f"text {i}" for i in range(600)]
    found = cache.get_vectors("m", texts)
    assert sorted(found) == list(range(600))
    assert all(float(found[i][0][0]) == i for i in range(600))
    assert all(cache.get_call(cache_key("llm", "chat", t)) == CachedCall({"answer": t}, 3, 4) for t in texts)
    assert (tmp_path / "models.sqlite3-wal").exists() or (tmp_path / "models.sqlite3").exists()
