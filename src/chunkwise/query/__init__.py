"""The query pipeline: a question through the configured stages to hits, segments and cited answers.

Every stage implements one :class:`~chunkwise.query.candidate.Stage` protocol (the query and the
candidates in flight in, the kept candidates out, a report in the :class:`~.trace.Trace`) and is built
from the configuration by the registry of :mod:`.stages`; :class:`~.pipeline.QueryPipeline` runs them.
"""

from chunkwise.query.candidate import Candidate, Query, Stage
from chunkwise.query.pipeline import Hit, QueryPipeline
from chunkwise.query.trace import StageReport, Trace

__all__ = ["Candidate", "Hit", "Query", "QueryPipeline", "Stage", "StageReport", "Trace"]
