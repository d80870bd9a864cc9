"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LM Studio...) as LLM or embedder.

- chat: ``POST chat/completions`` at temperature 0;
- structured: the shared loop of :mod:`chunkwise.models.structured` over :meth:`OpenAIChatLLM.chat`;
- logprobs: ``POST completions`` with the prompt and continuation concatenated, so the server scores the
  given text; see :class:`LogprobStyle` for the two request shapes servers understand, and
  :func:`align_tokens` for how the server's tokens are placed back on the text;
- embeddings: ``POST embeddings`` in batches.

Every call goes through :class:`~chunkwise.models.http_client.JsonClient` (timeouts, retries, typed
errors). Token counts come from the server's ``usage``; ``count_tokens`` is an estimate (four characters a
token) because the remote tokenizer is not available offline. A count the server leaves out, or reports
malformed (:func:`~chunkwise.models.http_client.usage_counts`), is the estimate of the text sent or
received for chat and embeddings, so budgets hold against such a server.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from chunkwise.errors import ConfigError, LogprobsUnavailableError, ModelCallError
from chunkwise.models.http_client import JsonClient, usage_counts
from chunkwise.models.managed import estimate_tokens
from chunkwise.models.protocols import Message, TokenLogprobs, Usage, Vectors
from chunkwise.models.remote import RemoteModel
from chunkwise.models.structured import DEFAULT_ATTEMPTS, StructuredViaChat


class OpenAIChatLLM(StructuredViaChat, RemoteModel):
    """Chat, structured output and echo logprobs from an OpenAI-compatible server (``openai:<model>``)."""

    backend: ClassVar[str] = "openai"

    def __init__(
        self, model: str, client: JsonClient, *, top_logprobs: int = 5, attempts: int = DEFAULT_ATTEMPTS
    ) -> None:
        super().__init__(model, client)
        self._top = top_logprobs
        self._attempts = attempts

    def count_tokens(self, text: str) -> int:
        """An estimate: the remote tokenizer is not available offline."""
        return estimate_tokens(text)

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        """The model's answer at temperature 0."""
        payload = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        sent = sum(estimate_tokens(m.content) for m in messages)
        content, usage = self._client.post("chat/completions", payload, lambda body: _parse_chat(body, sent))
        self._usage.set(usage)
        return content

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """Teacher-forced logprobs of ``continuation``; tokens are the server's.

        The first call to an endpoint tries each :class:`LogprobStyle` in turn and the one that works is
        remembered for the endpoint (per process); a server that returns no prompt logprobs in either
        style gets :class:`~chunkwise.errors.LogprobsUnavailableError`, at once on later calls. The usage
        of every request a call made is summed, so the accounting matches what the server reported.

        A candidate that is not among the server's top logprobs at a position gets the smallest logprob
        listed there: an upper bound on its true value, since it ranked below all of them.
        """
        if not prompt:
            raise ConfigError(f"{self.name}: logprobs need a non-empty prompt (the first token has none)")
        text = prompt + continuation
        endpoint = self._client.base_url
        known = _LOGPROB_STYLES.get(endpoint)
        spent = Usage(0)
        for style in [known] if known else list(LogprobStyle):
            if style is LogprobStyle.NONE:
                break
            try:
                scored, usage = self._client.post(
                    "completions", style.payload(self.model, text, self._top), style.parse
                )
            except ModelCallError as exc:
                if not _is_refusal(exc.status):
                    raise
                continue  # the server rejected the parameter: try the next style
            spent = Usage(spent.input_tokens + usage.input_tokens, spent.output_tokens + usage.output_tokens)
            if scored is not None:
                _LOGPROB_STYLES.remember(endpoint, style)
                self._usage.set(spent)
                return _continuation_logprobs(self.name, scored, text, len(prompt), candidates)
        _LOGPROB_STYLES.remember(endpoint, LogprobStyle.NONE)
        self._usage.set(spent)
        raise LogprobsUnavailableError(
            self.name,
            f"{endpoint} returns no prompt logprobs (tried echo + logprobs and prompt_logprobs on "
            "/completions); logprob chunking needs a server that scores prompts, such as vLLM, "
            "or the local model",
        )


class LogprobStyle(enum.Enum):
    """How a ``completions`` request asks for the logprobs of the prompt's own tokens.

    ``ECHO`` is OpenAI's: ``echo`` + ``logprobs=N``; ``choices[0].logprobs`` lists ``tokens``,
    ``token_logprobs`` and ``top_logprobs`` over the prompt (and the generated token). ``PROMPT_LOGPROBS``
    is vLLM's: ``prompt_logprobs=N``; ``choices[0].prompt_logprobs`` holds, per prompt token, ``null`` for
    the first and otherwise a mapping from token id to ``{"logprob", "rank", "decoded_token"}`` whose first
    entry is the prompt's own token, followed by the top N. Both ask for one generated token
    (``max_tokens=1``): some servers refuse ``max_tokens=0`` (``transformers serve`` answers HTTP 500),
    and the generated token lies past the text, so it is never read. ``NONE`` records a server that
    gives neither (``transformers serve`` ignores ``echo`` and refuses ``prompt_logprobs``).
    """

    ECHO = "echo"
    PROMPT_LOGPROBS = "prompt_logprobs"
    NONE = "none"

    def payload(self, model: str, text: str, top: int) -> dict[str, Any]:
        """The request body scoring ``text``."""
        asked = {"echo": True, "logprobs": top} if self is LogprobStyle.ECHO else {"prompt_logprobs": top}
        return {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0, **asked}

    def parse(self, body: dict[str, Any]) -> tuple[list[_Scored] | None, Usage]:
        """The scored prompt tokens (``None`` when the answer carries no prompt logprobs) and the usage.

        Raises ``KeyError``/``TypeError``/``ValueError`` for logprobs that are present but malformed, so
        the client retries the answer as unreadable.
        """
        choice = body["choices"][0]
        if self is LogprobStyle.ECHO:
            scored = _echo_tokens(choice.get("logprobs"))
        else:
            scored = _prompt_logprob_tokens(choice.get("prompt_logprobs"))
        return (scored if scored and len(scored) > 1 else None), _read_usage(body)


@dataclass(frozen=True, slots=True)
class _Scored:
    """One prompt token as a server scored it: its text (``None`` when unknown), its logprob, the top
    alternatives, and the floor assumed for a candidate not among them."""

    token: str | None
    logprob: float | None
    top: dict[str, float]
    floor: float


class _StyleMemory:
    """The logprob style found for each endpoint (base URL) in this process."""

    def __init__(self) -> None:
        self._styles: dict[str, LogprobStyle] = {}
        self._lock = threading.Lock()

    def get(self, endpoint: str) -> LogprobStyle | None:
        """The style remembered for ``endpoint``, if it was probed."""
        with self._lock:
            return self._styles.get(endpoint)

    def remember(self, endpoint: str, style: LogprobStyle) -> None:
        """Record the outcome of probing ``endpoint``."""
        with self._lock:
            self._styles[endpoint] = style


_LOGPROB_STYLES = _StyleMemory()


def _is_refusal(status: int | None) -> bool:
    """An HTTP status with which a server rejects a request it does not understand (not a fault)."""
    return status is not None and 400 <= status < 500 and status not in (408, 409, 429)


#: What :attr:`OpenAIEmbedder.dim` embeds to learn an unconfigured dimension.
_DIM_PROBE = "dimension probe"


class OpenAIEmbedder(RemoteModel):
    """Embeddings from an OpenAI-compatible ``embeddings`` endpoint (``openai:<model>``), re-normalised to
    unit length; the usage of :meth:`embed` is summed over its batches."""

    backend: ClassVar[str] = "openai"

    def __init__(
        self, model: str, client: JsonClient, *, dim: int | None = None, batch_size: int = 256
    ) -> None:
        super().__init__(model, client)
        self._dim = dim
        self._batch_size = batch_size

    @property
    def dim_probe(self) -> str | None:
        """The text that reading :attr:`dim` embeds to learn the dimension (one paid request, whose usage
        :attr:`last_usage` then holds), so the accounting wrapper can check and record it as an
        embedding call; ``None`` once the dimension is known (configured, probed or seen in a reply)."""
        return None if self._dim is not None else _DIM_PROBE

    @property
    def dim(self) -> int:
        """Vector dimension: configured, or learnt from one probe request the first time it is needed."""
        if self._dim is None:
            vectors, used = self._request([_DIM_PROBE])
            self._usage.set(Usage(input_tokens=used))
            self._dim = int(vectors.shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors, one row per text, in batches of ``batch_size``."""
        parts: list[Vectors] = []
        tokens = 0
        for start in range(0, len(texts), self._batch_size):
            vectors, used = self._request(list(texts[start : start + self._batch_size]))
            parts.append(vectors)
            tokens += used
        self._usage.set(Usage(input_tokens=tokens))
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.vstack(parts)
        self._dim = int(matrix.shape[1])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)

    def _request(self, texts: list[str]) -> tuple[Vectors, int]:
        payload = {"model": self.model, "input": texts}
        sent = sum(estimate_tokens(text) for text in texts)
        return self._client.post(
            "embeddings", payload, lambda body: _parse_embeddings(body, len(texts), sent)
        )


def _read_usage(body: dict[str, Any], fallback_input: int = 0, fallback_output: int = 0) -> Usage:
    """The usage the server reports (input: ``prompt_tokens``, else ``total_tokens``), each count it leaves
    out or reports malformed replaced by its fallback."""
    usage = usage_counts(body)
    return Usage(
        input_tokens=usage.get("prompt_tokens", usage.get("total_tokens", fallback_input)),
        output_tokens=usage.get("completion_tokens", fallback_output),
    )


def _parse_chat(body: dict[str, Any], sent: int) -> tuple[str, Usage]:
    """The answer's text and usage; ``sent``: the estimated tokens of the request's messages."""
    content = body["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise TypeError("message content is not text")
    return content.strip(), _read_usage(body, sent, estimate_tokens(content))


def _echo_tokens(data: dict[str, Any] | None) -> list[_Scored] | None:
    """The ``ECHO`` style's tokens, or ``None`` when the server sent no logprobs: none at all, or tokens
    whose logprobs are all null (a server that echoes the prompt without scoring it), so the next style
    is tried."""
    if not data or not data.get("tokens"):
        return None
    rows = zip(data["tokens"], data["token_logprobs"], data["top_logprobs"], strict=True)
    scored: list[_Scored] = []
    for token, logprob, top in rows:
        listed = {str(k): float(v) for k, v in _mapping(top or {}, "a top_logprobs entry").items()}
        floor = min(listed.values(), default=float("-inf"))
        scored.append(_Scored(str(token), None if logprob is None else float(logprob), listed, floor))
    return None if all(s.logprob is None for s in scored) else scored


def _prompt_logprob_tokens(data: list[dict[str, Any] | None] | None) -> list[_Scored] | None:
    """The ``PROMPT_LOGPROBS`` style's tokens, or ``None`` when the server sent none.

    The first entry of each position is the prompt's own token (vLLM inserts it before the top N); the
    floor for unlisted candidates is the lowest logprob among the top N (by ``rank``), since the prompt's
    own token may rank far below them.
    """
    if not data:
        return None
    scored: list[_Scored] = []
    for position in data:
        if position is None:
            scored.append(_Scored(None, None, {}, float("-inf")))
            continue
        entries = [_mapping(e, "a prompt_logprobs entry") for e in _mapping(position, "a position").values()]
        listed = {str(e.get("decoded_token")): float(e["logprob"]) for e in entries if e.get("decoded_token")}
        top = [float(e["logprob"]) for e in entries[1:] or entries]
        own = entries[0]
        token = own.get("decoded_token")
        scored.append(_Scored(None if token is None else str(token), float(own["logprob"]), listed, min(top)))
    return scored


def _mapping(value: Any, what: str) -> dict[Any, Any]:
    """``value`` when it is a JSON object; else :class:`TypeError`, which the client reads as a malformed
    answer (retried, then :class:`~chunkwise.errors.ModelCallError`) where ``.items()`` or ``.get``
    would have raised an ``AttributeError`` that nothing catches."""
    if not isinstance(value, dict):
        raise TypeError(f"{what} is {type(value).__name__}, not an object")
    return value


def align_tokens(text: str, tokens: Sequence[str | None]) -> list[int]:
    """The start offset in ``text`` of each of a server's ``tokens`` (their concatenation, roughly).

    Servers decode each token on its own, so their token strings do not always spell the text: a
    character split over several byte-level tokens decodes to ``\ufffd`` pieces (or OpenAI's ``bytes:``
    form), a SentencePiece token may lose its leading space, special tokens (``<s>``) are not in the text
    at all, and vLLM's ``text_offset`` is only the running sum of those strings' lengths. So the offsets
    are recomputed here: each readable token is found at or just after the current position; unreadable
    ones (``None``, replacement characters) are spread over the text between their neighbours; a token
    found nowhere near is a zero-width special token. Offsets never decrease and lie in ``[0, len(text)]``.
    """
    offsets = [0] * len(tokens)
    pos = 0
    pending: list[int] = []
    for i, token in enumerate(tokens):
        if not token or "\ufffd" in token or token.startswith("bytes:"):
            pending.append(i)
            continue
        reach = pos + len(token) + 16 * (len(pending) + 1)
        found = text.find(token, pos, reach)
        if found < 0:  # a special token, not part of the text: zero width, as are unreadable ones before it
            _spread(offsets, pending, pos, pos)
            pending = []
            offsets[i] = pos
            continue
        _spread(offsets, pending, pos, found)
        leading_space = not pending and text[pos:found].isspace()
        offsets[i] = pos if leading_space else found
        pending = []
        pos = found + len(token)
    _spread(offsets, pending, pos, len(text))
    return offsets


def _spread(offsets: list[int], indices: list[int], low: int, high: int) -> None:
    """Give the tokens at ``indices`` evenly spaced offsets in ``[low, high)`` (``low`` when empty)."""
    for k, i in enumerate(indices):
        offsets[i] = low + (high - low) * k // len(indices)


def _continuation_logprobs(
    name: str, scored: list[_Scored], text: str, start: int, candidates: Sequence[str]
) -> TokenLogprobs:
    """The part of the scored ``text`` from ``start`` on (a token straddling ``start`` included), with
    offsets relative to ``start`` and each token's text as it stands in ``text``."""
    offsets = align_tokens(text, [s.token for s in scored])
    ends = [*offsets[1:], len(text)]
    tokens: list[str] = []
    relative: list[int] = []
    logprobs: list[float] = []
    alternatives: list[dict[str, float]] = []
    for offset, end, token in zip(offsets, ends, scored, strict=True):
        if not (start <= offset < len(text) or offset < start < end):
            continue
        if token.logprob is None:
            raise LogprobsUnavailableError(
                name,
                "the text's first token straddles the prompt, so it has no logprob: lengthen the prompt"
                if offset < start
                else f"the server gave no logprob for the text's token {text[offset:end]!r}"
                f" at character {offset - start}",
            )
        tokens.append(text[offset:end])
        relative.append(max(0, offset - start))
        logprobs.append(token.logprob)
        alternatives.append({c: token.top.get(c, token.floor) for c in candidates})
    return TokenLogprobs(tuple(tokens), tuple(relative), tuple(logprobs), tuple(alternatives))


def _parse_embeddings(body: dict[str, Any], count: int, sent: int) -> tuple[Vectors, int]:
    """The vectors in input order and the input tokens; ``sent``: the estimated tokens of the texts.

    A reply that cannot be the embeddings of the inputs is refused (``ValueError``, which the client
    reports as an unreadable reply): the wrong number of vectors, indexes other than one for each input
    (a repeated index would give one text another's vector), vectors of unequal length, values that are
    not finite (``NaN`` or past float32), or a vector of zeros, which has no direction: normalised it
    stays zero, and a cosine with it is undefined (PostgreSQL scores it NaN, which sorts first)."""
    data = sorted(body["data"], key=lambda row: int(row["index"]))
    if len(data) != count:
        raise ValueError(f"{len(data)} embeddings for {count} inputs")
    indexes = [int(row["index"]) for row in data]
    if indexes != list(range(count)):
        raise ValueError(f"embedding indexes {indexes[:8]} are not 0 to {count - 1}, one each")
    if len({len(row["embedding"]) for row in data}) > 1:
        raise ValueError("embeddings of unequal length")
    with np.errstate(over="ignore"):
        matrix = np.asarray([row["embedding"] for row in data], dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError("embeddings that are not lists of numbers")
    if not np.isfinite(matrix).all():
        raise ValueError("embeddings holding values that are not finite float32 numbers")
    zero = np.flatnonzero(~matrix.any(axis=1))
    if zero.size:
        raise ValueError(f"a vector of zeros for input {int(zero[0])}, which has no direction")
    return matrix, _read_usage(body, sent).input_tokens
