"""Query rewriting with ChunkRAG's prompt: the LLM restates the query in words closer to the documents."""

from __future__ import annotations

from chunkwise.models.protocols import LLM
from chunkwise.query import prompts
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.llm_calls import ask
from chunkwise.query.trace import Trace


def clean_rewrite(reply: str, original: str) -> str:
    """The first non-empty line of ``reply`` without quotes or a "Rewritten Query:" label; the original
    query when nothing usable is left."""
    for line in reply.strip().splitlines():
        text = line.strip()
        if text.lower().startswith("rewritten query:"):
            text = text[len("rewritten query:") :].strip()
        text = text.strip("\"'` ")
        if text:
            return text
    return original


class QueryRewrite:
    """Stage: rewrite the query before retrieval; the candidates (none yet) pass through."""

    name = "rewrite"

    def __init__(self, llm: LLM, max_tokens: int = 64) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Replace ``query.text`` by its rewrite."""
        rewritten = self.rewrite(query.text, trace)
        if rewritten != query.text:
            query.text, query.vector = rewritten, None  # the embedding of the old text no longer applies
        return candidates

    def rewrite(self, query: str, trace: Trace) -> str:
        """The rewritten query (the original one if the model returns nothing usable)."""
        with trace.stage(self.name, 1) as report:
            reply = ask(
                self.llm,
                prompts.REWRITE.format(query=query),
                report,
                max_tokens=self.max_tokens,
                stage="rewrite",
            )
            rewritten = clean_rewrite(reply, query)
            report.outputs = 1
            report.notes = {"query": query, "rewritten": rewritten}
            return rewritten
