"""HTML: a Lexbor parse (selectolax) walked into units, page boilerplate filtered out.

Kept: headings ``h1``-``h6``, paragraphs, ``ul``/``ol`` with nesting depth and numbers (counted as a
browser counts them: ``ol start``, ``li value`` and ``ol reversed`` honoured, attribute values bounded by
:func:`html_integer`, the numbers counted on from them held to the same bound), tables (``th``/``td``
rows, header rows first), ``pre`` as code (language from ``language-*`` or Pandoc classes),
``blockquote``, ``figcaption``/``caption`` as captions; text in ``div``/``span`` and other containers
outside these becomes paragraphs. The walk emits the same events
as the Markdown parser (see :mod:`.blocks`), so a page rendered from Markdown parses to the same units.

Dropped, following W-RAC's cleaning (cookies, page navigation, login information):

* by tag: ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``math``, ``iframe``, ``object``,
  ``canvas``, form controls, ``nav`` and ``aside``; ``header`` and ``footer`` unless inside an
  ``article`` or ``main`` (where they hold the article's own title or byline);
* by ARIA role: navigation, banner, contentinfo, complementary, search, menu, menubar;
* by ``id``/``class`` word (cookie, consent, gdpr, login, signin, newsletter, breadcrumb, sidebar...),
  matched on whole words after splitting on ``-``, ``_`` and camelCase, so ``class="logistics"`` stays.
  State modifiers such as ``has-sidebar`` or ``is-logged-in`` (first word has/is/with/no...) describe
  the page, not the element, and are ignored; so are ``html``, ``body``, ``main``, ``article``, headings
  and elements whose first child is a heading (their ids are usually slugs of the heading text);
* hidden content (``hidden``, ``aria-hidden="true"``, ``display:none``) and forms holding a password
  field.

Hostile nesting: Lexbor's tree building costs time proportional to the nesting depth for each element,
so 100,000 nested elements take minutes. A linear pre-scan of the markup refuses nesting deeper than
:attr:`ParseLimits.max_depth` before Lexbor sees it, and the walk itself is iterative with the same
bound, so no input can cause a ``RecursionError``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser, LexborNode

from chunkwise.document import Document
from chunkwise.errors import EmptyDocumentError, UnsafeContentError
from chunkwise.parsing.blocks import BlockAssembler, list_number_of
from chunkwise.parsing.builder import normalise_inline
from chunkwise.parsing.decoding import decode_bytes
from chunkwise.parsing.limits import ParseLimits

__all__ = ["parse", "parse_html", "walk_html"]

#: Elements dropped with everything inside them.
DROP_TAGS: frozenset[str] = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
        "nav", "aside", "input", "select", "textarea", "button", "option", "optgroup", "datalist",
        "output", "meter", "progress", "dialog", "head", "img", "picture", "video", "audio", "map",
    }
)  # fmt: skip

#: Page chrome unless inside an ``article`` or ``main``.
PAGE_CHROME_TAGS: frozenset[str] = frozenset({"header", "footer"})

#: ARIA roles of page chrome.
DROP_ROLES: frozenset[str] = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
)

#: Words of an ``id`` or ``class`` that mark boilerplate.
BOILERPLATE_WORDS: frozenset[str] = frozenset(
    {
        "cookie", "cookies", "consent", "gdpr", "login", "logon", "signin", "signup", "newsletter",
        "breadcrumb", "breadcrumbs", "sidebar", "navbar", "skiplink", "paywall",
    }
)  # fmt: skip

#: Word pairs that mark boilerplate when adjacent (``log-in``, ``sign_up``, ``side-bar``...).
BOILERPLATE_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {("log", "in"), ("sign", "in"), ("sign", "up"), ("side", "bar"), ("nav", "bar"), ("skip", "link")}
)

#: A first word that makes a class name a state modifier of the page rather than an element's kind.
_MODIFIER_WORDS: frozenset[str] = frozenset({"has", "is", "with", "without", "no", "show", "hide", "not"})

#: Elements whose ``id``/``class`` never mark them as boilerplate: they hold the whole page.
_NEVER_FILTERED: frozenset[str] = frozenset({"html", "body", "main", "article"})

#: Elements that start and end a paragraph-level block.
BLOCK_TAGS: frozenset[str] = frozenset(
    {
        "p", "div", "section", "article", "main", "address", "dl", "dt", "dd", "figure", "details",
        "summary", "center", "fieldset", "legend", "form", "hgroup", "search", "hr", "header", "footer",
        "tr", "td", "th",
    }
)  # fmt: skip

_HEADINGS: dict[str, int] = {f"h{n}": n for n in range(1, 7)}

#: Structural elements that, where only inline text is collected (headings, captions, cells), still
#: separate words.
_STRUCTURE_TAGS: frozenset[str] = frozenset(
    {*_HEADINGS, "ul", "ol", "menu", "li", "blockquote", "pre", "table", "caption", "figcaption"}
)

_SECTIONS: frozenset[str] = frozenset({"thead", "tbody", "tfoot"})

_CONTENT_ROOTS: frozenset[str] = frozenset({"article", "main"})

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

_CODE_CLASSES_IGNORED: frozenset[str] = frozenset({"sourcecode", "numbersource", "numberlines", "hljs"})

#: Tag scan for the nesting pre-check: comments, and start/end tags with their names.
_TAG = re.compile(r"<!--|<(/?)([A-Za-z][A-Za-z0-9-]*)")

#: Elements whose content is raw text (no tags inside) in the HTML syntax.
_RAW_TEXT: frozenset[str] = frozenset({"script", "style", "textarea", "title", "xmp", "noembed", "noframes"})

#: Elements that never nest in the parsed tree: void elements and those whose end tag is implied.
_NOT_NESTING: frozenset[str] = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
        "wbr", "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot",
        "option", "optgroup", "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head", "body",
    }
)  # fmt: skip

_META_CHARSET = re.compile(rb"<meta[^>]{0,200}?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.IGNORECASE)


def nesting_exceeds(markup: str, max_depth: int) -> bool:
    """Whether element nesting in ``markup`` goes deeper than ``max_depth``, by a linear tag scan.

    An approximation of the tree Lexbor will build (elements with implied end tags are not counted),
    good enough to refuse hostile input before the quadratic tree construction starts.
    """
    lowered: str | None = None
    depth = 0
    pos = 0
    while match := _TAG.search(markup, pos):
        pos = match.end()
        if match.group(0) == "<!--":
            end = markup.find("-->", pos)
            pos = len(markup) if end < 0 else end + 3
            continue
        name = match.group(2).lower()
        if name in _NOT_NESTING:
            continue
        if match.group(1):
            depth = max(depth - 1, 0)
            continue
        if name in _RAW_TEXT:
            lowered = lowered if lowered is not None else markup.lower()
            end = lowered.find(f"</{name}", pos)
            pos = len(markup) if end < 0 else end
            continue
        depth += 1
        if depth > max_depth:
            return True
    return False


def _words(value: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(value)]


def _is_boilerplate_name(value: str) -> bool:
    """Whether an ``id`` or ``class`` attribute value names boilerplate (see the module doc)."""
    for name in value.split():
        words = _words(name)
        if not words or words[0] in _MODIFIER_WORDS:
            continue
        if any(word in BOILERPLATE_WORDS for word in words):
            return True
        if any(pair in BOILERPLATE_PAIRS for pair in itertools.pairwise(words)):
            return True
    return False


def _starts_with_heading(node: LexborNode) -> bool:
    """Whether the first child element is a heading: a titled content section, whatever its id says.

    Generated ids are slugs of the heading text (``id="log-in-to-your-account"``), so a section about
    logging in must not be taken for a login form.
    """
    child = node.child
    while child is not None and not child.is_element_node:
        child = child.next
    return child is not None and child.tag in _HEADINGS


def _is_hidden(attrs: dict[str, str | None]) -> bool:
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = (attrs.get("style") or "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _code_language(node: LexborNode) -> str:
    """The language named by ``language-x``/``lang-x`` or Pandoc ``sourceCode x`` classes of a ``pre``."""
    candidates: list[str] = []
    for element in (node, node.css_first("code")):
        if element is None:
            continue
        for token in (element.attributes.get("class") or "").split():
            for prefix in ("language-", "lang-"):
                if token.startswith(prefix):
                    return token[len(prefix) :]
            if token.lower() not in _CODE_CLASSES_IGNORED:
                candidates.append(token)
    return candidates[0] if candidates else ""


def _preformatted_text(node: LexborNode) -> str:
    """The text of a ``pre``, layout kept; a ``br`` inside it is a line break (some highlighters and
    wiki engines write every line of a code block that way), which Lexbor's text extraction drops."""
    return "".join(
        "\n" if child.tag == "br" else child.text_content or ""
        for child in node.traverse(include_text=True)
        if child.tag in ("br", "-text")
    )


class _Walker:
    """Iterative document-order walk of a Lexbor tree, emitting block events."""

    def __init__(self, blocks: BlockAssembler, source: str, limits: ParseLimits) -> None:
        self.blocks = blocks
        self.source = source
        self.limits = limits
        self._closers: list[Callable[[], None]] = []
        self._inline_only = 0
        self._content_roots = 0

    def walk(self, root: LexborNode) -> None:
        """Emit events for everything inside ``root`` (not ``root`` itself)."""
        root_id = root.mem_id
        node = root.child
        while node is not None:
            if self._enter(node):
                if node.child is not None:
                    if len(self._closers) > self.limits.max_depth:
                        raise UnsafeContentError(
                            self.source, f"elements nested deeper than {self.limits.max_depth} levels"
                        )
                    node = node.child
                    continue
                self._closers.pop()()
            while node is not None and node.next is None:
                parent = node.parent
                if parent is None or parent.mem_id == root_id:
                    node = None
                else:
                    self._closers.pop()()
                    node = parent
            if node is not None:
                node = node.next

    def _skip(self, node: LexborNode, tag: str) -> bool:
        """Whether ``node`` is boilerplate to drop with its subtree (rules in the module doc)."""
        if tag in DROP_TAGS:
            return True
        if tag in PAGE_CHROME_TAGS and not self._content_roots:
            return True
        if tag == "form" and node.css_first('input[type="password" i]') is not None:
            return True
        attrs = node.attributes
        if not attrs:
            return False
        if (attrs.get("role") or "").strip().lower() in DROP_ROLES or _is_hidden(attrs):
            return True
        return (
            tag not in _NEVER_FILTERED
            and tag not in _HEADINGS
            and any(_is_boilerplate_name(attrs.get(name) or "") for name in ("id", "class"))
            and not _starts_with_heading(node)
        )

    def _enter(self, node: LexborNode) -> bool:
        """Handle the start of ``node``; True when its children are to be walked (a closer is pushed)."""
        tag = node.tag or ""
        if tag == "-text":
            self.blocks.text(node.text_content or "")
            return False
        if tag.startswith("-") or self._skip(node, tag):
            return False
        blocks = self.blocks
        if tag == "br":
            blocks.text(" ")
            return False
        if self._inline_only:
            return self._push(blocks.block_break if tag in BLOCK_TAGS or tag in _STRUCTURE_TAGS else None)
        if tag in _HEADINGS:
            blocks.open_heading(_HEADINGS[tag])
            self._inline_only += 1
            return self._push(self._close_inline(blocks.close_heading))
        if tag == "pre":
            blocks.code(_preformatted_text(node), _code_language(node))
            return False
        if tag == "table":
            self._table(node)
            return False
        if tag in ("ul", "ol", "menu"):
            self._open_list(node, ordered=tag == "ol")
            return self._push(blocks.close_list)
        if tag == "li":
            blocks.open_item(value=html_integer(node.attributes.get("value")))
            return self._push(blocks.close_item)
        if tag == "blockquote":
            blocks.open_quote()
            return self._push(blocks.close_quote)
        if tag in ("figcaption", "caption"):
            blocks.open_caption()
            self._inline_only += 1
            return self._push(self._close_inline(blocks.close_caption))
        if tag in BLOCK_TAGS:
            blocks.block_break()
            if tag in _CONTENT_ROOTS:
                self._content_roots += 1
                return self._push(self._close_content_root)
            return self._push(blocks.block_break)
        return self._push(None)

    def _open_list(self, node: LexborNode, ordered: bool) -> None:
        """Open a list numbered as a browser numbers it: from ``start`` (default 1), counting down in a
        ``reversed`` list, whose default start is its number of items (:meth:`_owned_items`)."""
        reversed_list = ordered and "reversed" in node.attributes
        start = html_integer(node.attributes.get("start"))
        if start is None:
            start = self._owned_items(node) if reversed_list else 1
        self.blocks.open_list(ordered=ordered, start=start, step=-1 if reversed_list else 1)

    def _owned_items(self, list_node: LexborNode) -> int:
        """The ``li`` elements a list owns, as HTML defines them for a reversed list's default start: its
        ``li`` descendants whose nearest list ancestor it is, so an item wrapped in a ``div`` counts (the
        walk numbers it in this list too) and the items of nested lists do not; nor do items the walk
        drops (hidden, or inside boilerplate), which it would not number. Iterative, so no nesting depth
        exhausts the stack."""
        count = 0
        stack = list(list_node.iter())
        while stack:
            node = stack.pop()
            tag = node.tag or ""
            if self._skip(node, tag):
                continue
            count += tag == "li"
            if tag not in ("ol", "ul", "menu"):
                stack.extend(node.iter())
        return count

    def _push(self, closer: Callable[[], None] | None) -> bool:
        self._closers.append(closer or _nothing)
        return True

    def _close_inline(self, close: Callable[[], None]) -> Callable[[], None]:
        def closer() -> None:
            self._inline_only -= 1
            close()

        return closer

    def _close_content_root(self) -> None:
        self._content_roots -= 1
        self.blocks.block_break()

    def _table(self, table: LexborNode) -> None:
        """Emit a table's caption, then its rows of cell text with ``thead`` rows first."""
        head: list[list[str]] = []
        body: list[list[str]] = []
        for child in table.iter():
            if child.tag == "caption":
                self.blocks.open_caption()
                self.blocks.text(self._inline_text(child))
                self.blocks.close_caption()
            if child.tag in _SECTIONS:
                rows = [row for row in child.iter() if row.tag == "tr"]
            else:
                rows = [child] if child.tag == "tr" else []
            for row in rows:
                cells = [self._inline_text(cell) for cell in row.iter() if cell.tag in ("th", "td")]
                (head if child.tag == "thead" else body).append(cells)
        self.blocks.table(head + body)

    def _inline_text(self, node: LexborNode) -> str:
        """All text under ``node`` as one line (a table cell): boilerplate skipped, blocks spaced."""
        cell = BlockAssembler()
        walker = _Walker(cell, self.source, self.limits)
        walker._inline_only = 1
        walker.walk(node)
        return " ".join(unit.text for unit in cell.finish().build("cell").units)


#: An HTML integer: leading whitespace, an optional sign, ASCII digits; anything after them is ignored.
_HTML_INTEGER = re.compile(r"[\t\n\f\r ]*([+-]?)([0-9]+)")


def html_integer(value: str | None) -> int | None:
    """An ``ol start`` or ``li value`` attribute parsed as browsers do (``" 7th"`` is 7), clamped to
    +-:data:`~chunkwise.parsing.blocks.MAX_LIST_NUMBER` so a hostile 10,000-digit value is neither
    converted nor rendered (:func:`~chunkwise.parsing.blocks.list_number_of`); ``None`` when absent or
    not a number (the attribute is then ignored)."""
    match = _HTML_INTEGER.match(value or "")
    if match is None:
        return None
    return list_number_of(*match.groups())


def _nothing() -> None:
    """The closer of elements that need nothing done at their end."""


#: A document type declaration with an internal subset (``<!DOCTYPE x [ ... ]>``): HTML has none, and one
#: declaring entities is an XML entity-expansion attack (billion laughs). An HTML parser leaves the
#: entities unexpanded, but the subset's tail and the entity references would be stored as the text.
_INTERNAL_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[", re.IGNORECASE)


def _guarded_tree(markup: str, source: str, limits: ParseLimits) -> LexborHTMLParser:
    if _INTERNAL_SUBSET.search(markup, 0, 4096):
        raise UnsafeContentError(
            source, "a DOCTYPE declaring entities (an internal subset), which HTML has not"
        )
    if nesting_exceeds(markup, limits.max_depth):
        raise UnsafeContentError(source, f"elements nested deeper than {limits.max_depth} levels")
    return LexborHTMLParser(markup)


def walk_html(markup: str, blocks: BlockAssembler, source: str, limits: ParseLimits) -> None:
    """Emit the block events of an HTML fragment into ``blocks`` (raw HTML inside Markdown)."""
    tree = _guarded_tree(markup, source, limits)
    if tree.body is not None:
        _Walker(blocks, source, limits).walk(tree.body)


def parse_html(markup: str, source: str, limits: ParseLimits | None = None) -> Document:
    """Parse HTML ``markup``; ``source`` is the document id and the name used in errors.

    The title is the ``<title>`` element's text, else the first ``h1``, else the first heading.
    """
    limits = limits or ParseLimits()
    tree = _guarded_tree(markup, source, limits)
    blocks = BlockAssembler()
    walker = _Walker(blocks, source, limits)
    if tree.body is not None:
        walker.walk(tree.body)
    builder = blocks.finish()
    if builder.unit_count == 0:
        raise EmptyDocumentError(source, "no text in the HTML once boilerplate is removed")
    doc = builder.build(source, source=source, fmt="html")
    title_node = tree.head.css_first("title") if tree.head is not None else None
    title = normalise_inline(title_node.text()) if title_node is not None else ""
    first_h1 = next((u.title for u in doc.headings() if u.level == 1), None)
    title = title or first_h1 or doc.title or ""
    return dataclasses.replace(doc, title=title or None)


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Decode an HTML file (BOM, UTF-8, ``<meta charset>``, detection) and parse it.

    Markup longer than ``limits.max_chars`` is refused before it is parsed.
    """
    declared = _META_CHARSET.search(data[:4096])
    decoded = decode_bytes(data, source, declared.group(1).decode("ascii") if declared else None)
    limits.check_chars(len(decoded.text), source)
    doc = parse_html(decoded.text, source, limits)
    return dataclasses.replace(doc, metadata={**doc.metadata, "encoding": decoded.encoding})
