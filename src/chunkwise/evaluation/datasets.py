"""Evaluation data sets: a folder with ``corpus.jsonl`` and ``queries.jsonl``.

- ``corpus.jsonl``: one document a line, ``{"doc_id": str, "text": str}``.
- ``queries.jsonl``: one query a line, ``{"qid": str, "query": str, "answer"?: str,
  "spans"?: [{"doc_id", "start", "end", "text"?}], "gold_docs"?: [str]}``; any other field is kept in
  :attr:`Query.metadata`. ``start``/``end`` are Python ``str`` offsets (code points) into the document
  text, end exclusive. A query needs span gold, document gold (``gold_docs``), or both; without
  ``gold_docs`` its gold documents are those of its spans; with both, every span must lie on one of
  the ``gold_docs`` (the documents a subsample keeps and document metrics score).

Document texts are kept verbatim, so span offsets stay valid. Every span is checked on load (document
known and among the query's gold documents, offsets in range, ``text`` equal to the slice when given);
a bad line raises :class:`~chunkwise.errors.DatasetError` naming the file and the line.
:func:`subsample` draws a deterministic subset of the queries and keeps only the documents they need,
plus optional distractors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chunkwise.document import Document, lone_surrogate
from chunkwise.errors import DatasetError, QueryError
from chunkwise.evaluation.items import Span
from chunkwise.ingest.pipeline import unstorable_text
from chunkwise.parsing.text import text_document
from chunkwise.terms import check_query

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"


def dataset_files(folder: Path) -> tuple[Path, Path]:
    """The two files of the data set in ``folder``: its corpus and its queries."""
    return folder / CORPUS_FILE, folder / QUERIES_FILE


_QUERY_FIELDS = frozenset({"qid", "query", "answer", "spans", "gold_docs"})


@dataclass(frozen=True, slots=True)
class Query:
    """One question with its gold: evidence spans and/or relevant documents."""

    qid: str
    query: str
    spans: tuple[Span, ...] = ()
    gold_docs: tuple[str, ...] = ()
    answer: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dataset:
    """A corpus and its queries, loaded from one folder; ``name`` is the folder name."""

    name: str
    path: str
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]

    @property
    def has_spans(self) -> bool:
        """Whether every query has span gold (so span metrics apply)."""
        return bool(self.queries) and all(q.spans for q in self.queries)

    @property
    def characters(self) -> int:
        """Total length of the document texts."""
        return sum(len(doc.text) for doc in self.documents)


def load_dataset(
    path: str | Path, *, limit: int | None = None, seed: int = 0, distractors: int = 0
) -> Dataset:
    """Load and validate the data set in folder ``path``; with ``limit``, :func:`subsample` it."""
    folder = Path(path)
    corpus, queries_file = dataset_files(folder)
    documents = _load_corpus(corpus)
    texts = {doc.id: doc.text for doc in documents}
    queries = _load_queries(queries_file, texts)
    dataset = Dataset(
        name=folder.resolve().name, path=folder.as_posix(), documents=documents, queries=queries
    )
    return dataset if limit is None else subsample(dataset, limit, seed=seed, distractors=distractors)


def subsample(dataset: Dataset, limit: int, *, seed: int = 0, distractors: int = 0) -> Dataset:
    """A deterministic subset: ``limit`` queries drawn with ``seed`` (kept in file order), the documents
    their gold names, and ``distractors`` other documents drawn with the same seed (corpus order kept).

    The draw ranks items by a SHA-256 hash of ``(seed, id)``, not by a pseudo-random generator, so the
    same (data set, limit, seed) gives the same subset on any machine and Python or NumPy version, and a
    query keeps its place in the draw when other queries are added to the file.
    """
    if limit < 0 or distractors < 0:
        raise DatasetError(dataset.path, "limit and distractors must not be negative")
    picked = set(_draw([q.qid for q in dataset.queries], limit, seed))
    queries = tuple(q for q in dataset.queries if q.qid in picked)
    needed = {doc_id for q in queries for doc_id in q.gold_docs}
    extra = set(_draw([d.id for d in dataset.documents if d.id not in needed], distractors, seed))
    documents = tuple(doc for doc in dataset.documents if doc.id in needed or doc.id in extra)
    return replace(dataset, documents=documents, queries=queries)


def _draw(ids: list[str], count: int, seed: int) -> list[str]:
    """``count`` of ``ids``, those with the smallest SHA-256 of ``"seed:id"``."""
    return sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).digest())[:count]


def _lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(source, record)`` for each non-blank line, ``source`` being ``file:line``."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(path.as_posix(), f"cannot read: {exc.strerror or exc}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            source = f"{path.as_posix()}:{number}"
            try:  # a byte-order mark opens many files written on Windows: it is no part of the JSON
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(
                    source, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(source, f"invalid JSON: {exc.msg}") from exc
            except RecursionError:
                raise DatasetError(source, "invalid JSON: nested too deeply") from None
            if not isinstance(record, dict):
                raise DatasetError(source, "expected a JSON object")
            yield source, record


def _field(record: dict[str, Any], name: str, kind: type, source: str) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DatasetError(source, f"field {name!r} must be a {kind.__name__}")
    if isinstance(value, str) and (at := lone_surrogate(value)) is not None:
        raise DatasetError(
            source, f"field {name!r} is not valid Unicode text: a lone surrogate at character {at}"
        )
    return value


def _load_corpus(path: Path) -> tuple[Document, ...]:
    documents: dict[str, Document] = {}
    for source, record in _lines(path):
        doc_id = _field(record, "doc_id", str, source)
        text = _field(record, "text", str, source)
        if doc_id in documents:
            raise DatasetError(source, f"duplicate doc_id {doc_id!r}")
        document = text_document(doc_id, text, source=source)
        if reason := unstorable_text(document):  # here, not when the first configuration indexes it
            raise DatasetError(source, reason)
        documents[doc_id] = document
    if not documents:
        raise DatasetError(path.as_posix(), "no documents")
    return tuple(documents.values())


def _load_queries(path: Path, texts: dict[str, str]) -> tuple[Query, ...]:
    queries: list[Query] = []
    seen: set[str] = set()
    for source, record in _lines(path):
        qid = _field(record, "qid", str, source)
        if qid in seen:
            raise DatasetError(source, f"duplicate qid {qid!r}")
        seen.add(qid)
        text = _field(record, "query", str, source)
        try:
            check_query(text)
        except QueryError as exc:
            raise DatasetError(source, str(exc)) from None
        raw_spans = [] if record.get("spans") is None else _field(record, "spans", list, source)
        spans = tuple(_span(raw, texts, source) for raw in raw_spans)
        raw_docs = record.get("gold_docs")
        if raw_docs is None:
            gold_docs = tuple(dict.fromkeys(span.doc_id for span in spans))
        elif isinstance(raw_docs, list) and all(isinstance(d, str) for d in raw_docs):
            gold_docs = tuple(dict.fromkeys(raw_docs))
        else:
            raise DatasetError(source, "field 'gold_docs' must be a list of document ids")
        unknown = [doc_id for doc_id in gold_docs if doc_id not in texts]
        if unknown:
            raise DatasetError(source, f"gold document {unknown[0]!r} is not in the corpus")
        outside = [span.doc_id for span in spans if span.doc_id not in gold_docs]
        if outside:
            raise DatasetError(source, f"span document {outside[0]!r} is not among the query's gold_docs")
        if not gold_docs:
            raise DatasetError(source, f"query {qid!r} has neither spans nor gold_docs")
        answer = record.get("answer")
        queries.append(
            Query(
                qid=qid,
                query=text,
                spans=spans,
                gold_docs=gold_docs,
                answer=answer if isinstance(answer, str) else None,
                metadata={k: v for k, v in record.items() if k not in _QUERY_FIELDS},
            )
        )
    if not queries:
        raise DatasetError(path.as_posix(), "no queries")
    return tuple(queries)


def _span(raw: Any, texts: dict[str, str], source: str) -> Span:
    if not isinstance(raw, dict):
        raise DatasetError(source, "each span must be a JSON object")
    doc_id = _field(raw, "doc_id", str, source)
    start = _field(raw, "start", int, source)
    end = _field(raw, "end", int, source)
    text = texts.get(doc_id)
    if text is None:
        raise DatasetError(source, f"span document {doc_id!r} is not in the corpus")
    if not 0 <= start < end <= len(text):
        raise DatasetError(source, f"span [{start}, {end}) out of range for {doc_id!r} ({len(text)} chars)")
    given = raw.get("text")
    if given is not None and text[start:end] != given:
        raise DatasetError(source, f"span [{start}, {end}) of {doc_id!r} does not match its text")
    return Span(doc_id, start, end)
