"""The knowledge base: a store, a configuration and a model context, with the two pipelines over them.

    with KnowledgeBase("my-kb") as kb:
        report = kb.add(["docs/"])                  # parse -> chunk -> headers -> embed -> store
        hits = kb.search("baggage allowance", k=5)  # the configured query stages
        answer = kb.answer("How heavy may a checked bag be?")

A knowledge base is built from one fully resolved :class:`~chunkwise.config.PipelineConfig` and never
changes it, but for the embedder :meth:`KnowledgeBase.reembed` replaces. It records that configuration
in its store when it ingests, and a knowledge base opened without one uses the recorded settings (the
chunking, headers and stages its chunks were built with); with neither,
:func:`~chunkwise.config.load_config` gives the defaults with the environment applied.
Every model call of its pipelines goes through one :class:`~chunkwise.models.Models` (one ledger, one
budget), built from the configuration's ``[models]`` section unless one is given.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from chunkwise.config import PipelineConfig, from_dict, load_config
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.ingest.copy import CopyReport, copy_store
from chunkwise.ingest.inputs import byte_files, document_list
from chunkwise.ingest.paths import path_list
from chunkwise.ingest.pipeline import IngestPipeline
from chunkwise.ingest.reembed import ReembedReport, reembed
from chunkwise.ingest.report import IngestReport, ProgressFn
from chunkwise.models.context import Models
from chunkwise.query.answer import Answer
from chunkwise.query.pipeline import Hit, QueryPipeline
from chunkwise.query.segments import Segment
from chunkwise.query.trace import Trace
from chunkwise.store import DocumentInfo, Store, StoreSettings, open_store

#: The store setting under which a knowledge base records its configuration.
CONFIG_META_KEY = "pipeline_config"


def stored_config(store: Store) -> PipelineConfig | None:
    """The configuration recorded in ``store`` (environment applied), ``None`` when there is none."""
    recorded = store.meta(CONFIG_META_KEY)
    return from_dict(json.loads(recorded)) if recorded else None


def store_settings(config: PipelineConfig) -> StoreSettings:
    """The index and connection settings a configuration gives its store."""
    retrieval, store = config.retrieval, config.store
    return StoreSettings(
        retrieval.hnsw_threshold,
        retrieval.bm25s_threshold,
        store.pool_size,
        store.hnsw_m,
        store.hnsw_ef_construction,
        store.hnsw_ef_search,
    )


def record_config(store: Store, config: PipelineConfig) -> None:
    """Record ``config`` in ``store`` (what :func:`stored_config` reads back): every writer to a store
    does this before it ingests, so a reader opened without a configuration uses the same settings."""
    store.set_meta(CONFIG_META_KEY, config_meta(config))


def config_meta(config: PipelineConfig) -> str:
    """``config`` as :func:`record_config` records it."""
    return json.dumps(config.to_stored(), sort_keys=True)


class KnowledgeBase:
    """Documents in a store, searchable and answerable (see the module docstring).

    ``location``: the store (a knowledge-base directory or a ``postgresql://`` URL); ``None`` takes
    ``config.store.url``. ``config``: the configuration to use; ``None`` uses the one recorded in the
    store, else the defaults. ``models``: the run's model context; ``None`` builds one from
    ``config.models``. ``read_only``: search and answer only (the store must exist; a read-only or
    immutable directory works), ingesting raises :class:`~chunkwise.errors.StoreError`.

    Raises:
        StoreError: the store cannot be opened (see :func:`~chunkwise.store.open_store`).
        ConfigError: neither ``location`` nor ``config.store.url`` names a store.
        TypeError: ``config`` is not a :class:`~chunkwise.config.PipelineConfig` (a mapping, say).
    """

    def __init__(
        self,
        location: str | Path | None = None,
        config: PipelineConfig | None = None,
        *,
        models: Models | None = None,
        read_only: bool = False,
    ) -> None:
        if config is not None and not isinstance(config, PipelineConfig):
            raise TypeError(
                f"config must be a PipelineConfig, not {type(config).__name__} (chunkwise.load_config reads "
                "a TOML file, chunkwise.config.from_dict a mapping)"
            )
        where = location if location is not None else config.store.url if config else None
        if where is None:
            raise ConfigError("no knowledge base given: pass a location or set [store] url")
        self._location = where  # as given: a URL may hold the password Ray workers need to connect
        settings = store_settings(config) if config else None
        self.store: Store = open_store(where, settings, read_only=read_only)
        self.config: PipelineConfig = config or stored_config(self.store) or load_config()
        self.store.settings = store_settings(self.config)
        self.models = models if models is not None else Models(self.config.models)
        self._owns_models = models is None

    def close(self) -> None:
        """Close the store, and the model clients when this knowledge base built its model context (a
        context given to it is the caller's to close, see :meth:`Models.close`)."""
        self.store.close()
        if self._owns_models:
            self.models.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @cached_property
    def ingest(self) -> IngestPipeline:
        """The ingest pipeline over this knowledge base."""
        return IngestPipeline(self.store, self.models, self.config)

    @cached_property
    def query(self) -> QueryPipeline:
        """The query pipeline over this knowledge base."""
        return QueryPipeline(self.store, self.models, self.config)

    def add(
        self,
        paths: str | Path | Sequence[str | Path],
        on_progress: ProgressFn | None = None,
        *,
        ray: str | None = None,
    ) -> IngestReport:
        """Parse, chunk, contextualise, embed and store files (directories are searched for supported
        files), one transaction per document. Per-file errors are in ``report.failed``; the batch goes on.
        ``paths``: a list of files and directories, or one of them alone (a string is one path, never a
        sequence of one-character paths). ``ray``: run on the Ray cluster at this address (``auto``: the
        current or a new local one), see :mod:`chunkwise.ingest.ray_ingest`; a Ray the call initialised
        is shut down when it returns, one the process was attached to is left running.

        Raises:
            TypeError: ``paths`` is ``bytes`` (file contents go to :meth:`add_bytes`) or holds something
                other than paths.
            BudgetExceededError: a model call would pass the run's budget (documents prepared before it
                are stored).
            ClusterError: the Ray cluster does not answer or failed as a whole, or the process is
                already attached to another Ray cluster than ``ray`` names.
        """
        named = path_list(paths)
        self._record_config()
        if ray is not None:
            from chunkwise.ingest.ray_ingest import ray_add_files

            return ray_add_files(self.ingest, self._location, named, ray, on_progress)
        return self.ingest.add_files(named, on_progress)

    def add_bytes(
        self, files: Sequence[tuple[str, bytes]], on_progress: ProgressFn | None = None
    ) -> IngestReport:
        """Parse and store in-memory files, each a ``(name, content)`` pair; the name is the document id
        (a server's uploads come this way). Per-file errors are in ``report.failed``, as with :meth:`add`.

        Raises:
            TypeError: ``files`` is not a sequence of ``(str, bytes)`` pairs (nothing is stored).
        """
        pairs = byte_files(files)
        self._record_config()
        return self.ingest.add_bytes(pairs, on_progress)

    def add_documents(self, docs: Sequence[Document], on_progress: ProgressFn | None = None) -> IngestReport:
        """Store already-parsed documents (evaluation data sets come this way).

        Raises:
            TypeError: ``docs`` is not a sequence of documents (nothing is stored).
        """
        docs = document_list(docs)
        self._record_config()
        return self.ingest.add_documents(docs, on_progress)

    def reembed(self, embedder: str | None = None, on_progress: ProgressFn | None = None) -> ReembedReport:
        """Embed every stored chunk and passage window again with another embedder, in place: without the
        source files and without chunking again (see :mod:`chunkwise.ingest.reembed`). ``embedder``: a
        model spec as ``[models] embedder`` takes it (``local:bge-small``); ``None`` takes this knowledge
        base's configured embedder (that of its model context when one was given). ``on_progress``
        gets an ingest's events (each document ``replaced``).

        One transaction: the vectors, the embedder record, the documents' fingerprints and the recorded
        configuration (naming the new embedder) change together or not at all, so any failure leaves
        the store as it was and searchable with the old embedder. With ``embedder`` given, this knowledge
        base then uses it: its configuration names it and, when it built its model context, that is
        built again on the same ledger (a context given to it keeps its own embedder). Either way the
        re-embedding's calls stay in :meth:`accounting` and count against the run's budget, and the
        report carries their accounting.

        Raises:
            ModelError: the embedder failed or refused a document's text, or the budget would be passed
                (:class:`~chunkwise.errors.BudgetExceededError`); nothing was changed.
            ConfigError: ``embedder`` is not a model spec chunkwise knows.
            StoreError: the store is read-only or cannot be written.
        """
        config = self.config
        if embedder is not None:
            config = dataclasses.replace(config, models=dataclasses.replace(config.models, embedder=embedder))
        model = self.models.embedder(embedder)
        pipeline = IngestPipeline(self.store, self.models, config)
        report = reembed(pipeline, model, on_progress, {CONFIG_META_KEY: config_meta(config)})
        if config != self.config:
            self.config = config
            for cached in ("ingest", "query"):
                self.__dict__.pop(cached, None)
            if self._owns_models:
                self.models.close()
                self.models = Models(config.models, ledger=self.models.ledger)  # keeps what was spent
        return report

    def copy_to(self, target: str | Path, on_progress: ProgressFn | None = None) -> CopyReport:
        """Copy every stored document into the knowledge base at ``target`` (a directory or a
        ``postgresql://`` URL, created when absent) as it is stored: text, units, chunks, headers,
        summary, fingerprint, vectors and passage windows' vectors, one transaction a document, with the
        recorded embedder and configuration; no model is called (see :mod:`chunkwise.ingest.copy`).
        Searching the target then finds what searching this one finds, and an ingest of the same files
        into it skips them. Documents the target already holds alike are skipped, so an interrupted copy
        goes on where it stopped; a document that fails is in ``report.failed`` and the others are
        copied. ``on_progress`` gets an ingest's events, one a document. The target is opened with this
        knowledge base's store settings (a new PostgreSQL schema builds its HNSW indexes with them).

        Raises:
            ConfigError: the target records another embedder (both are named); nothing was written.
            StoreError: the target cannot be opened or written, or this store cannot be read.
        """
        with open_store(target, store_settings(self.config)) as store:
            return copy_store(self.store, store, (CONFIG_META_KEY,), on_progress)

    def documents(self) -> list[DocumentInfo]:
        """Every stored document, by id: its id, source, title, format, content hash and chunk count."""
        return self.store.documents()

    def delete(self, doc_id: str) -> bool:
        """Remove a document; False if it was not stored."""
        return self.store.delete(doc_id)

    def search(self, query: str, k: int = 10, trace: Trace | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``query`` after every enabled stage; each hit carries the trace.

        Raises:
            QueryError: ``query`` holds no word, or ``k`` is less than 1 (it is also a ``ValueError``).
        """
        return self.query.search(query, k, trace)

    def segments(self, query: str, trace: Trace | None = None, preset: str | None = None) -> list[Segment]:
        """Relevant segments for ``query`` (dsRAG RSE over the ranked candidates), best first."""
        return self.query.segments(query, trace, preset)

    def answer(self, query: str) -> Answer:
        """A grounded answer to ``query`` with verified citations, or "not found in the documents"."""
        return self.query.answer(query)

    def accounting(self, since: int = 0) -> dict[str, Any]:
        """Model calls, cache hits, tokens, cost and seconds of this knowledge base's run."""
        return self.models.accounting(since)

    def _record_config(self) -> None:
        """Record this knowledge base's configuration in its store, before an ingest."""
        record_config(self.store, self.config)
