"""Grounded answers: generated from the retrieved sources only, every claim cited with an exact quote.

Two modes. ``llm``: the LLM answers from numbered sources in JSON (answer + citations of source id and
quote); every quote is checked against the span of the source it cites (:mod:`.grounding`). Citations
whose quote is not found are dropped and reported; if none remains, or the model says so, the answer is
:data:`NOT_FOUND` and the model's own words stay in the trace. ``extractive``: no LLM; the answer is the
source sentences (headings excluded) sharing the rarest query terms, each cited, or :data:`NOT_FOUND`
when no sentence shares one. Either way, no sources means :data:`NOT_FOUND` without a model call.

A model that answers, but never with JSON of the schema (:class:`~chunkwise.errors.LLMResponseError`),
gives :data:`NOT_FOUND` with the reason in the trace, as an answer that cites nothing does. A call that
fails (:class:`~chunkwise.errors.ModelCallError`: a refused key, 429 or timeouts past the attempts) or
would cross a budget (:class:`~chunkwise.errors.BudgetExceededError`) raises: that says nothing about
the documents, and "not found" would tell the user they do not hold the answer.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from chunkwise.chunking.lines import first_line
from chunkwise.chunking.sentences import split_sentences
from chunkwise.chunking.tables import table_header
from chunkwise.errors import ChunkwiseError, LLMResponseError
from chunkwise.models.protocols import LLM, Message
from chunkwise.query import prompts
from chunkwise.query.grounding import locate_quote
from chunkwise.query.llm_calls import record_usage
from chunkwise.query.trace import StageReport, Trace
from chunkwise.spans import Span
from chunkwise.terms import query_terms

NOT_FOUND = "not found in the documents"
AnswerMode = Literal["llm", "extractive"]

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "quote": {"type": "string"}},
                "required": ["source", "quote"],
            },
        },
    },
    "required": ["answer", "citations"],
}


@dataclass(frozen=True, slots=True)
class Source(Span):
    """A passage the answer may use: a chunk or a segment (``ref`` is its id), numbered ``id``."""

    id: str
    ref: str
    text: str


@dataclass(frozen=True, slots=True)
class Citation(Span):
    """A verified quote: ``document.text[start:end]`` holds it (up to whitespace, see :mod:`.grounding`)."""

    source: str
    ref: str
    quote: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "source": self.source,
            "ref": self.ref,
            "doc_id": self.doc_id,
            "quote": self.quote,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class Grounding:
    """The check's verdict: ``grounded`` when at least one citation was verified and none was rejected."""

    verified: int
    rejected: list[dict[str, str]] = field(default_factory=list)

    @property
    def grounded(self) -> bool:
        """True when every cited quote was found in its source, and there was at least one."""
        return self.verified > 0 and not self.rejected

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"grounded": self.grounded, "verified": self.verified, "rejected": self.rejected}


@dataclass(slots=True)
class Answer:
    """An answer with its citations, grounding verdict, the query's trace (per-stage calls, tokens and
    time) and ``accounting``: the model layer's ledger totals for the calls this answer made."""

    question: str
    text: str
    citations: list[Citation]
    grounding: Grounding
    trace: Trace = field(default_factory=Trace)
    sources: list[Source] = field(default_factory=list)
    accounting: dict[str, Any] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        """False when the documents did not support an answer."""
        return self.text != NOT_FOUND

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the CLI's ``ask --json`` output)."""
        return {
            "question": self.question,
            "answer": self.text,
            "found": self.found,
            "citations": [c.to_dict() for c in self.citations],
            "grounding": self.grounding.to_dict(),
            "trace": self.trace.to_dict(),
            "totals": self.trace.totals(),
            "accounting": self.accounting,
        }


def check_citations(
    cited: list[tuple[str, str]], sources: list[Source], min_chars: int = 10
) -> tuple[list[Citation], Grounding]:
    """Verify ``(source id, quote)`` pairs against the sources' text; returns the verified citations."""
    by_id = {s.id: s for s in sources}
    verified: list[Citation] = []
    rejected: list[dict[str, str]] = []
    for source_id, quote in cited:
        source = by_id.get(source_id.strip().strip("[]"))
        found = locate_quote(quote, source.text, min_chars) if source else None
        if source is None or found is None:
            reason = "unknown source" if source is None else "quote not found in the cited source"
            rejected.append({"source": source_id, "quote": quote, "reason": reason})
            continue
        start, end = source.start + found[0], source.start + found[1]
        verified.append(
            Citation(source.doc_id, start, end, source.id, source.ref, source.text[found[0] : found[1]])
        )
    return verified, Grounding(len(verified), rejected)


class AnswerGenerator:
    """Stage: the answer to a question from the given sources (the last step of the pipeline)."""

    name = "answer"

    def __init__(
        self,
        llm: LLM | None,
        mode: AnswerMode = "llm",
        *,
        max_context_chars: int = 6000,
        max_sentences: int = 2,
        min_quote_chars: int = 10,
        max_tokens: int = 512,
    ) -> None:
        if mode == "llm" and llm is None:
            raise ChunkwiseError("the llm answer mode needs an LLM; configure [models] llm or use extractive")
        self.llm = llm
        self.mode = mode
        self.max_context_chars = max_context_chars
        self.max_sentences = max_sentences
        self.min_quote_chars = min_quote_chars
        self.max_tokens = max_tokens

    def answer(self, question: str, sources: list[Source], trace: Trace) -> Answer:
        """Answer ``question`` from ``sources`` only; :data:`NOT_FOUND` when they do not support one."""
        with trace.stage(self.name, len(sources)) as report:
            report.notes["mode"] = self.mode
            if not sources:
                return Answer(question, NOT_FOUND, [], Grounding(0), trace, sources)
            if self.mode == "extractive":
                text, cited = self._extract(question, sources)
            else:
                text, cited = self._generate(question, sources, report)
            citations, grounding = check_citations(cited, sources, self.min_quote_chars)
            report.notes["grounding"] = grounding.to_dict()
            if not citations or text.strip().lower().rstrip(".") == NOT_FOUND:
                report.notes["model_answer"] = text
                text, citations = NOT_FOUND, []
            report.outputs = len(citations)
            return Answer(question, text, citations, grounding, trace, sources)

    def _extract(self, question: str, sources: list[Source]) -> tuple[str, list[tuple[str, str]]]:
        """Sentences ranked by the summed rarity (log inverse sentence frequency) of the query terms they
        share, so a sentence naming the rare term of the question beats one repeating a common word.

        A table row alone says little ("| CloudSaver (Economy) | 1 | 23 kg |"), so a row is matched and
        answered together with its table's header row, which is cited as a quote of its own."""
        wanted = set(query_terms(question))
        sentences: list[tuple[int, str, str, str, set[str]]] = []
        for rank, source in enumerate(sources):
            for start, end in split_sentences(source.text):
                sentence = source.text[start:end]
                if sentence.startswith("#"):  # a heading names a topic; it does not answer anything
                    continue
                header = first_line(table_header(source.text, start))
                terms = set(query_terms(f"{header} {sentence}"))
                sentences.append((rank, source.id, sentence, header, wanted & terms))
        frequency = Counter(term for *_, shared in sentences for term in shared)
        scored = [
            (
                -sum(math.log(1 + len(sentences) / frequency[t]) for t in shared),
                rank,
                source_id,
                sentence,
                header,
            )
            for rank, source_id, sentence, header, shared in sentences
            if shared
        ]
        parts: list[str] = []
        cited: list[tuple[str, str]] = []
        chosen: set[str] = set()
        rows = False
        for _, _, source_id, sentence, header in sorted(scored):
            if sentence not in chosen:  # a sentence found in two sources is quoted once, cited twice
                if len(chosen) == self.max_sentences:
                    continue
                chosen.add(sentence)
                rows = rows or bool(header)
                parts.extend(q for q in (header, sentence) if q and q not in parts)
            cited.extend(q for q in ((source_id, header), (source_id, sentence)) if q[1] and q not in cited)
        if not parts:
            return NOT_FOUND, []
        return "\n".join(parts) if rows else " ".join(parts), cited

    def _context(self, sources: list[Source]) -> str:
        parts: list[str] = []
        used = 0
        for source in sources:
            block = f"[{source.id}]\n{source.text.strip()}"
            if parts and used + len(block) > self.max_context_chars:
                break
            parts.append(block[: self.max_context_chars])
            used += len(block)
        return "\n\n".join(parts)

    def _generate(
        self, question: str, sources: list[Source], report: StageReport
    ) -> tuple[str, list[tuple[str, str]]]:
        assert self.llm is not None
        prompt = prompts.ANSWER.format(context=self._context(sources), question=question)
        try:
            reply = self.llm.structured(
                [Message("user", prompt)], _SCHEMA, max_tokens=self.max_tokens, stage="answer"
            )
        except LLMResponseError as exc:  # answered, but not in the schema: no answer to check
            report.calls += 1
            report.notes["error"] = str(exc)
            return NOT_FOUND, []
        record_usage(self.llm, report, prompt, json.dumps(reply))
        if not isinstance(reply, dict):
            report.notes["error"] = "the model's reply is not a JSON object"
            return NOT_FOUND, []
        cited = [
            (str(c.get("source", "")), str(c.get("quote", "")))
            for c in reply.get("citations") or []
            if isinstance(c, dict)
        ]
        return str(reply.get("answer", "")).strip() or NOT_FOUND, cited
