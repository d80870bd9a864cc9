"""An offline, rule-based sentence splitter that returns exact spans.

Why rules and not a model: NLTK's punkt data cannot be downloaded here, and pysbd (in the ``bench``
extra, and able to return character spans) segments about 0.15 MB/s on this machine, two orders of
magnitude slower than this scan (``bench/chunk_quality.py`` times both on the chroma corpora and uses
pysbd as the independent judge of boundary quality). The rules below cover what matters for chunking:

* a sentence ends after ``.``, ``!``, ``?`` or ``…`` (runs like ``?!`` or ``...`` included), optionally
  followed by closing quotes or brackets, when whitespace follows;
* it does not end after a known abbreviation (``Dr.``, ``e.g.``, ``Inc.``, ...), a single-letter initial
  (``J. Smith``), a number opening a line or following a sentence end or a colon (``3. Mix``,
  ``Stir. 4. Bake``: list numbers), or at an ellipsis followed by a lower-case word (``wait... what``);
  decimals and dotted names (``3.14``, ``U.S.``, ``example.com``) never split
  because no whitespace follows their dots;
* Chinese and Japanese full stops (``。！？`` and half-width ``｡``) end a sentence with no space after them;
* a blank line always ends a sentence (headings and paragraphs without final punctuation), and so does a
  line break in front of a Markdown block marker (a list item, heading, table row or quote); ``\n``,
  ``\r\n`` and a lone ``\r`` all break lines (:mod:`chunkwise.chunking.lines`).

Spans are trimmed: they start and end on non-whitespace, and together they cover every non-whitespace
character of the text exactly once, in order.
"""

from __future__ import annotations

import re

from chunkwise.chunking.lines import LinePattern, is_break, last_break, window_end
from chunkwise.chunking.trim import trim

#: Lower-cased words that take a period without ending a sentence.
ABBREVIATIONS: frozenset[str] = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx dept est fig figs no nos vol vols
    pp ed eds inc ltd co corp llc plc bros jan feb mar apr jun jul aug sep sept oct nov dec mon tue
    wed thu fri sat sun gen col lt sgt capt cmdr adm gov sen rep pres rev hon u.s u.k a.m p.m ph.d
    m.d b.a m.a e.u
    """.split()  # noqa: SIM905 (a word list reads best as words)
)

#: Closing quotes and brackets that may stand between a sentence's final mark and what follows.
_CLOSERS = "\"'”’»)]"
# Latin-script sentence end: terminal punctuation (+ closers) followed by whitespace.
_LATIN_END = re.compile(f"[.!?…]+[{re.escape(_CLOSERS)}]*(?=\\s)")
# CJK sentence end: no whitespace needed after it.
_CJK_END = re.compile(r"[。！？｡]+[」』）”’〉》】]*")
# Paragraph break, or a line break in front of a Markdown block marker (line breaks of
# :mod:`chunkwise.chunking.lines`: a lone ``\r`` too).
_MARKER = r"(?:[-*+] |\d+[.)] |#|\||> )"
_BLOCK_BREAK = LinePattern(f"<br><sp>*<br>|<br>(?=<sp>*{_MARKER})")
_LATIN_MARKS = ".!?…"
_CJK_MARKS = "。！？｡"
_STOP_MARKS = _LATIN_MARKS + _CJK_MARKS
_FINDERS = {mark: re.compile(re.escape(mark)) for mark in _STOP_MARKS}
_REVERSED_STOP = re.compile(f"\\s[{re.escape(_CLOSERS)}]*[{_LATIN_MARKS}]|[{_CJK_MARKS}]")
# Each starts with a line break after ``.*``: in text without ``\r`` the literal newline, which the
# regex engine finds without backtracking character by character; an alternation of the two would not be.
# The cut is the line break just before ``match.end()`` (for a blank line, its second break: the
# trimmed chunk is the same either way).
_LAST_BREAKS = (
    LinePattern("(?s:.*)<br><sp>*<br>"),
    LinePattern(f"(?s:.*)<br>(?=<sp>*{_MARKER})"),
)
_NON_SPACE = re.compile(r"\S")


def _is_false_stop(text: str, match: re.Match[str]) -> bool:
    """Whether a Latin ``.`` end is an abbreviation or an initial, or an ellipsis before a lower-case word.

    A lower-case next word alone does not veto a stop: lower-cased corpora (the chroma finance set is
    one) would lose every sentence boundary.
    """
    punct = match.group()
    if not punct.startswith((".", "…")) or match.end() >= len(text):
        return False
    if punct.startswith(("..", "…")):
        nxt = _NON_SPACE.search(text, match.end())
        return nxt is not None and text[nxt.start()].islower()
    # The word ending at the mark (up to 24 characters back); none if whitespace precedes the mark.
    window = text[max(0, match.start() - 24) : match.start()]
    if not window or window[-1].isspace():
        return False
    raw = window.rsplit(None, 1)[-1]
    word = raw.lstrip("\"'“‘([").lower()
    if word.isdigit():  # "3." opening a line or a sentence is a list number, not a sentence end
        return _opens_item(text, match.start() - len(raw))
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


#: What a list number run into a line follows: a sentence end, or the colon that introduces the list.
_ITEM_LEADS = _STOP_MARKS + ":："


def _opens_item(text: str, pos: int) -> bool:
    """Whether only whitespace stands between ``pos`` and the line start, a sentence end (``. `` or
    ``?" ``) or a colon before it: where a list number stands when a list was run into one line
    (``Steps: 1. Open it. 2. Save it.``, as PDF extraction and chat transcripts give them). A walk back
    over that whitespace, not a search from the text start: a text without line breaks would make that
    quadratic."""
    i = pos - 1
    while i >= 0 and not is_break(text, i) and text[i].isspace():
        i -= 1
    if i < 0 or is_break(text, i):
        return True
    if i == pos - 1:  # no whitespace before the number: not a word of its own
        return False
    while i >= 0 and text[i] in _CLOSERS:
        i -= 1
    return i >= 0 and text[i] in _ITEM_LEADS


def _cut_at(text: str, match: re.Match[str]) -> int | None:
    """The sentence end a candidate match stands for, or ``None`` for a false stop."""
    found = match.group()
    if found[0] in "\n\r":  # a block break (a ``\r`` that starts a match is a line break)
        return match.start()
    if found[0] in ".!?…" and _is_false_stop(text, match):
        return None
    return match.end()


def sentence_ends(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """Offsets just after each sentence end found in ``text[start:end]``, ascending.

    A returned offset ``c`` means a sentence may end at ``c`` (trailing whitespace excluded). Each
    terminal mark is found with a literal search (fast in the regex engine, unlike a character class)
    and only the start of a run of marks is checked against the rules.
    """
    end = len(text) if end is None else end
    cuts = {match.start() for match in _BLOCK_BREAK.finditer(text, start, end)}
    for marks, rule in ((_LATIN_MARKS, _LATIN_END), (_CJK_MARKS, _CJK_END)):
        for finder in (_FINDERS[mark] for mark in marks):
            for match in finder.finditer(text, start, end):
                at = match.start()
                if at > start and text[at - 1] in marks:
                    continue
                found = rule.match(text, at, end)
                cut = _cut_at(text, found) if found is not None else None
                if cut is not None:
                    cuts.add(cut)
    return sorted(cuts)


def last_sentence_end(text: str, start: int, limit: int) -> int | None:
    """The largest sentence end ``c`` with ``start < c <= limit``, or ``None``.

    A backward search for windows (the recursive chunker's sentence level). The window is reversed once
    and searched forwards from where the last search stopped, so the regular expression stops at each
    stop mark instead of backtracking over the window, and walking back over many false stops (``a. a.
    a.``) costs one pass over the window, not one copy of it per stop. Latin marks need whitespace after
    them, past any closing quotes or brackets (decimals and dotted names cost nothing); CJK marks stand
    alone. Each stop mark found is checked with the rules of its script from the start of its run of
    marks of that script, as :func:`sentence_ends` checks it (in ``e.g.。`` the ``。`` ends the
    sentence on its own: a run taken from the ``.`` needed whitespace after it); a false stop moves the
    search before the run. Paragraph and list breaks come from two backward matches anchored on a
    newline. Within a line it finds the ends :func:`sentence_ends` finds (a stop closed by a quote or
    bracket, whitespace other than a space after it), so the recursive and sentence chunkers agree on
    what a sentence is.
    """
    best = None
    if last_break(text, start, limit) >= 0:
        edge = window_end(text, limit)
        breaks = [m.end() - 1 for m in (p.match(text, start, edge) for p in _LAST_BREAKS) if m is not None]
        best = max((b for b in breaks if b > start), default=None)
    stop = min(len(text), limit + 1)
    reversed_window = text[start:stop][::-1]
    found = _REVERSED_STOP.search(reversed_window)
    while found is not None:
        mark = stop - found.end()
        if best is not None and mark < best:
            break
        marks, rule = (_LATIN_MARKS, _LATIN_END) if text[mark] in _LATIN_MARKS else (_CJK_MARKS, _CJK_END)
        run = mark
        while run > start and text[run - 1] in marks:
            run -= 1
        end = rule.match(text, run)
        cut = _cut_at(text, end) if end is not None else None
        if cut is not None and start < cut <= limit:
            return cut if best is None else max(cut, best)
        found = _REVERSED_STOP.search(reversed_window, stop - run)
    return best


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Trimmed ``(start, end)`` spans of the sentences of ``text[start:end]``, in order."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for cut in [*sentence_ends(text, start, end), end]:
        span = trim(text, pos, cut)
        if span is not None:
            spans.append(span)
        pos = max(pos, cut)
    return spans
