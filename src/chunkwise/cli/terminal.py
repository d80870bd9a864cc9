"""What the CLI writes for people to read: names and document text with control characters escaped.

File names and document text come from outside. Written raw, an ESC starts a terminal control sequence
(colours, cursor moves, the window title), a carriage return makes the terminal overwrite what the line
said, and a newline starts a line of its own, so a file named ``x\\nerror: fake`` would forge an error
line. Rich adds a hazard of its own: it reads ``[...]`` in a string as markup and fails on an unmatched
``[/x]``.

One rule for every path to the terminal (error lines, tables, progress, answers): each control
character (Unicode category Cc: the C0 set with tab, newline and carriage return, DEL, and the C1 set,
which some terminals obey as 8-bit escape sequences), the bidirectional formatting characters that make
text display in another order than it is stored (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the
line and paragraph separators U+2028 and U+2029 are shown as a Python-style escape: ``\\x1b``, ``\\n``,
``\\u202e``. Tab is escaped like the rest: where document text is shown, whitespace runs are collapsed to
one space first, so only names can still hold a tab, and there it is better seen. Backslashes are left
as they are; the escaped form is for reading, not for parsing back.

JSON output keeps the data exact: :func:`json_line` writes every character of that set as a ``\\uXXXX``
escape (``json.dumps`` does so for C0 only), which any JSON reader turns back into the same character.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

#: Bidirectional formatting characters and the Unicode line and paragraph separators.
_FORMATTING = "\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
#: The characters that never reach the terminal raw (see the module docstring).
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMATTING}]")
_UNSAFE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_FORMATTING}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every unsafe character escaped; ``keep_newlines`` leaves ``\\n`` as a line break
    (for multi-line text such as an answer, where a carriage return is still escaped)."""
    return (_UNSAFE_BUT_NEWLINE if keep_newlines else _UNSAFE).sub(_escape, text)


def plain(text: str, *, keep_newlines: bool = False) -> Text:
    """``text`` escaped as a rich :class:`~rich.text.Text`, which is never read as markup or emoji."""
    return Text(printable(text, keep_newlines=keep_newlines))


def markup_literal(text: str) -> str:
    """``text`` escaped for a place where rich reads markup (a progress bar's description)."""
    return escape(printable(text))


class _Console(Console):
    """A rich console whose closed pipe is an ordinary :class:`BrokenPipeError`.

    Rich handles one itself, by pointing stdout at the null device and exiting with status 1; raised
    instead, it reaches the command group, which ends every command whose reader went away the same way,
    whether the output came from rich or from a plain write."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def rich_console(*, stderr: bool = False) -> Console:
    """The console every table and message from rich is printed with (stdout, or stderr)."""
    return _Console(stderr=stderr)


def error_line(message: str) -> None:
    """Write ``error: <message>`` to stderr as exactly one line."""
    sys.stderr.write(f"error: {printable(message)}\n")


def json_line(value: Any) -> str:
    """``value`` as one line of JSON, non-ASCII kept readable but every unsafe character escaped."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))
