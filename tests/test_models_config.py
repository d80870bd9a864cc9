"""The ``[models]`` configuration: TOML, environment overrides, prices, validation, factory errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.errors import ConfigError
from chunkwise.models import Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.config import ModelsConfig, Price, split_spec

TOML = """
[models]
llm = "openai:gpt-4o-mini"
embedder = "local:int8"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "MY_KEY"
timeout = 12.5
max_attempts = 2
max_cost = 0.5

[models.prices."gpt-4o-mini"]
input_per_mtok = 0.15
output_per_mtok = 0.60
cached_input_per_mtok = 0.075
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in ("CHUNKWISE_LLM", "CHUNKWISE_EMBEDDER", "CHUNKWISE_RERANKER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_toml_section_is_read(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chunkwise.toml"
    path.write_text(TOML)
    config = ModelsConfig.load(path)
    assert (config.llm, config.embedder, config.reranker) == ("openai:gpt-4o-mini", "local:int8", "local")
    assert (config.endpoint, config.timeout, config.max_attempts, config.max_cost) == (
        "http://127.0.0.1:9/v1",
        12.5,
        2,
        0.5,
    )
    assert config.price("gpt-4o-mini").cost(1_000_000, 1_000_000, cached_tokens=500_000) == pytest.approx(
        0.5 * 0.15 + 0.5 * 0.075 + 0.60
    )
    assert config.price("unknown") == Price()
    clean_env.setenv("MY_KEY", "secret")
    assert config.api_key() == "secret"
    assert "secret" not in repr(config)


def test_environment_overrides_the_file(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chunkwise.toml"
    path.write_text(TOML)
    clean_env.setenv("CHUNKWISE_LLM", "local")
    clean_env.setenv("CHUNKWISE_RERANKER", "rerank:jina-reranker-v2")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    clean_env.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "c"))
    config = ModelsConfig.load(path)
    assert (config.llm, config.embedder, config.reranker) == (
        "local",
        "local:int8",
        "rerank:jina-reranker-v2",
    )
    assert config.endpoint == "http://127.0.0.1:8/v1"
    assert config.cache_path() == tmp_path / "c"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models]\nllm = 'local'\nmodel = 'x'\n", r"unknown setting\(s\) model; known: llm, embedder"),
        ("[models]\ntimeout = 0\n", "must be positive"),
        ("[models]\nmax_cost = -1\n", "must not be negative"),
        ("[models.prices.m]\ninput_per_token = 1\n", r"prices.m: unknown setting\(s\) input_per_token"),
        ("[models\n", "cannot read"),
    ],
)
def test_bad_configuration_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as raised:
        ModelsConfig.load(path)
    assert str(path) in str(raised.value)


def test_split_spec() -> None:
    assert split_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert split_spec(" LOCAL ") == ("local", "")
    assert split_spec("local:/models/x.gguf") == ("local", "/models/x.gguf")


@pytest.mark.parametrize(
    ("role", "spec", "message"),
    [
        ("llm", "anthropic:claude", "unknown llm backend 'anthropic': use one of local, openai"),
        ("llm", "openai:", "needs a model"),
        ("embedder", "cohere:embed", "unknown embedder backend"),
        ("embedder", "local:/no/such/dir", "not a sentence-transformers directory"),
        ("reranker", "cross-encoder:/no/such/dir", "cross-encoder directory not found"),
        ("reranker", "magic", "unknown reranker backend 'magic': use one of cohere, cross-encoder"),
    ],
)
def test_registry_rejects_bad_specs(role: str, spec: str, message: str) -> None:
    models = Models(ModelsConfig(cache=False), ledger=Ledger())
    with pytest.raises(ConfigError, match=message):
        getattr(models, role)(spec)
