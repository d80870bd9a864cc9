"""What a local model says about itself: its name and the release of the package that ships it.

The name keys the model cache and is stored with a knowledge base's vectors; the version is stored too,
so vectors of another release are refused rather than compared (``Store.check_embedder``). The bundled
models (ONNX embedders, the cross-encoder, e5, the local LLM) set both in their constructor and inherit
the accessors from :class:`ModelIdentity`.
"""

from __future__ import annotations


class ModelIdentity:
    """``name``, ``version`` and ``repr`` from the ``_name`` and ``_version`` a model sets."""

    _name: str
    _version: str = ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

    @property
    def name(self) -> str:
        """Model identifier used in cache keys and stored with the vectors (``local:<model>``)."""
        return self._name

    @property
    def version(self) -> str:
        """``<distribution>==<version>`` of the package that ships the model (empty for a custom file)."""
        return self._version
