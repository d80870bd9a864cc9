"""The knowledge base: a store, a configuration and a model context, with the two pipelines over them.

    with KnowledgeBase("my-kb") as kb:
        report = kb.add(["docs/"])                  # parse -> chunk -> headers -> embed -> store
        hits = kb.search("baggage allowance", k=5)  # the configured query stages
        answer = kb.answer("How heavy may a checked bag be?")

A knowledge base is built from one fully resolved :class:`~chunkwise.config.PipelineConfig` and never
changes it. It records that configuration in its store when it ingests, and a knowledge base opened
without one uses the recorded settings (the chunking, headers and stages its chunks were built with);
with neither, :func:`~chunkwise.config.load_config` gives the defaults with the environment applied.
Every model call of its pipelines goes through one :class:`~chunkwise.models.Models` (one ledger, one
budget), built from the configuration's ``[models]`` section unless one is given.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from chunkwise.config import PipelineConfig, from_dict, load_config
from chunkwise.document import Document
from chunkwise.ingest.pipeline import IngestPipeline
from chunkwise.ingest.report import IngestReport, ProgressFn
from chunkwise.models.context import Models
from chunkwise.query.answer import Answer
from chunkwise.query.pipeline import Hit, QueryPipeline
from chunkwise.query.segments import Segment
from chunkwise.query.trace import Trace
from chunkwise.store import Store, StoreSettings, open_store

#: The store setting under which a knowledge base records its configuration.
CONFIG_META_KEY = "pipeline_config"


def stored_config(store: Store) -> PipelineConfig | None:
    """The configuration recorded in ``store`` (environment applied), ``None`` when there is none."""
    recorded = store.meta(CONFIG_META_KEY)
    return from_dict(json.loads(recorded)) if recorded else None


def record_config(store: Store, config: PipelineConfig) -> None:
    """Record ``config`` in ``store`` (what :func:`stored_config` reads back): every writer to a store
    does this before it ingests, so a reader opened without a configuration uses the same settings."""
    store.set_meta(CONFIG_META_KEY, json.dumps(config.to_stored(), sort_keys=True))


class KnowledgeBase:
    """Documents in a store, searchable and answerable (see the module docstring).

    ``location``: the store (a knowledge-base directory). ``config``: the configuration to use; ``None``
    uses the one recorded in the store, else the defaults. ``models``: the run's model context; ``None``
    builds one from ``config.models``. ``read_only``: search and answer only (the store must exist; a
    read-only or immutable directory works), ingesting raises :class:`~chunkwise.errors.StoreError`.

    Raises:
        StoreError: the store cannot be opened (see :func:`~chunkwise.store.open_store`).
    """

    def __init__(
        self,
        location: str | Path,
        config: PipelineConfig | None = None,
        *,
        models: Models | None = None,
        read_only: bool = False,
    ) -> None:
        self.store: Store = open_store(location, read_only=read_only)
        self.config: PipelineConfig = config or stored_config(self.store) or load_config()
        retrieval = self.config.retrieval
        self.store.settings = StoreSettings(retrieval.hnsw_threshold, retrieval.bm25s_threshold)
        self.models = models if models is not None else Models(self.config.models)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

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

    def add(self, paths: Sequence[str | Path], on_progress: ProgressFn | None = None) -> IngestReport:
        """Parse, chunk, contextualise, embed and store files (directories are searched for supported
        files), one transaction per document. Per-file errors are in ``report.failed``; the batch goes on.

        Raises:
            BudgetExceededError: a model call would pass the run's budget (documents prepared before it
                are stored).
        """
        self._record_config()
        return self.ingest.add_files(paths, on_progress)

    def add_bytes(
        self, files: Sequence[tuple[str, bytes]], on_progress: ProgressFn | None = None
    ) -> IngestReport:
        """Parse and store in-memory files, each a ``(name, content)`` pair; the name is the document id
        (a server's uploads come this way). Per-file errors are in ``report.failed``, as with :meth:`add`."""
        self._record_config()
        return self.ingest.add_bytes(files, on_progress)

    def add_documents(self, docs: Sequence[Document], on_progress: ProgressFn | None = None) -> IngestReport:
        """Store already-parsed documents (evaluation data sets come this way)."""
        self._record_config()
        return self.ingest.add_documents(docs, on_progress)

    def delete(self, doc_id: str) -> bool:
        """Remove a document; False if it was not stored."""
        return self.store.delete(doc_id)

    def search(self, query: str, k: int = 10, trace: Trace | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``query`` after every enabled stage; each hit carries the trace.

        Raises:
            QueryError: ``query`` holds no word (it is also a ``ValueError``).
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
        record_config(self.store, self.config)
