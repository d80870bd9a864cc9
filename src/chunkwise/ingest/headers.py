"""Contextual chunk headers (dsRAG's AutoContext): the document title, a one-sentence document summary
and the chunk's section path, put in front of the chunk for embedding, BM25 and reranking.

The header is stored apart from the chunk text (``document.text[start:end] == chunk.text`` still holds),
so citations and offsets never include it. Title: the parser's, else the LLM's (when one is configured),
else the first heading, else the file name. Summary: the LLM's one sentence, or, with no LLM, the
document's first sentences (extractive, up to ``summary_chars``).

An LLM's reply is bounded twice: the request asks for at most :data:`TITLE_TOKENS` (a title) or
:data:`SUMMARY_TOKENS` (a summary) tokens, and the text kept is cut at a word boundary to
:data:`TITLE_CHARS` or :data:`SUMMARY_CHARS` characters (a server may ignore ``max_tokens``). The header
goes in front of every chunk and window: an unbounded one would fill the embedder's input, and every
chunk of the document would get the same vector.
"""

from __future__ import annotations

import re
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

#: Most tokens an LLM may write for a title, and most characters of its title kept.
TITLE_TOKENS = 32
TITLE_CHARS = 200
#: Most tokens an LLM may write for a summary, and most characters of its summary kept.
SUMMARY_TOKENS = 80
SUMMARY_CHARS = 500

#: A UTF-16 surrogate code point: a JSON reply decodes a valid escaped pair to one character, so one
#: left in a string is a lone half (a reply cut inside a pair), which no store can encode.
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class DocumentContext:
    """The per-document part of every chunk header."""

    title: str
    summary: str


def first_line(reply: str, max_chars: int) -> str:
    """The first non-empty line of a model reply, without surrounding quotes or lone surrogates, cut to
    ``max_chars`` at a word boundary (mid-word only when its first word is longer)."""
    for line in _SURROGATE.sub("", reply).strip().splitlines():
        text = line.strip().strip("\"'`* ")
        if text:
            return _cut(text, max_chars)
    return ""


def _cut(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its longest prefix that fits and ends before a space."""
    if len(text) <= max_chars:
        return text
    head = text[: max_chars + 1]
    space = head.rfind(" ")
    return (head[:space] if space > 0 else head[:max_chars]).rstrip()


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
                prompt = TITLE_PROMPT.format(text=beginning)
                reply = self.llm.chat([Message("user", prompt)], max_tokens=TITLE_TOKENS, stage="title")
                title = first_line(reply, TITLE_CHARS)
            title = title or fallback_title(doc)
        summary = ""
        if self.summary:
            if self.llm is not None:
                prompt = SUMMARY_PROMPT.format(title=title or fallback_title(doc), text=beginning)
                reply = self.llm.chat([Message("user", prompt)], max_tokens=SUMMARY_TOKENS, stage="summary")
                summary = first_line(reply, SUMMARY_CHARS)
            summary = summary or extractive_summary(doc, self.summary_chars)
        return DocumentContext(title if self.title else "", summary)

    def header(self, chunk: Chunk, context: DocumentContext) -> str:
        """The header of one chunk."""
        return format_header(context.title, context.summary, chunk.section if self.section else ())
