"""Lenient JSON extraction from LLM answers.

Small models wrap JSON in prose or code fences, leave trailing commas, or stop mid-value when they hit the
token limit. :func:`parse_lenient` recovers the first JSON value of an answer: it reads past a code fence,
cuts the text to the outermost object or array, drops trailing commas and closes whatever a truncated answer
left open (string, key without value, brackets). What it cannot recover raises :class:`ValueError` with
the reason, which the structured-output loop feeds back to the model; so does an answer nested deeper than
the JSON decoder can follow (the decoder's ``RecursionError`` would otherwise escape the loop).
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}


def parse_lenient(text: str) -> Any:
    """The first JSON value in ``text``, repaired if needed; :class:`ValueError` if there is none.

    A code fence that opens before the first bracket is the answer's body; its end is found by matching
    brackets, not by the next fence marker, which a JSON string may hold."""
    try:
        return _loads(text.strip())
    except json.JSONDecodeError:
        pass
    body, start = text, _first_opener(text)
    fence = _FENCE.search(text)
    if fence is not None and (start < 0 or fence.start() < start):
        body = text[fence.start(1) :]
        start = _first_opener(body)
        if start < 0:  # a fenced scalar, or nothing
            try:
                return _loads(fence.group(1).strip())
            except json.JSONDecodeError:
                pass
    if start < 0:
        raise ValueError("the answer holds no JSON object or array")
    repaired = _balance(body[start:])
    try:
        return _loads(repaired)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg} at character {exc.pos})") from exc


def _loads(text: str) -> Any:
    """``json.loads``, with nesting too deep to decode raised as :class:`ValueError` (not handed to repair,
    which cannot make it shallower)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the answer nests JSON arrays or objects too deeply to decode") from None


def _first_opener(text: str) -> int:
    """The index of the first ``{`` or ``[`` in ``text``, -1 when there is none."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return min(starts) if starts else -1


def _balance(text: str) -> str:
    """``text`` from its first opener to the matching closer, trailing commas dropped, truncation closed."""
    out: list[str] = []
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "}]":
            _drop_trailing_comma(out)
            if not stack or stack[-1] != char:
                return "".join(out) + char  # mismatched brackets: left invalid, not guessed at
            stack.pop()
            out.append(char)
            if not stack:
                return "".join(out)
            continue
        out.append(char)
    if in_string:
        if escaped:
            out.pop()
        out.append('"')
    _close_dangling(out, stack)
    return "".join(out) + "".join(reversed(stack))


def _drop_trailing_comma(out: list[str]) -> None:
    """Remove a ``,`` (and the blanks after it) at the end of ``out``."""
    end = len(out)
    while end and out[end - 1].isspace():
        end -= 1
    if end and out[end - 1] == ",":
        del out[end - 1 :]


def _close_dangling(out: list[str], stack: list[str]) -> None:
    """Complete a truncated tail: a trailing comma goes, a key without a value gets ``null``."""
    _drop_trailing_comma(out)
    tail = "".join(out).rstrip()
    if tail.endswith(":"):
        out.append(" null")
    elif stack and stack[-1] == "}" and tail.endswith('"') and _ends_with_key(tail):
        out.append(": null")


def _ends_with_key(tail: str) -> bool:
    """Whether the string literal that ends ``tail`` sits where an object key belongs."""
    index = len(tail) - 2
    while index >= 0 and not (tail[index] == '"' and tail[index - 1] != "\\"):
        index -= 1
    before = tail[:index].rstrip()
    return before.endswith(("{", ","))
