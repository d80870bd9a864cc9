"""The ingest pipeline: files or parsed documents into a store, one transaction per document.

:class:`~chunkwise.ingest.pipeline.IngestPipeline` parses, chunks, adds contextual headers
(:mod:`.headers`), embeds and stores; :mod:`.report` holds what it reports.
"""

from chunkwise.ingest.pipeline import IngestPipeline
from chunkwise.ingest.report import IngestEvent, IngestReport

__all__ = ["IngestEvent", "IngestPipeline", "IngestReport"]
