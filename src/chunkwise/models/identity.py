"""What a local model says about itself: its name and the release of the package that ships it.

The name keys the model cache and is stored with a knowledge base's vectors; the version is stored too,
so vectors of another release are refused rather than compared (``Store.check_embedder``). The bundled
models (ONNX embedders, the cross-encoder, e5, the local LLM) set both in their constructor and inherit
the accessors from :class:`ModelIdentity`.

A model that chunkwise runs from a graph it builds (:mod:`~chunkwise.models.onnx_quantize`) also names
that build: it keys the model cache, so that a cached result always comes from the graph that runs now,
but it is not stored with the vectors. The version names the weights; a build that changes only how
activations are rounded moves vectors by as much as the batch a text was embedded in used to move them
(cosine about 0.995: see :mod:`~chunkwise.models.row_quantize`), so a knowledge base stays searchable
across it, its older vectors as close to the new ones as they were to each other.
"""

from __future__ import annotations


class ModelIdentity:
    """``name``, ``version`` and ``repr`` from the ``_name`` and ``_version`` a model sets."""

    _name: str
    _version: str = ""
    _build: str = ""

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

    @property
    def build(self) -> str:
        """How chunkwise built the graph it runs from the shipped file (empty when it runs that file)."""
        return self._build
