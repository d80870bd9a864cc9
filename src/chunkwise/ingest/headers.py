"""Contextual chunk headers (dsRAG's AutoContext): the document title, a one-sentence document summary
and the chunk's section path, put in front of the chunk for embedding, BM25 and reranking.

The header is stored apart from the chunk text (``document.text[start:end] == chunk.text`` still holds),
so citations and offsets never include it. Title: the parser's, else the LLM's (when one is configured),
else the first heading, else the file name. Summary: the LLM's one sentence, or, with no LLM, the
document's first sentences (extractive, up to ``summary_chars``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from chunkwise.chunking.chunk import Chunk
from chunkwise.chunking.sentences import split_sentences
from chunkwise.document import Document, UnitKind
from chunkwise.models.protocols import LLM, Message

TITLE_PROMPT = """What is the title of this document? Reply with a short title only, no other text.

Document (beginning):
{text}

Title:"""

SUMMARY_PROMPT = """Summarise what this document is about in one sentence. Reply with the sentence only.

Document title: {title}

Document (beginning):
{text}

One-sentence summary:"""


@dataclass(frozen=True, slots=True)
class DocumentContext:
    """The per-document part of every chunk header."""

    title: str
    summary: str


def first_line(reply: str) -> str:
    """The first non-empty line of a model reply, without surrounding quotes."""
    for line in reply.strip().splitlines():
        text = line.strip().strip("\"'`* ")
        if text:
            return text
    return ""


def fallback_title(doc: Document) -> str:
    """The first heading's text, else the source's file name without extension, else the document id."""
    headings = doc.headings()
    if headings:
        return headings[0].title
    return PurePath(doc.source).stem if doc.source else doc.id


def extractive_summary(doc: Document, max_chars: int = 240) -> str:
    """The first sentences outside headings, up to ``max_chars`` (whole sentences, at least one)."""
    parts: list[str] = []
    for unit in doc.units:
        if unit.kind is not UnitKind.HEADING:
            parts.append(unit.text)
            if sum(map(len, parts)) > 4 * max_chars:
                break
    text = " ".join(parts) if parts else doc.text[: 4 * max_chars]
    picked: list[str] = []
    used = 0
    for start, end in split_sentences(text):
        sentence = " ".join(text[start:end].split())
        if picked and used + len(sentence) > max_chars:
            break
        picked.append(sentence[:max_chars])
        used += len(sentence) + 1
    return " ".join(picked)


def format_header(title: str, summary: str, section: tuple[str, ...]) -> str:
    """The header text; empty parts are left out."""
    lines = [f"Document: {title}"] if title else []
    if summary:
        lines.append(f"Summary: {summary}")
    if section:
        lines.append("Section: " + " > ".join(section))
    return "\n".join(lines)


class ContextualHeaders:
    """Builds headers; which parts appear, and whether the LLM is asked, is set at construction."""

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        title: bool = True,
        summary: bool = True,
        section: bool = True,
        prompt_chars: int = 4000,
        summary_chars: int = 240,
    ) -> None:
        self.llm = llm
        self.title = title
        self.summary = summary
        self.section = section
        self.prompt_chars = prompt_chars
        self.summary_chars = summary_chars

    def document_context(self, doc: Document) -> DocumentContext:
        """Title and summary of ``doc`` (one or two LLM calls when an LLM is configured, else none)."""
        beginning = doc.text[: self.prompt_chars]
        title = doc.title or ""
        if self.title and not title:
            if self.llm is not None:
                title = first_line(
                    self.llm.chat([Message("user", TITLE_PROMPT.format(text=beginning))], stage="title")
                )
            title = title or fallback_title(doc)
        summary = ""
        if self.summary:
            if self.llm is not None:
                prompt = SUMMARY_PROMPT.format(title=title or fallback_title(doc), text=beginning)
                summary = first_line(self.llm.chat([Message("user", prompt)], max_tokens=80, stage="summary"))
            summary = summary or extractive_summary(doc, self.summary_chars)
        return DocumentContext(title if self.title else "", summary)

    def header(self, chunk: Chunk, context: DocumentContext) -> str:
        """The header of one chunk."""
        return format_header(context.title, context.summary, chunk.section if self.section else ())
