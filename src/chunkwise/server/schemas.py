"""The JSON request bodies the server accepts, validated strictly.

Every model forbids unknown fields (a ``path`` naming a file on the server is refused, never read) and
takes JSON types as they are (``"k": "5"`` is a wrong type, not a five). Chunker parameters are typed as
strictly (``"max_size": "10"`` and ``"max_size": 10.0`` are refused with 422 naming it, although the
chunker, which parses the command line's strings and takes a whole float for an ``int``, would read
either as ten), then checked twice: by :func:`check_remote_params` here, which refuses what would let a
client reach the server's files or code or multiply its work, and a NaN or infinite number (400, a value
out of range rather than a wrong type), and then by the chunker itself (unknown names, values out of
range).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from chunkwise.chunking import CHUNKERS, check_param_types, normalised_params
from chunkwise.chunking.tokens import COUNTER_NAMES, tiktoken_local
from chunkwise.errors import ConfigError
from chunkwise.server.errors import ApiError

#: Chunker parameters that name a model: the server uses its configured models, never a client's spec
#: (a spec can name a model file on the server, or a paid endpoint).
MODEL_PARAMS = frozenset({"llm", "embedder"})
#: Chunker parameters whose value names another chunker.
CHUNKER_PARAMS = frozenset({"inner"})
#: Size units that name no file: the built-in counters and tiktoken's named encodings.
UNIT_PREFIXES = ("tiktoken:",)
#: The most ``logprob`` windows a request may score at once: each is a thread of the server and a
#: forward pass of its model held in memory, and the ``readers`` slots bound requests, not these.
MAX_REMOTE_WORKERS = 8
#: Bounds on the chunker parameters a client could set to multiply the server's work, ``(lowest,
#: highest)`` (``None``: the chunker's own limit), checked on top of the chunker's own ranges. A window
#: far below its default multiplies the model calls over a text, each with its prompt (``logprob``'s
#: ``window_chars=2`` made one forward pass per two characters); ``workers`` is threads at once;
#: ``max_extra`` is model calls per ``logprob`` window. The command line, run by the machine's owner,
#: takes any value its chunker does.
REMOTE_BOUNDS: dict[tuple[str, str], tuple[int | None, int | None]] = {
    ("logprob", "workers"): (1, MAX_REMOTE_WORKERS),
    ("logprob", "window_chars"): (1000, None),
    ("logprob", "max_extra"): (0, 32),
    ("agentic", "window_size"): (256, None),
    ("wrac", "window_size"): (256, None),
    ("sections", "window_chars"): (2000, None),
}

#: The ``semantic`` chunker's ``cluster`` method, for a remote client: its pieces are each embedded, and
#: its segmentation weighs, for every piece, each run of pieces that fits in one chunk (``max_size`` over
#: the piece size: eight by default) in memory and in a loop. A piece of at least
#: :data:`MIN_REMOTE_PIECE` units and at most :data:`MAX_REMOTE_PIECES` pieces a chunk keep both to a
#: text's length times a constant (one character pieces of a 196 KB text asked for 180 GiB).
MIN_REMOTE_PIECE, MAX_REMOTE_PIECES = 16, 32


def _not_blank(value: str) -> str:
    """``value`` unless it is only white space (an id or a name that names nothing)."""
    if not value.strip():
        raise PydanticCustomError("blank", "must not be blank")
    return value


#: A document id or a name: one to a thousand characters, not all of them white space.
Name = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_not_blank)]


class Body(BaseModel):
    """A request body: unknown fields refused, JSON types taken strictly."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ChunkOptions(Body):
    """How to chunk: a chunker by name (``GET /v1/chunkers`` lists them) and its parameters."""

    chunker: str = Field("recursive", description="fixed, recursive, sentence, semantic, structure, ...")
    params: dict[str, Any] = Field(default_factory=dict, description="max_size, min_size, overlap, unit, ...")
    document: bool = Field(
        False, description="Also return the parsed document (text and units), to draw the chunks on it."
    )

    @field_validator("params")
    @classmethod
    def _typed_params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Each parameter of a registered chunker as JSON typed it (see the module docstring). Another
        chunker name is refused by :func:`check_remote_params`, and so are the model parameters, whatever
        their values, and a NaN or infinite number (a number, so no wrong type: a value out of range)."""
        chunker = info.data.get("chunker")
        if chunker in CHUNKERS:
            typed = {
                key: value
                for key, value in params.items()
                if key not in MODEL_PARAMS and not _non_finite(value)
            }
            try:
                check_param_types(chunker, typed)
            except ConfigError as exc:
                raise PydanticCustomError("param_type", "{reason}", {"reason": str(exc)}) from None
        return params


class ChunkRequest(ChunkOptions):
    """``POST /v1/chunk`` with a JSON body: the text itself (kept verbatim, or read as Markdown or HTML
    when ``format`` says so)."""

    text: str = Field(min_length=1, max_length=50_000_000)
    format: Literal["text", "markdown", "html"] = "text"
    doc_id: Name = "text"


#: A question: its length is bounded here; a query without a word (empty included) is refused by the
#: query pipeline's check, 400, as the README documents (an empty one was 422 while a blank one was 400).
Query = Annotated[str, Field(max_length=10_000)]


class SearchRequest(Body):
    """``POST /v1/search``: the ``k`` best chunks for ``query``."""

    query: Query
    k: int = Field(5, ge=1, le=1000)


class SegmentsRequest(Body):
    """``POST /v1/segments``: relevant segments for ``query``; ``preset`` names an RSE preset."""

    query: Query
    preset: Name | None = None


class AnswerRequest(Body):
    """``POST /v1/answer``: a grounded, cited answer to ``query``."""

    query: Query


class ErrorDetail(BaseModel):
    """What went wrong: a short ``type`` (``invalid_request``, ``config_error``, ...) and a message naming
    the field or the reason."""

    type: str
    message: str


class ErrorBody(BaseModel):
    """The body of every error response (:mod:`.errors`), documented as such in the OpenAPI schema."""

    error: ErrorDetail


#: The error responses every operation may give, for the OpenAPI schema: one shape for all of them (the
#: framework's own ``{"detail": [...]}`` for a 422 is never sent).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "model": ErrorBody,
        "description": "The request is refused: the error's type and message say why.",
    },
    "5XX": {"model": ErrorBody, "description": "A model, the store or the server failed (the log has it)."},
}

#: :data:`ERROR_RESPONSES` for a route whose own answer is not JSON (``/metrics``): FastAPI documents a
#: ``model`` in the route's media type, so there the error body is named as JSON explicitly.
TEXT_ROUTE_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "description": response["description"],
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ErrorBody.__name__}"}}},
    }
    for status, response in ERROR_RESPONSES.items()
}


def check_remote_params(chunker: str, params: dict[str, Any]) -> None:
    """:class:`ConfigError` for a chunker or parameter a remote client may not choose: a chunker outside
    the registry (``package.module:Class`` would import code), a model spec, a size unit that names a
    tokenizer file (``hf:<path>``), a NaN or infinite number (Python's JSON reader takes ``NaN`` and
    ``Infinity``), or a value outside :data:`REMOTE_BOUNDS` (or a ``logprob`` overlap
    over half its window, which would score most of the text twice or more); and 422
    (:class:`ApiError`) for a tiktoken encoding the server does not have (tiktoken would download it)."""
    if chunker not in CHUNKERS:
        raise ConfigError(f"unknown chunker {chunker!r}: use one of {', '.join(CHUNKERS)}")
    for key, value in params.items():
        if _non_finite(value):
            raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    _check_bounds(chunker, params)
    for key in sorted(MODEL_PARAMS & set(params)):
        raise ConfigError(
            f"parameter {key!r} cannot be set per request: the server uses its configured models"
        )
    for key in sorted(CHUNKER_PARAMS & set(params)):
        # A list or an object is no chunker name (and, unhashable, cannot even be looked up).
        if not isinstance(params[key], str) or params[key] not in CHUNKERS:
            raise ConfigError(f"{key} must be one of {', '.join(CHUNKERS)}, got {params[key]!r}")
    unit = params.get("unit")
    if unit is None:
        return
    if not (isinstance(unit, str) and (unit in COUNTER_NAMES or unit.startswith(UNIT_PREFIXES))):
        raise ConfigError(
            f"unit must be one of {', '.join(COUNTER_NAMES)} or tiktoken:<encoding>, got {unit!r}"
        )
    if unit.startswith("tiktoken:") and not tiktoken_local(encoding := unit[len("tiktoken:") :]):
        # tiktoken fetches an encoding it lacks from the internet: a client must not make the server do so.
        raise ApiError(
            422,
            "invalid_request",
            f"params: unit: the tiktoken encoding {encoding!r} is not available on this server "
            "(it never downloads one for a request)",
        )


def _check_bounds(chunker: str, params: dict[str, Any]) -> None:
    """:class:`ConfigError` naming the first parameter of ``params`` outside :data:`REMOTE_BOUNDS`, with
    the range this server takes (values of a wrong type are refused before, by :class:`ChunkOptions`)."""
    for (name, key), (low, high) in REMOTE_BOUNDS.items():
        value = params.get(key) if name == chunker else None
        if not isinstance(value, int | float):
            continue
        if (low is not None and value < low) or (high is not None and value > high):
            allowed = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ConfigError(f"{key} must be {allowed} on this server, got {value}")
    if chunker == "semantic":
        _check_pieces({**normalised_params(chunker, {}), **params})
    if chunker == "logprob" and isinstance(overlap := params.get("overlap_chars"), int):
        window = params.get("window_chars", normalised_params(chunker, {})["window_chars"])
        if isinstance(window, int) and overlap > window // 2:
            raise ConfigError(
                f"overlap_chars must be at most half of window_chars ({window // 2}) on this server, "
                f"got {overlap}"
            )


def _check_pieces(params: dict[str, Any]) -> None:
    """:class:`ConfigError` for a ``semantic`` ``cluster`` segmentation of pieces smaller than
    :data:`MIN_REMOTE_PIECE` or more than :data:`MAX_REMOTE_PIECES` to a chunk (``params`` complete)."""
    size, piece = params["max_size"], params["piece_size"]
    if params["method"] != "cluster" or not isinstance(size, int) or not isinstance(piece, int):
        return
    piece = piece or max(1, size // 8)  # the chunker's own default piece
    if piece < MIN_REMOTE_PIECE or size > piece * MAX_REMOTE_PIECES:
        low = max(MIN_REMOTE_PIECE, -(-size // MAX_REMOTE_PIECES))
        raise ConfigError(
            f"piece_size must be at least {low} on this server with max_size {size} (at least "
            f"{MIN_REMOTE_PIECE}, at most {MAX_REMOTE_PIECES} pieces a chunk), got {piece}"
        )


def _non_finite(value: object) -> bool:
    """Whether ``value`` is a NaN or infinite number."""
    return isinstance(value, float) and not math.isfinite(value)
