"""Query rewriting with ChunkRAG's prompt: the LLM restates the query in words closer to the documents.

A rewrite is used only when it is a usable query: the model's preamble ("Sure! Here is a better query:"),
labels ("Rewritten Query:") and quotes are removed first, and a rewrite that holds no word or is not valid
Unicode text (a lone surrogate) is refused as :func:`~chunkwise.terms.check_query` refuses such a user
query: the original query is searched instead, and the trace says why.
"""

from __future__ import annotations

import re

from chunkwise.errors import QueryError
from chunkwise.models.protocols import LLM
from chunkwise.query import prompts
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.llm_calls import ask
from chunkwise.query.trace import Trace
from chunkwise.terms import check_query

#: A line that only acknowledges the request ("Sure!", "Certainly.").
_ACKNOWLEDGEMENT = re.compile(r"(?i)^(?:sure|certainly|of course|okay|ok|absolutely|great)\W*$")
#: The text before a colon that introduces the rewrite rather than being part of it: a preamble ("Sure!
#: Here is a better one") or a label ending in "query", "version" or "rewrite" ("Rewritten Query", "The
#: improved search query is"); "SQL query syntax: joins" is a query of its own.
_LEAD_IN = re.compile(
    r"(?i)^(?:\W*(?:sure|certainly|of course|okay|ok|absolutely|great)\W+)?"
    r"(?:here(?:'s|’s| is| are)\b.*|.*\b(?:query|version|rewrite)(?:\s+(?:is|would be|could be))?)$"
)
_QUOTES = "\"'`“”‘’«»*_ "


def clean_rewrite(reply: str, original: str) -> str:
    """The rewrite in ``reply``: its first line holding a word once a lead-in before a colon ("Sure! Here
    is a better query:", "Rewritten Query:"), an acknowledgement line ("Sure!") and surrounding quotes or
    emphasis are removed; the original query when no line holds a word."""
    for line in reply.strip().splitlines():
        text = line.strip()
        if _ACKNOWLEDGEMENT.match(text):
            continue
        head, colon, tail = text.partition(":")
        if colon and len(head.split()) <= 8 and _LEAD_IN.match(head.strip()):
            text = tail
        text = text.strip(_QUOTES)
        if any(ch.isalnum() for ch in text):
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
            try:
                check_query(rewritten)
            except QueryError as exc:
                report.notes.update(rewritten=query, refused=str(exc))
                return query
            return rewritten
