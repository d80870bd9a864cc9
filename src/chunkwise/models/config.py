"""Which backend serves each model role, and how remote calls behave: the ``[models]`` TOML section.

Example::

    [models]
    llm = "openai:gpt-4o-mini"        # or "local", "local:/path/model.gguf"
    embedder = "local"                # or "local:fp32", "local:int8", "local:/st/dir", "openai:<model>"
    reranker = "local"                # or "cross-encoder:/dir", "rerank:<model>" (Cohere-style /rerank)
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "OPENAI_API_KEY"    # the NAME of the variable holding the key, never the key
    timeout = 60
    max_attempts = 5
    max_cost = 2.5                    # dollars per run; max_tokens likewise

    [models.prices."gpt-4o-mini"]
    input_per_mtok = 0.15
    output_per_mtok = 0.60
    cached_input_per_mtok = 0.075

Environment variables win over the file: ``CHUNKWISE_LLM``, ``CHUNKWISE_EMBEDDER``, ``CHUNKWISE_RERANKER``,
``OPENAI_BASE_URL``, ``CHUNKWISE_CACHE_DIR``. Keys are only ever read from the environment, so a config
file can be committed and a key never lands on disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chunkwise.errors import ConfigError
from chunkwise.settings import build, read_toml

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ROLE_ENV = {"llm": "CHUNKWISE_LLM", "embedder": "CHUNKWISE_EMBEDDER", "reranker": "CHUNKWISE_RERANKER"}


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens; cached input defaults to the input price."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """Cost of a call; ``cached_tokens`` are the part of the input served from a provider cache."""
        cached_rate = (
            self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        )
        fresh = max(0, input_tokens - cached_tokens)
        return (
            fresh * self.input_per_mtok + cached_tokens * cached_rate + output_tokens * self.output_per_mtok
        ) / 1e6


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    """Per-role backend specs, remote endpoint settings, retry policy, prices, budgets and cache."""

    llm: str = "local"
    embedder: str = "local"
    reranker: str = "local"
    base_url: str | None = None
    rerank_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    structured_attempts: int = 3
    prices: dict[str, Price] = field(default_factory=dict)
    max_cost: float | None = None
    max_tokens: int | None = None
    cache: bool = True
    cache_dir: str | None = None

    @classmethod
    def from_mapping(cls, section: dict[str, Any], source: str = "models") -> ModelsConfig:
        """Build from a parsed ``[models]`` table; unknown keys and bad values raise :class:`ConfigError`."""
        config = build(cls, section, source)
        config.validate(source)
        return config

    @classmethod
    def load(cls, path: str | Path | None = None) -> ModelsConfig:
        """The ``[models]`` section of the TOML file at ``path`` (defaults if ``None``) + env overrides."""
        section: dict[str, Any] = {}
        if path is not None:
            section = read_toml(path, "the model configuration").get("models", {})
        return cls.from_mapping(section, str(path or "[models]")).with_env()

    def with_env(self) -> ModelsConfig:
        """A copy where the environment variables override the role specs, base URL and cache dir."""
        overrides: dict[str, Any] = {
            role: os.environ[var] for role, var in ROLE_ENV.items() if os.environ.get(var)
        }
        if os.environ.get("OPENAI_BASE_URL"):
            overrides["base_url"] = os.environ["OPENAI_BASE_URL"]
        if os.environ.get("CHUNKWISE_CACHE_DIR"):
            overrides["cache_dir"] = os.environ["CHUNKWISE_CACHE_DIR"]
        return replace(self, **overrides)

    def validate(self, source: str = "[models]") -> None:
        """Raise :class:`ConfigError` for out-of-range values."""
        if (
            self.timeout <= 0
            or self.max_attempts < 1
            or self.backoff_base < 0
            or self.structured_attempts < 1
        ):
            raise ConfigError(
                f"{source}: timeout, max_attempts, backoff_base and structured_attempts must be positive"
            )
        if (self.max_cost is not None and self.max_cost < 0) or (
            self.max_tokens is not None and self.max_tokens < 0
        ):
            raise ConfigError(f"{source}: budgets must not be negative")
        for model, price in self.prices.items():
            rates = (price.input_per_mtok, price.output_per_mtok, price.cached_input_per_mtok or 0.0)
            if min(rates) < 0:  # a negative rate makes costs negative, and max_cost never reached
                raise ConfigError(f"{source}.prices.{model!r}: prices must not be negative, got {price}")

    @property
    def endpoint(self) -> str:
        """The OpenAI-compatible base URL to use for remote roles."""
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/")

    def api_key(self) -> str | None:
        """The API key, read from the environment variable named by ``api_key_env``."""
        return os.environ.get(self.api_key_env) or None

    def price(self, model: str) -> Price:
        """The price of ``model`` (free when the table has no entry, e.g. local models)."""
        return self.prices.get(model, Price())

    def cache_path(self) -> Path:
        """The model cache directory: ``cache_dir``, else :func:`cache_root`."""
        return Path(self.cache_dir).expanduser() if self.cache_dir else cache_root()


def cache_root() -> Path:
    """Where chunkwise keeps its caches (the model cache, the evaluation's indexes):
    ``$CHUNKWISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/chunkwise``, else ``~/.cache/chunkwise``."""
    if os.environ.get("CHUNKWISE_CACHE_DIR"):
        return Path(os.environ["CHUNKWISE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chunkwise"


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` -> ``("openai", "gpt-4o-mini")``; ``"local"`` -> ``("local", "")``."""
    backend, _, rest = spec.strip().partition(":")
    return backend.strip().lower(), rest.strip()
