"""The query pipeline's stages, one module each, all reporting into a :class:`~.trace.Trace`.

Every stage takes the query and the candidates in flight and returns the candidates it keeps, in order,
so any stage can be switched off by leaving it out of the list.
"""

from chunkwise.retrieval.candidate import Candidate
from chunkwise.retrieval.trace import StageReport, Trace

__all__ = ["Candidate", "StageReport", "Trace"]
