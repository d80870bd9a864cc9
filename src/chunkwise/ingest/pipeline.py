"""The ingest pipeline: files or documents -> parse -> chunk -> contextual headers -> embed -> store.

Documents are prepared one at a time (parsed, chunked, given headers) and embedded in calls of at most
``retrieval.embed_batch`` chunks, a long document over several calls (with progress events between
them); each document is stored in its own transaction as soon as its chunks are embedded, so a crash
leaves every document whole or absent and memory follows one document, not the whole batch. A file that
cannot be parsed or chunked (a parser's or chunker's bug included) is reported and the batch goes on, as
is one with a string that is not valid Unicode text (a lone surrogate in its title, source or metadata,
or in a header made for it) or that holds a NUL character (:class:`~chunkwise.errors.NulCharacterError`:
PostgreSQL cannot store it, so no store is given one and every store holds the same documents). A
document whose content and ingest settings (:meth:`PipelineConfig.ingest_fingerprint`) and stored
fields (title, metadata, units: see :meth:`IngestPipeline.unchanged`) match the stored version is
skipped.

Every model call (chunkers, headers, the embedder) goes through the run's
:class:`~chunkwise.models.Models`, so its ledger holds them all and its budget (``models.max_cost``,
``models.max_tokens``) bounds them all, embedding included: a call that would cross it is not made, and
the batch stops there. The one exception is the embedding of the documents already prepared when that
happens: their LLM calls (chunking, titles, summaries) were made and paid for, so they are embedded
(:func:`~chunkwise.models.accounting.unbudgeted`: recorded, counted, not refused) and stored before the
batch stops with the budget's error. That embedding is of fewer than ``retrieval.embed_batch`` texts
(pending documents are embedded once they reach it), so the budget is overrun by at most that much, and
only where embedding has a price (a local embedder's costs nothing; its tokens count against
``max_tokens``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import islice
from pathlib import Path

import numpy as np

from chunkwise.chunking import Chunker, get_chunker
from chunkwise.chunking.chunk import Chunk, contextual_text
from chunkwise.chunking.limits import chunk_within
from chunkwise.chunking.tokens import get_counter
from chunkwise.config import PipelineConfig
from chunkwise.document import Document, lone_surrogate, path_id
from chunkwise.errors import (
    BudgetExceededError,
    ChunkwiseError,
    ModelCallError,
    ModelError,
    NotUnicodeError,
    NulCharacterError,
    failure_reason,
)
from chunkwise.ingest.headers import ContextualHeaders
from chunkwise.ingest.inputs import byte_files, document_list
from chunkwise.ingest.paths import Paths, expand_paths
from chunkwise.ingest.report import IngestEvent, IngestReport, ProgressFn, Status
from chunkwise.ingest.windows import window_spans
from chunkwise.models.accounting import unbudgeted
from chunkwise.models.context import Models
from chunkwise.models.protocols import Embedder, Vectors, embedder_version
from chunkwise.parsing.limits import ParseLimits
from chunkwise.store.dense import unit_means
from chunkwise.store.protocol import Store

#: HTTP statuses by which a remote model refuses a request for what it holds (too long, malformed).
REFUSED_INPUT = frozenset({400, 413, 422})


@dataclass(frozen=True, slots=True)
class Failure:
    """An input that could not become a document: its name and the reason."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class Prepared:
    """A document ready to embed: its chunks, one header per chunk, its summary, and the passage windows
    of its long chunks (:mod:`.windows`): what each window's embedding reads, and its chunk's index.

    Its rows are its chunks, then its windows; ``pooled`` chunks (those with windows, when
    ``retrieval.embed_whole`` is false) are not embedded: their vector is the mean of their windows'."""

    doc: Document
    chunks: list[Chunk]
    headers: list[str]
    summary: str
    windows: list[str] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)
    pooled: frozenset[int] = frozenset()

    @property
    def embedded_count(self) -> int:
        """How many rows the embedder reads (the length of :attr:`embedded`)."""
        return len(self.chunks) - len(self.pooled) + len(self.windows)

    @property
    def embedded(self) -> list[int]:
        """The rows the embedder reads, in order: each chunk but the pooled ones, then each window."""
        chunks = [row for row in range(len(self.chunks)) if row not in self.pooled]
        return chunks + list(range(len(self.chunks), len(self.chunks) + len(self.windows)))

    def chunks_embedded(self, rows_done: int) -> int:
        """How many chunks are embedded once the first ``rows_done`` rows of :attr:`embedded` are: those
        whose every row is among them. A chunk with windows is done with its last window, so a document
        whose chunks are pooled, or embedded whole before their windows, is not reported done before
        its windows are."""
        whole = [row for row in range(len(self.chunks)) if row not in self.pooled]
        last = np.full(len(self.chunks), -1, dtype=np.intp)
        last[whole] = np.arange(len(whole), dtype=np.intp)
        if self.windows:
            np.maximum.at(last, self.owners, np.arange(len(self.windows), dtype=np.intp) + len(whole))
        return int(np.count_nonzero(last < rows_done))

    def text(self, row: int) -> str:
        """What the embedder reads for ``row`` (a chunk's header + text, or a window's)."""
        if row < len(self.chunks):
            return contextual_text(self.headers[row], self.chunks[row].text)
        return self.windows[row - len(self.chunks)]

    def vectors(self, embedded: Vectors) -> Vectors:
        """Every row's vector from those of :attr:`embedded` (in its order): a pooled chunk's is the
        mean of its windows' vectors, scaled to unit length as the embedder's are."""
        count = len(self.chunks)
        rows = np.zeros((count + len(self.windows), embedded.shape[1]), dtype=np.float32)
        rows[self.embedded] = embedded
        if self.pooled:
            pooled = np.fromiter(self.pooled, dtype=np.intp, count=len(self.pooled))
            rows[pooled] = unit_means(rows[count:], self.owners, count)[pooled]
        return rows

    def split(self, vectors: Vectors) -> tuple[Vectors, tuple[list[int], Vectors] | None]:
        """Every row's ``vectors`` (:meth:`vectors`) as a store takes them: one a chunk, then the passage
        windows' with the index of each one's chunk (``None`` when there are no windows)."""
        count = len(self.chunks)
        return vectors[:count], (self.owners, vectors[count:]) if self.windows else None


#: Where an embedded document goes: given it and every row's vectors (:meth:`Prepared.vectors`), it
#: stores them and says what was committed.
Sink = Callable[[Prepared, Vectors], Status]


class IngestPipeline:
    """Ingest into ``store`` as ``config`` says, with the models of ``models`` (see the module docstring)."""

    def __init__(self, store: Store, models: Models, config: PipelineConfig) -> None:
        self.store = store
        self.models = models
        self.config = config

    @cached_property
    def chunker(self) -> Chunker:
        """The configured chunker, taking its models (if any) from the run's context."""
        cfg = self.config.chunking
        return get_chunker(cfg.name, models=self.models, **cfg.params)

    @cached_property
    def headers(self) -> ContextualHeaders | None:
        """The contextual-header builder, ``None`` when headers are off."""
        cfg = self.config.headers
        if not cfg.enabled:
            return None
        llm = self.models.llm() if cfg.llm else None
        return ContextualHeaders(llm, title=cfg.title, summary=cfg.summary, section=cfg.section)

    def add_files(self, paths: Paths, on_progress: ProgressFn | None = None) -> IngestReport:
        """Parse and ingest files (directories are searched for supported files). ``paths``: a sequence
        of files and directories, or one of them alone (a string is one path, never a sequence of
        one-character paths).

        Raises:
            TypeError: ``paths`` is ``bytes`` (file contents go to :meth:`add_bytes`) or holds something
                other than paths.
        """
        files = expand_paths(paths)
        limits = self.config.limits.parse_limits()
        return self.run((parse_one(file, limits) for file in files), len(files), on_progress)

    def add_bytes(
        self, files: Sequence[tuple[str, bytes]], on_progress: ProgressFn | None = None
    ) -> IngestReport:
        """Parse and ingest in-memory files, each a ``(name, content)`` pair: the name is the document
        id and, by its extension, the format hint (files uploaded to a server come this way).

        Raises:
            TypeError: ``files`` is not a sequence of ``(str, bytes)`` pairs.
        """
        pairs = byte_files(files)
        return self.run(_parsed_bytes(pairs, self.config.limits.parse_limits()), len(pairs), on_progress)

    def add_documents(self, docs: Sequence[Document], on_progress: ProgressFn | None = None) -> IngestReport:
        """Ingest already-parsed documents (evaluation data sets come this way).

        Raises:
            TypeError: ``docs`` is not a sequence of documents.
        """
        documents = document_list(docs)
        return self.run(iter(documents), len(documents), on_progress)

    def run(
        self, items: Iterable[Document | Failure], total: int, on_progress: ProgressFn | None = None
    ) -> IngestReport:
        """Ingest ``items`` (``total`` of them, for progress), one transaction per document."""
        fingerprint = self.begin()
        sink = partial(self.store_prepared, fingerprint=fingerprint)
        batch = _Batch(self, total, on_progress, self.models.embedder(), sink)
        began = time.perf_counter()
        digests: dict[str, str] = {}  # the ids of the batch's documents, with their stored digests
        try:
            for item in items:
                if isinstance(item, Failure):
                    batch.fail(item.source, item.reason)
                elif invalid := unstorable_text(item):
                    batch.fail(shown_id(item.id), invalid)
                elif item.id in digests:  # the same document again is skipped, another refused
                    if digests[item.id] == item.stored_digest():
                        batch.done(item.id, "skipped")
                    else:
                        batch.fail(shown_id(item.id), SHARED_ID)
                else:
                    digests[item.id] = item.stored_digest()
                    if self.unchanged(item, fingerprint):
                        batch.done(item.id, "skipped")
                    else:
                        batch.prepare(item)
            batch.flush()
        finally:
            batch.report.seconds = time.perf_counter() - began
        return batch.report

    def embed_prepared(
        self,
        items: Iterable[Prepared],
        total: int,
        embedder: Embedder,
        sink: Sink,
        on_progress: ProgressFn | None = None,
        *,
        on_failure: Callable[[str, str], None] | None = None,
    ) -> IngestReport:
        """Embed documents already prepared (``total`` of them, for progress) with ``embedder`` exactly as
        an ingest embeds what it prepares, in the same calls of the same texts, and hand each one with
        its vectors to ``sink`` as soon as they are complete (a re-embedding of stored documents comes
        this way, :mod:`.reembed`). A document whose texts the embedder refuses is in ``failed``, and
        ``on_failure`` is called with its name and the reason at once (it may raise to stop the run)."""
        batch = _Batch(self, total, on_progress, embedder, sink, on_failure=on_failure)
        began = time.perf_counter()
        try:
            for item in items:
                batch.add(item)
            batch.flush()
        finally:
            batch.report.seconds = time.perf_counter() - began
        return batch.report

    def begin(self) -> str:
        """Load the embedder, record it (name, dimension, version) in the store, refusing another one,
        and return the ingest fingerprint of this run's configuration with it."""
        embedder = self.models.embedder()
        self.store.check_embedder(embedder.name, embedder.dim, embedder_version(embedder))
        return self.fingerprint(embedder.name)

    def fingerprint(self, embedder: str) -> str:
        """The ingest fingerprint of this configuration with the embedder named ``embedder``, for this
        store (one that keeps no passage windows stores one vector a chunk, windows or not)."""
        config = self.config
        if not self.store.keeps_windows:  # what is stored: one vector a chunk
            config = dataclasses.replace(config, retrieval=dataclasses.replace(config.retrieval, windows=0))
        return config.ingest_fingerprint(embedder)

    def unchanged(self, doc: Document, fingerprint: str) -> bool:
        """True when the store holds ``doc`` with the same content and ingest fingerprint, and the same
        title, source, format, metadata and units (:meth:`Document.stored_alike`): these go into the
        chunk headers, so a document whose text is the same but whose title changed is ingested again.
        They are compared with what the store holds, not with a hash of them recorded beside it, so
        stores written before are not ingested again for nothing."""
        if self.store.state(doc.id) != (doc.content_hash, fingerprint):
            return False
        try:
            return self.store.document(doc.id).stored_alike(doc)
        except KeyError:  # deleted meanwhile
            return False

    def store_prepared(self, item: Prepared, vectors: Vectors, fingerprint: str) -> Status:
        """Store a prepared document with its vectors (one a chunk, then one a window) in one transaction;
        what was committed."""
        chunk_vectors, windows = item.split(vectors)
        embedder = self.models.embedder()
        return self.store.put(
            item.doc,
            item.chunks,
            item.headers,
            chunk_vectors,
            fingerprint=fingerprint,
            summary=item.summary,
            windows=windows,
            embedder=(embedder.name, embedder.dim, embedder_version(embedder)),
        )

    def prepare(self, doc: Document) -> Prepared:
        """Chunk ``doc`` and build each chunk's header (the chunk's own context, such as a table's header
        row, comes after the document header); :class:`NotUnicodeError` when a string made for it (by
        its chunker, or by the LLM that titles it) is not valid Unicode text, :class:`NulCharacterError`
        when one holds a NUL character."""
        chunks = chunk_within(self.chunker, doc, self.config.limits.max_chunks)
        context = self.headers.document_context(doc) if self.headers else None
        headers = []
        for chunk in chunks:
            header = self.headers.header(chunk, context) if self.headers and context else ""
            headers.append("\n".join(part for part in (header, chunk.context) if part))
        summary = context.summary if context else ""
        made = [("summary", summary)] + [(f"header of chunk {i}", h) for i, h in enumerate(headers)]
        made += [(f"id of chunk {i}", c.id) for i, c in enumerate(chunks)]
        made += [(f"section of chunk {i}", s) for i, c in enumerate(chunks) for s in c.section]
        if invalid := _first_lone_surrogate(made):
            raise NotUnicodeError(doc.id, invalid)
        if invalid := _first_nul(made):
            raise NulCharacterError(doc.id, invalid)
        return self.assemble(doc, chunks, headers, summary)

    def assemble(self, doc: Document, chunks: list[Chunk], headers: list[str], summary: str) -> Prepared:
        """``doc`` ready to embed from its chunks and their headers: its passage windows, and which chunks
        are pooled from them. What the embedder reads follows from these alone, so an ingest and a
        re-embedding of the stored chunks (:mod:`.reembed`) read the same texts."""
        windows, owners = self.windows(chunks, headers)
        pooled = frozenset() if self.config.retrieval.embed_whole else frozenset(owners)
        return Prepared(doc, chunks, headers, summary, windows, owners, pooled)

    def windows(self, chunks: Sequence[Chunk], headers: Sequence[str]) -> tuple[list[str], list[int]]:
        """The passage windows of ``chunks`` (none unless ``retrieval.windows`` is set): what each
        window's embedding reads (the chunk's header, then the window), and the index of its chunk."""
        size = self.config.retrieval.windows if self.store.keeps_windows else 0
        if not size:
            return [], []
        counter = get_counter("minilm")
        texts, owners = [], []
        for index, (chunk, header) in enumerate(zip(chunks, headers, strict=True)):
            for start, end in window_spans(
                chunk.text, size, counter, overlap=self.config.retrieval.window_overlap
            ):
                texts.append(contextual_text(header, chunk.text[start:end]))
                owners.append(index)
        return texts, owners


class _Batch:
    """The documents prepared but not yet stored, and the counts and report of the run."""

    def __init__(
        self,
        pipeline: IngestPipeline,
        total: int,
        on_progress: ProgressFn | None,
        embedder: Embedder,
        sink: Sink,
        *,
        on_failure: Callable[[str, str], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.embedder = embedder
        self.sink = sink
        self.on_failure = on_failure
        self.total = total
        self.on_progress = on_progress
        self.report = IngestReport()
        self.count = 0
        self.pending: list[Prepared] = []

    def notify(self, source: str, status: Status, chunks: int = 0) -> None:
        self.count += 1
        if self.on_progress is not None:
            self.on_progress(IngestEvent(source, status, self.count, self.total, chunks))

    def done(self, doc_id: str, status: Status, chunks: int = 0) -> None:
        self.report.record(doc_id, status, chunks)
        self.notify(doc_id, status, chunks)

    def fail(self, source: str, reason: str) -> None:
        self.report.failed.append((source, reason))
        self.notify(source, "failed")
        if self.on_failure is not None:
            self.on_failure(source, reason)

    def prepare(self, doc: Document) -> None:
        """Prepare ``doc``; embed and store the batch once it holds enough chunks."""
        try:
            item = self.pipeline.prepare(doc)
        except BudgetExceededError:
            with unbudgeted():  # keep the documents already prepared, then stop the whole batch
                self.flush()
            raise
        except ChunkwiseError as exc:
            self.fail(doc.source or doc.id, failure_reason(exc))
            return
        except Exception as exc:  # a chunker bug (a plugin's, say) must not end the batch either
            self.fail(doc.source or doc.id, unexpected(exc))
            return
        self.add(item)

    def add(self, item: Prepared) -> None:
        """Add a prepared document; embed and store the batch once it holds enough chunks."""
        self.pending.append(item)
        if sum(p.embedded_count for p in self.pending) >= self.pipeline.config.retrieval.embed_batch:
            self.flush()

    def flush(self) -> None:
        """Embed the pending chunks in calls of at most ``embed_batch`` texts and store each pending
        document, in its own transaction, as soon as all its chunks are embedded; a document whose text
        the embedder refuses (see :meth:`embed`) fails alone.

        Only one call's texts exist at a time; besides them, the pending documents' vectors (for a long
        document, its own alone) are all that is held, so memory follows one document, not the batch."""
        pending, self.pending = self.pending, []
        size = max(1, self.pipeline.config.retrieval.embed_batch)
        rows = [p.embedded for p in pending]
        vectors = [np.empty((len(r), self.embedder.dim), dtype=np.float32) for r in rows]
        positions = ((i, n) for i, item_rows in enumerate(rows) for n in range(len(item_rows)))
        refused: dict[int, str] = {}
        stored = 0
        while part := list(islice(positions, size)):
            self.embed(pending, rows, part, vectors, refused)
            last, n = part[-1]
            whole = last + 1 if n + 1 == len(rows[last]) else last
            for index in range(stored, whole):
                if index in refused:
                    self.fail(pending[index].doc.source or pending[index].doc.id, refused[index])
                else:
                    self.store(pending[index], vectors[index])
            stored = max(stored, whole)
            if whole == last:  # the call ended inside a long document
                self.embedding(pending[last], pending[last].chunks_embedded(n + 1))
        for index in range(stored, len(pending)):  # documents without chunks left after the last call
            self.store(pending[index], vectors[index])

    def embed(
        self,
        pending: list[Prepared],
        rows: list[list[int]],
        part: list[tuple[int, int]],
        vectors: list[Vectors],
        refused: dict[int, str],
    ) -> None:
        """Embed the rows of ``part`` (``(i, n)``: the ``n``-th of ``rows[i]``, the embedded rows of
        ``pending[i]``) into ``vectors``, but those of documents already in ``refused``.

        One call holds the texts of several documents. When the embedder refuses it for what it read
        (:func:`refused_input`: a text past a remote model's context length, say), each document's rows
        are embedded in a call of their own, and those refused again put their document in ``refused``
        with the reason, so that only it fails. A budget, connection or server error ends the batch."""
        part = [(i, n) for i, n in part if i not in refused]
        owners = list(dict.fromkeys(i for i, _ in part))
        try:
            self.embed_rows(pending, rows, part, vectors)
        except ModelError as exc:
            if not refused_input(exc):
                raise
            if len(owners) == 1:
                refused[owners[0]] = failure_reason(exc)
                return
            for owner in owners:
                try:
                    self.embed_rows(pending, rows, [(i, n) for i, n in part if i == owner], vectors)
                except ModelError as alone:
                    if not refused_input(alone):
                        raise
                    refused[owner] = failure_reason(alone)

    def embed_rows(
        self,
        pending: list[Prepared],
        rows: list[list[int]],
        part: list[tuple[int, int]],
        vectors: list[Vectors],
    ) -> None:
        """Embed the rows of ``part`` (as in :meth:`embed`) in one call into ``vectors``."""
        if not part:
            return
        texts = [pending[i].text(rows[i][n]) for i, n in part]
        began = time.perf_counter()
        embedded = self.embedder.embed(texts)
        self.report.embed_seconds += time.perf_counter() - began
        for (i, n), vector in zip(part, embedded, strict=True):
            vectors[i][n] = vector

    def embedding(self, item: Prepared, embedded: int) -> None:
        """Report that ``embedded`` of ``item``'s chunks are embedded."""
        if self.on_progress is not None:
            event = IngestEvent(
                item.doc.source or item.doc.id,
                "embedding",
                self.count,
                self.total,
                len(item.chunks),
                embedded,
            )
            self.on_progress(event)

    def store(self, item: Prepared, embedded: Vectors) -> None:
        """Hand one document with the vectors of its embedded rows to the sink (an ingest stores it in
        its own transaction), and report what was committed."""
        status = self.sink(item, item.vectors(embedded))
        self.done(item.doc.id, status, len(item.chunks) if status != "skipped" else 0)


def chunk_texts(items: Sequence[Prepared]) -> list[str]:
    """What the embedder reads for every embedded row of ``items``, in order: each chunk's header + text
    (but the pooled chunks'), then each window's."""
    return [p.text(row) for p in items for row in p.embedded]


#: Why a document is refused whose id an earlier document of its batch has, with other content (text,
#: title, metadata: :meth:`~chunkwise.document.Document.stored_digest`): storing it would replace that
#: one in the same call (two strings given to ``chunkwise.parse`` are both ``text``).
SHARED_ID = "an earlier document of this batch has the same id and other content; give each its own id"


def shown_id(doc_id: str) -> str:
    """``doc_id`` as a report names a document it refused: readable (:func:`path_id`), and quoted when
    blank, so the failure names something."""
    return path_id(doc_id) if doc_id.strip() else repr(doc_id)


def unstorable_text(doc: Document) -> str:
    """Why ``doc`` cannot be stored, or ``""``: a string of it holds a lone surrogate, which no store,
    hash or tokenizer can encode, or a NUL character (see :class:`~chunkwise.errors.NulCharacterError`);
    a document built by hand, from JSON escapes, or from a string given to ``chunkwise.parse``, which
    keeps it verbatim. Every string that is stored is checked: the id, text, title, source, format and
    unit ids, and the keys and string values of the metadata, however nested. A blank id (empty or
    whitespace) is refused as well: it names no document to list, search or delete."""
    if not doc.id.strip():
        return "the document's id is blank"
    fields = [("id", doc.id), ("text", doc.text), ("title", doc.title or ""), ("source", doc.source or "")]
    fields += [("format", doc.format), *(("unit id", unit.id) for unit in doc.units)]
    fields += _metadata_strings(doc.metadata, "metadata")
    named = [(f"the document's {what}", text) for what, text in fields]
    return _first_lone_surrogate(named) or _first_nul(named)


def _metadata_strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    """Each string of a metadata value (keys included, as JSON stores them), named by where it is."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{where} key", str(key)
            yield from _metadata_strings(item, f"{where}[{str(key)!r}]")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _metadata_strings(item, f"{where}[{index}]")


def _first_lone_surrogate(named: Iterable[tuple[str, str]]) -> str:
    """Why the first of ``named`` (``(what, text)`` pairs) that holds a lone surrogate is not valid
    Unicode text, or ``""``."""
    for what, text in named:
        at = lone_surrogate(text)
        if at is not None:
            return f"{what} is not valid Unicode text: a lone surrogate at character {at}"
    return ""


def _first_nul(named: Iterable[tuple[str, str]]) -> str:
    """Why the first of ``named`` (``(what, text)`` pairs) that holds a NUL character cannot be stored,
    or ``""``."""
    for what, text in named:
        at = text.find("\x00")
        if at >= 0:
            return f"{what} holds a NUL character at character {at} (not text: no store is given one)"
    return ""


def refused_input(exc: ModelError) -> bool:
    """Whether an embedding call's error may come from one of the texts it read, so that the texts of
    each document are worth a call of their own: a remote model that refused the request (HTTP 400, 413
    or 422), or a model error that is not about the call's transport or budget. A spent budget, a
    server that does not answer or keeps failing, or a refused key is the same for every document."""
    if isinstance(exc, BudgetExceededError):
        return False
    if isinstance(exc, ModelCallError):
        return exc.status in REFUSED_INPUT
    return True


def unexpected(exc: Exception) -> str:
    """The failure reason of an exception chunkwise does not raise on purpose (a bug in a parser or a
    chunker): reported against its file like any failure, so that it does not end the batch."""
    return f"unexpected {type(exc).__name__}: {exc}"


def parse_one(file: Path, limits: ParseLimits, doc_id: str | None = None) -> Document | Failure:
    """``file`` parsed within ``limits``, or the reason it could not be, named as its document id would
    be: ``doc_id``, else the path as given (:func:`~chunkwise.document.path_id`). A Ray ingest reads
    each file by its absolute path and gives the id of the path as given, as a serial ingest names it."""
    from chunkwise.parsing import parse_file

    source = doc_id or path_id(str(file))
    return _attempt(source, partial(parse_file, file, limits=limits, doc_id=doc_id))


def _parsed_bytes(files: Sequence[tuple[str, bytes]], limits: ParseLimits) -> Iterator[Document | Failure]:
    """Each in-memory file parsed within ``limits``, or the reason it could not be."""
    from chunkwise.parsing import parse_bytes

    for name, data in files:
        yield _attempt(name, partial(parse_bytes, data, name, limits=limits))


def _attempt(source: str, parse: Callable[[], Document]) -> Document | Failure:
    """The document ``parse`` returns, or the reason it failed (a parser bug is reported, not raised)."""
    try:
        return parse()
    except (ChunkwiseError, OSError) as exc:
        return Failure(source, failure_reason(exc))
    except Exception as exc:  # a parser bug must not end the batch; it is reported as such
        return Failure(source, unexpected(exc))
