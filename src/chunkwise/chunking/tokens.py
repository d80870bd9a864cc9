"""Token counters: how chunk sizes are measured (characters, a Hugging Face tokenizer, tiktoken).

A counter answers two questions. ``count``/``count_batch`` give the exact size of a text, the number the
hard size limit is checked against. ``token_spans`` tokenises a whole document once and returns the
character span of every token, so chunkers can measure any span with two binary searches instead of
re-tokenising growing strings (see :mod:`chunkwise.chunking.measure`).

Counters are chosen by name: ``"chars"``, ``"tokens"`` or ``"minilm"`` (the bundled all-MiniLM-L6-v2
WordPiece tokenizer, without special tokens), ``"hf:<path to tokenizer.json>"``, ``"tiktoken:<encoding>"``
(tiktoken must be installed; an encoding missing from tiktoken's cache is fetched by tiktoken, and where
that fails the error names the cache and the reason).
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from hashlib import sha1
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunkwise.errors import ConfigError

Offsets = npt.NDArray[np.int64]

#: Texts longer than this are tokenised in blocks cut at whitespace (bounded memory, batch parallelism).
BLOCK_CHARS = 65_536

_SPACE = re.compile(r"[ \t\n\r]")

#: The counter names accepted besides the ``hf:`` and ``tiktoken:`` prefixes.
COUNTER_NAMES: tuple[str, ...] = ("chars", "tokens", "minilm")


@runtime_checkable
class TokenCounter(Protocol):
    """Measures text size in one unit."""

    @property
    def name(self) -> str:
        """The name the counter was selected by (recorded in chunker params)."""
        ...

    def count(self, text: str) -> int:
        """Exact size of ``text``."""
        ...

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Exact sizes of many texts (one call, so backends can batch)."""
        ...

    def token_spans(self, text: str) -> tuple[Offsets, Offsets]:
        """Start and end character offsets of every token of ``text``, both ascending."""
        ...

    @property
    def separators(self) -> frozenset[str]:
        """Characters at which sizes add up: ``count(a + sep + b) == count(a) + count(b)``.

        Empty when no such guarantee exists. Where it holds, a span's size is the sum of the sizes of
        the separator-free runs it holds, so long texts are measured by counting each distinct run
        once (see :class:`chunkwise.chunking.measure.RunTokenMeasure`).
        """
        ...

    @property
    def isolated(self) -> CodeRanges:
        """Code point ranges of characters that are always exactly one token, on their own.

        Counts add up on both sides of such a character as at a separator, and it counts one, so a
        run of them needs no tokenising at all: BERT's tokenizers set every Chinese character apart.
        Empty when the counter has no such characters (or no :attr:`separators`).
        """
        ...


class CharCounter:
    """Sizes in characters (Python ``str`` code points)."""

    name = "chars"

    def count(self, text: str) -> int:
        """Number of code points."""
        return len(text)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Number of code points of each text."""
        return [len(t) for t in texts]

    def token_spans(self, text: str) -> tuple[Offsets, Offsets]:
        """Every character is a token."""
        starts = np.arange(len(text), dtype=np.int64)
        return starts, starts + 1

    @property
    def separators(self) -> frozenset[str]:
        """Character counts add up everywhere; whitespace is listed for uniformity."""
        return WORD_SEPARATORS

    @property
    def isolated(self) -> CodeRanges:
        """None needed: a character is one character."""
        return ()


#: Whitespace that every word-splitting pre-tokenizer splits at and no normaliser removes: tab, line
#: feed, carriage return and the Unicode space separators (category Zs). Not the other control
#: characters Python calls whitespace (``\x0b``, ``\x1c``...): BERT's normaliser deletes them, which
#: joins the words around them.
WORD_SEPARATORS: frozenset[str] = frozenset(
    "\t\n\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)

#: Inclusive code point ranges.
CodeRanges = tuple[tuple[int, int], ...]

#: What a BERT normaliser with ``handle_chinese_chars`` surrounds with spaces, as the tokenizers
#: library defines it (the CJK unified ideograph blocks and extensions, compatibility ideographs):
#: each such character becomes a word of its own, and a one-character word is one token (itself or
#: ``[UNK]``). ``tests/chunking`` checks these bounds against the bundled tokenizer.
CHINESE_CHARACTERS: CodeRanges = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0x2F800, 0x2FA1F),
)

#: Pre-tokenizers that cut words at whitespace and tokenise each word on its own.
_WORD_SPLITTING = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
#: Normalisers that never join words across :data:`WORD_SEPARATORS`.
_WORD_KEEPING = frozenset({"NoneType", "BertNormalizer"})


class HFTokenCounter:
    """Sizes in tokens of a Hugging Face ``tokenizers`` tokenizer (no special tokens, no truncation)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        from tokenizers import Tokenizer

        file = Path(path)
        if file.is_dir():
            file = file / "tokenizer.json"
        if not file.is_file():
            raise ConfigError(f"{file}: tokenizer file not found")
        try:
            tokenizer: Any = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise ConfigError(f"{file}: not a tokenizers tokenizer.json ({exc})") from exc
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._name = name or f"hf:{file}"
        additive = (
            type(tokenizer.pre_tokenizer).__name__ in _WORD_SPLITTING
            and type(tokenizer.normalizer).__name__ in _WORD_KEEPING
        )
        self._separators = WORD_SEPARATORS if additive else frozenset()
        chinese = additive and bool(getattr(tokenizer.normalizer, "handle_chinese_chars", False))
        self._isolated = CHINESE_CHARACTERS if chinese else ()

    @property
    def name(self) -> str:
        """``minilm`` or ``hf:<path>``."""
        return self._name

    def count(self, text: str) -> int:
        """Number of tokens, special tokens excluded."""
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts, tokenised in one parallel batch."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        return [len(e) for e in encodings]

    def token_spans(self, text: str) -> tuple[Offsets, Offsets]:
        """Token character spans, tokenising blocks cut at whitespace in one batch."""
        bases = _block_starts(text)
        blocks = [text[a:b] for a, b in zip(bases, [*bases[1:], len(text)], strict=True)]
        encodings = self._tokenizer.encode_batch(blocks, add_special_tokens=False)
        parts = [
            np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) + base
            for e, base in zip(encodings, bases, strict=True)
        ]
        spans = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)
        return np.ascontiguousarray(spans[:, 0]), np.ascontiguousarray(spans[:, 1])

    @property
    def separators(self) -> frozenset[str]:
        """:data:`WORD_SEPARATORS` for word-splitting tokenizers (WordPiece), else none."""
        return self._separators

    @property
    def isolated(self) -> CodeRanges:
        """:data:`CHINESE_CHARACTERS` where a BERT normaliser sets them apart, else none."""
        return self._isolated


class TiktokenCounter:
    """Sizes in tokens of a tiktoken encoding: one tiktoken has loaded or cached, or can fetch now."""

    def __init__(self, encoding: str) -> None:
        try:
            import tiktoken.registry  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ConfigError(
                f"tiktoken:{encoding}: tiktoken is not installed (pip install tiktoken)"
            ) from exc
        local = tiktoken_local(encoding)
        try:
            self._encoding: Any = tiktoken.registry.get_encoding(encoding)
        except Exception as exc:
            lines = str(exc).strip().splitlines()
            why = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
            if encoding not in tiktoken.registry.list_encoding_names():
                problem = "tiktoken knows no such encoding"
            elif local:
                problem = "tiktoken could not load it"
            else:
                cache = tiktoken_cache_dir()
                where = f"tiktoken's cache ({cache})" if cache else "tiktoken's cache (caching is off)"
                problem = f"the encoding is not in {where} and could not be fetched"
            raise ConfigError(f"tiktoken:{encoding}: {problem} ({why})") from exc
        self._name = f"tiktoken:{encoding}"

    @property
    def name(self) -> str:
        """``tiktoken:<encoding>``."""
        return self._name

    def count(self, text: str) -> int:
        """Number of tokens (special-token text is counted as ordinary text)."""
        return len(self._encoding.encode_ordinary(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts."""
        return [len(ids) for ids in self._encoding.encode_ordinary_batch(list(texts))]

    def token_spans(self, text: str) -> tuple[Offsets, Offsets]:
        """Token character spans from tiktoken's decode offsets (a token ends where the next starts)."""
        tokens = self._encoding.encode_ordinary(text)
        _, starts = self._encoding.decode_with_offsets(tokens)
        start_arr = np.asarray(starts, dtype=np.int64)
        end_arr = np.append(start_arr[1:], len(text)).astype(np.int64)
        return start_arr, np.maximum(end_arr, start_arr)

    @property
    def separators(self) -> frozenset[str]:
        """None: byte-level BPE attaches spaces to words, so counts do not add up."""
        return frozenset()

    @property
    def isolated(self) -> CodeRanges:
        """None: byte-level BPE merges across characters."""
        return ()


def tiktoken_local(encoding: str) -> bool:
    """True when tiktoken can build ``encoding`` without the network: it is loaded already, or it is one
    of tiktoken's known encodings and every file its constructor names is in tiktoken's cache
    (:func:`tiktoken_cache_dir`), each file named by the SHA-1 of its URL. The URLs are the constants of
    the constructor (and of the constructors it calls); a constructor naming none, or tiktoken missing,
    is taken as not local. The server refuses a request's encoding that is not local (it would be
    downloaded); :class:`TiktokenCounter` uses it to say why an encoding could not be had."""
    try:
        import tiktoken.registry  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return False
    if encoding in tiktoken.registry.ENCODINGS:
        return True
    if encoding not in tiktoken.registry.list_encoding_names():
        return False
    constructors: dict[str, Callable[[], Any]] = tiktoken.registry.ENCODING_CONSTRUCTORS or {}
    urls = _urls_of(constructors[encoding], set())
    cache = tiktoken_cache_dir()
    return bool(urls and cache) and all(
        os.path.exists(os.path.join(cache, sha1(url.encode()).hexdigest())) for url in urls
    )


def _urls_of(fn: Callable[..., Any], seen: set[Callable[..., Any]]) -> set[str]:
    """The URL constants of function ``fn`` and of the functions of its module it calls by name."""
    seen.add(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return set()
    urls = {c for c in code.co_consts if isinstance(c, str) and "://" in c}
    for name in code.co_names:
        called = getattr(fn, "__globals__", {}).get(name)
        if callable(called) and getattr(called, "__module__", None) == fn.__module__ and called not in seen:
            urls |= _urls_of(called, seen)
    return urls


def tiktoken_cache_dir() -> str:
    """tiktoken's cache directory, found as ``tiktoken.load.read_file_cached`` finds it:
    ``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else ``data-gym-cache`` in the temporary
    directory. Empty when caching is off (the variable that decides is set but empty)."""
    default = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR", default))


def _block_starts(text: str) -> list[int]:
    """Start offsets of blocks of about :data:`BLOCK_CHARS`, each starting at whitespace.

    Blocks never cut a word (a block runs on to the next whitespace), so a word's tokens are the same in
    a block as in the whole text.
    """
    starts = [0]
    while len(text) - starts[-1] > BLOCK_CHARS:
        space = _SPACE.search(text, starts[-1] + BLOCK_CHARS)
        if space is None:
            break
        starts.append(space.start())
    return starts


def check_unit(name: str) -> None:
    """Raise :class:`ConfigError` unless ``name`` is a size unit :func:`get_counter` knows, without
    loading it, so that a configuration with a misspelt unit fails when it is read, not at every
    document's chunking."""
    prefix, colon, rest = name.partition(":")
    if name in COUNTER_NAMES or (colon and prefix in ("hf", "tiktoken") and rest.strip()):
        return
    raise ConfigError(
        f"unknown size unit {name!r}: use one of {', '.join(COUNTER_NAMES)}, hf:<path>, tiktoken:<enc>"
    )


@functools.lru_cache(maxsize=16)
def get_counter(name: str = "chars") -> TokenCounter:
    """The counter called ``name`` (see the module docstring); loaded once per process."""
    check_unit(name)
    if name == "chars":
        return CharCounter()
    if name in ("tokens", "minilm"):
        from chunkwise.models.bundled import minilm_dir

        return HFTokenCounter(minilm_dir() / "tokenizer.json", name=name)
    if name.startswith("hf:"):
        return HFTokenCounter(name[3:], name=name)
    return TiktokenCounter(name[len("tiktoken:") :])
