"""What a knowledge-base store is: the protocol every backend implements, and the rows it returns.

A store keeps documents (text and units), their chunks with headers, one vector per chunk, and a lexical
index over header + text; it answers BM25 and dense queries with chunk keys and hands back the chunks.
The ingest and query pipelines depend on this protocol only, so a knowledge base runs unchanged on any
implementation: :class:`~chunkwise.store.sqlite.SQLiteStore` (one directory, the default) or a server
store. Every implementation keeps one rule: a document is stored whole (its chunks, headers, vectors and
postings in one transaction) or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from chunkwise.chunking.chunk import Chunk, contextual_text
from chunkwise.document import Document
from chunkwise.errors import ConfigError, CorruptStoreError, StoreError
from chunkwise.models.protocols import Vectors
from chunkwise.spans import Span

#: What :meth:`Store.put` committed.
Status = Literal["added", "replaced", "skipped"]


@dataclass(frozen=True, slots=True)
class StoredChunk(Span):
    """A chunk as the store holds it: ``key`` is the store's row key, ``chunk_id`` the deterministic id,
    ``header`` its contextual header (never part of ``text``), ``ordinal`` its position in its document,
    ``vector`` its embedding when the store loaded it."""

    key: int
    chunk_id: str
    text: str
    header: str = ""
    ordinal: int = 0
    vector: Vectors | None = field(default=None, compare=False, repr=False)

    @property
    def contextual_text(self) -> str:
        """Header and text as the ranking models read them."""
        return contextual_text(self.header, self.text)


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """A stored document's identity and size (no text)."""

    doc_id: str
    source: str | None
    title: str | None
    format: str
    content_hash: str
    chunks: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "format": self.format,
            "content_hash": self.content_hash,
            "chunks": self.chunks,
        }


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Index settings a store applies: stores of at least ``hnsw_threshold`` chunks (PostgreSQL: vectors,
    chunks and passage windows) search vectors approximately (HNSW), of at least ``bm25s_threshold``
    chunks answer BM25 from an index in memory (SQLite: the bm25s sidecar; PostgreSQL: its postings,
    ranked as its SQL ranks them). A server store
    keeps up to ``pool_size`` connections and builds its HNSW index with ``hnsw_m`` links per node and
    ``hnsw_ef_construction`` candidates, searching ``hnsw_ef_search``."""

    hnsw_threshold: int = 50_000
    bm25s_threshold: int | None = 20_000
    pool_size: int = 4
    hnsw_m: int = 16
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 100


def check_recorded_embedder(
    location: str, recorded: tuple[str, str, str], given: tuple[str, int, str], fresh: str
) -> None:
    """:class:`ConfigError` unless the ``given`` embedder (name, dimension, version) built the vectors of
    the store at ``location``, which recorded ``recorded`` (name, dimension and version as stored; the
    version ``""`` in stores written before versions were recorded, which are checked by name and
    dimension). ``fresh`` names where another embedder's knowledge base would go (a directory, a schema).
    """
    if not same_embedder(recorded, given):
        built, wanted = embedder_label(*recorded), embedder_label(*given)
        raise ConfigError(
            f"{location}: built with embedder {built}, not {wanted}; its vectors cannot be compared: "
            f"search with the same embedder, re-embed it in place with `chunkwise kb reembed`, "
            f"or ingest into a new {fresh}"
        )


@dataclass(frozen=True, slots=True)
class StoredForEmbedding:
    """What a document's vectors are made from, as the store holds it (for
    :meth:`Store.reembedding`): the document, its chunks by ordinal, their headers (each chunk's own
    context included), and its ingest fingerprint."""

    doc: Document
    chunks: list[Chunk]
    headers: list[str]
    fingerprint: str


@dataclass(frozen=True, slots=True)
class StoredDocument(StoredForEmbedding):
    """Everything a store holds of a document (:meth:`Store.stored_document`), as :meth:`Store.put` takes
    it: what :class:`StoredForEmbedding` holds, its summary, one vector a chunk by ordinal, and its
    passage windows' vectors in the order they were stored with the index of each window's chunk
    (``None``: no windows). A copy into another store writes it as it is, calling no model."""

    summary: str
    vectors: Vectors
    windows: tuple[Sequence[int], Vectors] | None


def with_vectors(
    location: str,
    stored: StoredForEmbedding,
    *,
    summary: str,
    vectors: Sequence[tuple[int, Any]],
    windows: Sequence[tuple[int, Any]],
    matrix: Callable[[Sequence[tuple[int, Any]]], Vectors],
) -> StoredDocument:
    """The :class:`StoredDocument` of ``stored``, as both stores read it: ``vectors`` are ``(chunk_key,
    vector)`` rows of its chunks by ordinal (the vector ``None`` for a chunk without one), ``windows``
    ``(chunk_key, vector)`` rows of its passage windows in order, and ``matrix`` turns such rows into a
    matrix of their vectors. :class:`~chunkwise.errors.CorruptStoreError` naming the document when a
    chunk has no vector: put back without it, the document would not be whole."""
    missing = sum(vector is None for _, vector in vectors)
    if missing:
        raise CorruptStoreError(
            location,
            f"{stored.doc.id}: {missing} of its {len(stored.chunks)} chunks have no "
            "vector; `chunkwise kb check` lists the damage and `chunkwise kb repair` mends it",
        )
    ordinal = {key: index for index, (key, _) in enumerate(vectors)}
    owners = [ordinal[key] for key, _ in windows]
    return StoredDocument(
        stored.doc,
        stored.chunks,
        stored.headers,
        stored.fingerprint,
        summary,
        matrix(vectors),
        (owners, matrix(windows)) if windows else None,
    )


@dataclass(frozen=True, slots=True)
class Reembedded:
    """A document's new vectors (for :meth:`Reembedding.write`): one a chunk, its passage windows' vectors
    with the index of each window's chunk (``None``: no windows), and the fingerprint to record."""

    vectors: Vectors
    windows: tuple[Sequence[int], Vectors] | None
    fingerprint: str


class Reembedding(Protocol):
    """An open re-embedding transaction (:meth:`Store.reembedding`). ``previous`` (the name of the
    embedder the store records, ``None`` when it records none) and ``total`` (the documents it holds)
    are read inside it as it opens: writers wait for the transaction, so neither changes before it
    ends, as they could if read before it began."""

    previous: str | None
    total: int

    def documents(self) -> Iterator[StoredForEmbedding]:
        """Each stored document, read inside the transaction one at a time (by id), so that memory
        follows the documents the caller holds, not the store."""
        ...

    def write(self, doc_id: str, new: Reembedded) -> None:
        """Replace the vectors of ``doc_id`` (one a chunk by ordinal, and its passage windows') and its
        fingerprint, inside the transaction.

        Raises:
            ConfigError: the vectors are not of the new embedder's dimension.
        """
        ...


def chunk_from_row(doc_id: str, row: Sequence[Any]) -> Chunk:
    """The :class:`~chunkwise.chunking.chunk.Chunk` of a stored row ``(chunk_id, start, end, text,
    section, unit_ids, tokens, pages)``, its tuples stored as JSON (``pages`` may be null), as both stores
    keep their chunks."""
    chunk_id, start, end, text, section, unit_ids, tokens, pages = row
    return Chunk(
        doc_id,
        start,
        end,
        id=chunk_id,
        text=text,
        section=tuple(json.loads(section)),
        unit_ids=tuple(json.loads(unit_ids)),
        tokens=tokens,
        pages=tuple(json.loads(pages)) if pages else None,
    )


def check_all_reembedded(location: str, stored: int, written: int) -> None:
    """:class:`~chunkwise.errors.StoreError` when a re-embedding is about to commit with ``written`` of the
    ``stored`` documents given new vectors: the others would keep the old embedder's vectors under the
    new one's record, which no search could compare."""
    if written != stored:
        raise StoreError(
            location,
            f"{stored - written} of {stored} documents were not given new vectors; the re-embedding is "
            "rolled back",
        )


#: The query of the recorded embedder's ``meta`` rows (both stores name the table ``meta``; PostgreSQL
#: qualifies it with its schema: ``{meta}``).
EMBEDDER_META = "SELECT key, value FROM {meta} WHERE key IN ('embedder', 'dim', 'embedder_version')"


def recorded_embedder(rows: Iterable[tuple[str, str]]) -> tuple[str, str, str] | None:
    """The recorded embedder's name, dimension and version (``""`` when not recorded) from the ``meta``
    rows :data:`EMBEDDER_META` reads; ``None`` when no embedder is recorded."""
    meta = dict(rows)
    if "embedder" not in meta:
        return None
    return meta["embedder"], meta.get("dim", "?"), meta.get("embedder_version", "")


def same_embedder(recorded: tuple[str, str, str], given: tuple[str, int, str]) -> bool:
    """Whether the ``recorded`` embedder (name, dimension and version as a store keeps them; the version
    ``""`` in stores written before versions were recorded, which match by name and dimension) is the
    ``given`` one (name, dimension, version)."""
    stored, stored_dim, stored_version = recorded
    name, dim, version = given
    return stored == name and stored_dim == str(dim) and (not stored_version or stored_version == version)


def embedder_label(name: str, dim: int | str, version: str) -> str:
    """An embedder as messages name it: ``'local:x' (384-d, pkg==1.0)``."""
    return f"{name!r} ({dim}-d{', ' + version if version else ''})"


def check_put_embedder(
    location: str, doc_id: str, recorded: tuple[str, str, str] | None, given: tuple[str, int, str] | None
) -> None:
    """:class:`ConfigError` when the embedder that made a document's vectors (``given``) is not the one
    the store records now (``recorded``), read inside the transaction that would store the document: the
    knowledge base was re-embedded (``kb reembed``) after the ingest checked its embedder, and its vectors
    would sit among the new embedder's, where no search can compare them. ``None`` on either side (a
    store without an embedder yet, a caller that does not say) checks nothing."""
    if recorded is None or given is None or same_embedder(recorded, given):
        return
    raise ConfigError(
        f"{location}: {doc_id} was not stored: the knowledge base was re-embedded with "
        f"{embedder_label(*recorded)} while this ingest embedded with {embedder_label(*given)}; "
        "ingest it again"
    )


def check_put_widths(
    location: str, doc_id: str, dim: int, embedder: str, *, vectors: Vectors, windows: Vectors | None
) -> None:
    """:class:`ConfigError` naming the document when the vectors ``put`` was given for it, or its passage
    windows' vectors, are not of the store's recorded dimension ``dim`` (another embedder's): checked
    before anything is written, so that a store never holds vectors of two sizes, which no search could
    compare."""
    for what, given in (("vectors", vectors), ("passage windows' vectors", windows)):
        if given is not None and len(given) and (given.ndim != 2 or given.shape[1] != dim):
            raise ConfigError(
                f"{location}: {doc_id}: its {what} have {given.shape[-1]} dimensions, the stored vectors "
                f"{dim}; ingest with the embedder that built the store ({embedder})"
            )


def substring_bounds(start: int, end: int) -> tuple[int, int]:
    """SQL ``substr``'s 1-based start and length for ``text[start:end]``, with offsets as stores keep
    them: ``ValueError`` for a negative one (Python would count it from the end, SQLite's ``substr``
    differently again, PostgreSQL's not at all), and an empty slice when ``end`` is before ``start``, as
    Python has it (SQLite would return the characters before ``start``)."""
    if start < 0 or end < 0:
        raise ValueError(f"offsets are not negative: got [{start}, {end})")
    return start + 1, max(end - start, 0)


class Store(Protocol):
    """A knowledge-base store (see the module docstring). ``settings`` may be replaced after opening
    (a knowledge base applies the index settings of its recorded configuration)."""

    settings: StoreSettings

    @property
    def keeps_windows(self) -> bool:
        """Whether the store keeps passage windows' vectors (:mod:`chunkwise.ingest.windows`); an ingest
        into one that does not embeds one vector a chunk."""
        ...

    @property
    def location(self) -> str:
        """Where the store lives (a directory or a URL without its password), for messages."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...

    def meta(self, key: str) -> str | None:
        """A stored setting (the configuration, the embedder), ``None`` when unset."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        ...

    def check_embedder(self, name: str, dim: int, version: str = "", *, record: bool = True) -> None:
        """:class:`~chunkwise.errors.ConfigError` if another embedder (name, dimension, or ``version``:
        the release of the package that ships its weights, where the store recorded one) built the stored
        vectors. A store without vectors records this embedder when ``record`` (ingest); with
        ``record=False`` (before a dense search) it only checks, and never writes."""
        ...

    def state(self, doc_id: str) -> tuple[str, str] | None:
        """``(content_hash, fingerprint)`` of a stored document, ``None`` if absent."""
        ...

    def document_spans(self, doc_id: str) -> tuple[Document, list[tuple[int, int]]]:
        """The stored document and :meth:`chunk_spans`, read in one snapshot, so that a writer replacing
        it meanwhile cannot give it the text of one version and the chunk spans of another: what
        ``GET /v1/documents/{id}`` shows. ``KeyError`` if absent."""
        ...

    def stored_document(self, doc_id: str) -> StoredDocument:
        """Everything stored of ``doc_id`` (its document, chunks, headers, fingerprint, summary, vectors
        and passage windows' vectors), read in one snapshot, so that a writer committing meanwhile
        cannot give it the chunks of one version and the vectors of another: what :meth:`put` takes to
        store it elsewhere (``kb copy``). ``KeyError`` if absent.

        Raises:
            CorruptStoreError: a chunk of it has no vector, or one of another size than the recorded.
        """
        ...

    def reembedding(
        self, embedder: tuple[str, int, str], meta: Mapping[str, str] | None = None
    ) -> AbstractContextManager[Reembedding]:
        """ONE transaction that replaces every stored vector (chunks and passage windows): inside it the
        caller reads each document (:meth:`Reembedding.documents`) and writes its new vectors
        (:meth:`Reembedding.write`); when the block ends without an error, ``embedder`` (name, dimension,
        version: another dimension than the old is taken) and the settings ``meta`` (as
        :meth:`set_meta`) are recorded and it all commits. An error anywhere (Ctrl-C included) rolls all
        of it back: the store is as it was. Readers see the old store until it commits; other writers
        wait for it. Every document must be written before the block ends.

        Raises:
            StoreError: the store is read-only or cannot be written.
        """
        ...

    def put(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        headers: Sequence[str],
        vectors: Vectors,
        *,
        fingerprint: str,
        summary: str = "",
        windows: tuple[Sequence[int], Vectors] | None = None,
        embedder: tuple[str, int, str] | None = None,
    ) -> Status:
        """Store ``doc`` with one header and one vector per chunk, replacing an earlier version, in one
        transaction. ``windows``: the passage windows' vectors (:mod:`chunkwise.ingest.windows`), each
        with the index of its chunk in ``chunks``. ``embedder``: the one that made the vectors (name,
        dimension, version), checked against the recorded one inside the transaction
        (:func:`check_put_embedder`). Returns what was committed: ``added``, ``replaced``,
        or ``skipped`` when the same content and fingerprint were already stored (by another writer
        since the caller looked)."""
        ...

    def delete(self, doc_id: str) -> bool:
        """Remove a document and everything derived from it; False if it was not stored."""
        ...

    def documents(self) -> list[DocumentInfo]:
        """Every stored document, by id."""
        ...

    def document(self, doc_id: str) -> Document:
        """The stored document, units included; ``KeyError`` if absent."""
        ...

    def summary(self, doc_id: str) -> str:
        """The document summary stored with it (empty when none)."""
        ...

    def counts(self) -> dict[str, int]:
        """Numbers of documents, chunks and vectors."""
        ...

    def check(self) -> list[str]:
        """Every consistency problem, empty when none: the database's own integrity, orphaned rows, each
        stored chunk's offsets against its document's text (the exact-provenance rule), a header and a
        vector per chunk, the lexical index's rows, and the sidecar indexes against the current store
        generation. It only reads."""
        ...

    def repair(self) -> list[str]:
        """Rebuild the derived indexes (the lexical index and its statistics, the vector and sidecar
        indexes) from the stored rows, and say what was done, one line each. A document that cannot be
        kept whole and exact is removed, never silently: it is named in the result with the reason, so
        that ingesting its file again restores it."""
        ...

    def bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys by Okapi BM25 over header + text, positive scores, best first."""
        ...

    def dense(self, vector: Vectors, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest chunk keys by cosine to ``vector``, best first.

        Raises:
            ConfigError: ``vector`` does not have the stored vectors' dimension (another embedder).
        """
        ...

    def dense_method(self) -> str:
        """How :meth:`dense` searches at the store's current size (``exact``, ``hnsw``)."""
        ...

    def window_scores(self, vector: Vectors, keys: Sequence[int]) -> dict[int, float]:
        """The best cosine to ``vector`` among the passage windows (:mod:`chunkwise.ingest.windows`) of
        each of ``keys`` that has any: what :meth:`dense` would score such a chunk by, for a candidate
        that BM25 found and dense search did not."""
        ...

    def chunks(self, keys: Sequence[int]) -> list[StoredChunk]:
        """The chunks of ``keys`` with their vectors, in the given order (missing keys skipped)."""
        ...

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each chunk of ``doc_id``, by ordinal."""
        ...

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        """``document.text[start:end]``; ``KeyError`` if the document is absent, ``ValueError`` for a
        negative offset (:func:`substring_bounds`)."""
        ...
