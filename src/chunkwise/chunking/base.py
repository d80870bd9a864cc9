"""The chunker protocol, typed parameters, and the base class the built-in chunkers share.

A chunker is anything with a ``name`` and ``chunk(doc) -> list[Chunk]``. The built-in ones derive from
:class:`BaseChunker`: they declare a frozen :class:`ChunkerParams` subclass (so every setting is typed,
documented and validated in one place) and propose pieces; :mod:`chunkwise.chunking.enforce` does the
rest, so the size and coverage contract holds for all of them alike.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from chunkwise.chunking.boundaries import RECURSIVE_LEVELS, Level
from chunkwise.chunking.chunk import Chunk
from chunkwise.chunking.enforce import ContextFn, Piece, SizeLimits, finalize
from chunkwise.chunking.measure import Measure, measure_for
from chunkwise.chunking.tokens import TokenCounter, check_unit, get_counter
from chunkwise.chunking.trim import NON_SPACE
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.models.context import Models
from chunkwise.settings import build

#: The smallest budget a token unit accepts: one code point is at most 4 tokens of byte-level BPE.
MIN_TOKEN_BUDGET = 4


@runtime_checkable
class Chunker(Protocol):
    """Document in, chunks out."""

    @property
    def name(self) -> str:
        """The registry name (``fixed``, ``recursive``, ...)."""
        ...

    def chunk(self, doc: Document) -> list[Chunk]:
        """The chunks of ``doc``, in document order."""
        ...


@dataclasses.dataclass(frozen=True)
class ChunkerParams:
    """Settings every chunker takes.

    ``max_size``: hard maximum chunk size in ``unit``, never exceeded. ``min_size``: chunks smaller than
    this are merged with a neighbour when the merge stays within the maximum. ``overlap``: how far each
    chunk reaches back into the previous one, a whole number of units if ``>= 1``, else a fraction of
    ``max_size``. ``unit``: ``chars`` or a token counter name (``tokens``/``minilm``, ``hf:<path>``,
    ``tiktoken:<encoding>``).
    """

    max_size: int = 500
    min_size: int = 0
    overlap: float = 0.0
    unit: str = "chars"

    @property
    def overlap_units(self) -> int:
        """``overlap`` in units of ``unit``."""
        if 0 < self.overlap < 1:
            return round(self.overlap * self.max_size)
        return int(self.overlap)

    def validate(self) -> None:
        """Raise :class:`ConfigError` for out-of-range values (subclasses extend this)."""
        if self.max_size < 1:
            raise ConfigError(f"max_size must be at least 1, got {self.max_size}")
        if not 0 <= self.min_size <= self.max_size:
            raise ConfigError(
                f"min_size must be between 0 and max_size ({self.max_size}), got {self.min_size}"
            )
        if self.overlap > 1 and not float(self.overlap).is_integer():
            raise ConfigError(
                f"overlap of 1 or more counts units and must be a whole number (below 1 it is a fraction "
                f"of max_size), got {self.overlap}"
            )
        if self.overlap < 0 or self.overlap_units >= self.max_size:
            raise ConfigError(
                f"overlap must be >= 0 and below max_size ({self.max_size}), got {self.overlap}"
            )
        check_unit(self.unit)
        if self.unit != "chars" and self.max_size - self.overlap_units < MIN_TOKEN_BUDGET:
            raise ConfigError(f"max_size minus overlap must be at least {MIN_TOKEN_BUDGET} tokens")

    def limits(self) -> SizeLimits:
        """The resolved size limits."""
        return SizeLimits(self.max_size, self.min_size, self.overlap_units)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (objects such as an embedder appear by name)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None and not isinstance(value, str | int | float | bool):
                value = getattr(value, "name", type(value).__name__)
            out[f.name] = value
        return out


P = typing.TypeVar("P", bound=ChunkerParams)


def parse_params(chunker: str, cls: type[P], raw: Mapping[str, Any]) -> P:
    """Build and validate ``cls`` from ``raw`` (strings from the command line are parsed); an unknown
    name or a bad value raises :class:`ConfigError` naming the chunker, the key and the valid names."""
    params = build(cls, raw, chunker, parse_strings=True)
    try:
        params.validate()
    except ConfigError as exc:
        raise ConfigError(f"{chunker}: {exc}") from exc
    return params


class BaseChunker:
    """Shared plumbing: typed params, the size measure, and the hand-off to :func:`finalize`.

    Subclasses set ``name``, ``Params``, ``levels`` (how an oversize piece is cut) and implement
    :meth:`pieces`.
    """

    name: ClassVar[str] = "base"
    Params: ClassVar[type[ChunkerParams]] = ChunkerParams
    levels: ClassVar[tuple[Level, ...]] = RECURSIVE_LEVELS
    #: Whether overlaps start at a word boundary (a fixed-size chunker cuts anywhere).
    snap_overlap: ClassVar[bool] = True

    def __init__(self, *, models: Models | None = None, **params: Any) -> None:
        self.params = parse_params(self.name, self.Params, params)
        self._models = models
        try:
            self.counter: TokenCounter = get_counter(self.params.unit)
        except ConfigError as exc:
            raise ConfigError(f"{self.name}: {exc}") from exc

    @property
    def models(self) -> Models:
        """The run's model context (a default one from the environment when none was given)."""
        if self._models is None:
            self._models = Models()
        return self._models

    def chunk(self, doc: Document) -> list[Chunk]:
        """The chunks of ``doc`` under this chunker's rule and the shared size contract."""
        if NON_SPACE.search(doc.text) is None:
            return []
        measure = measure_for(doc.text, self.counter)
        limits = self.params.limits()
        pieces = self.pieces(doc, measure, limits)
        return finalize(
            doc,
            pieces,
            measure,
            limits,
            self.levels,
            snap_overlap=self.snap_overlap,
            context=self.context_fn(doc),
        )

    def pieces(self, doc: Document, measure: Measure, limits: SizeLimits) -> Sequence[Piece]:
        """The proposed spans; the default is the whole text, cut by :attr:`levels` alone."""
        return [(0, len(doc.text), 0)]

    def context_fn(self, doc: Document) -> ContextFn | None:
        """Per-chunk context text, if this chunker records any."""
        return None

    def describe(self) -> dict[str, Any]:
        """The chunker's name and params, JSON-ready."""
        return {"chunker": self.name, "params": self.params.to_dict()}
