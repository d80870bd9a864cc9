"""One place where query stages talk to the LLM: a single-prompt call that counts its tokens, and the
parser for the scores ChunkRAG's prompts ask for (:func:`parse_unit_score` states its rule)."""

from __future__ import annotations

import re

from chunkwise.models.protocols import LLM, Message
from chunkwise.query.trace import StageReport

#: A decimal number, with an optional exponent; a comma between digits is a decimal comma ("0,7"). Not
#: part of a word ("S1", "gpt4") or of a longer number; a sign only where nothing numeric precedes it, so
#: "0.2-0.3" is two numbers, not 0.2 and -0.3.
_NUMBER = r"(?<![\w.,])[-+]?(?:\d+(?:[.,]\d+)?|[.,]\d+)(?:[eE][-+]?\d+)?"
#: Statements of the scale rather than scores: "between 0 and 1", "from 0 to 1", "0-1", "[0, 1]", the
#: "out of 1" or "/1" after a score.
_SCALE = re.compile(
    r"(?i)(?:\b(?:between|from)\s+)?(?<![\d.,])0(?:\.0)?\s*(?:and|to|-|–|—)\s*1(?:\.0)?(?!\d|[.,]\d)"
    r"|[\[(]\s*0(?:\.0)?\s*[,;]\s*1(?:\.0)?\s*[\])]"
    r"|\s*(?:/|\bout\s+of)\s*1(?:\.0)?(?!\d|[.,]\d)"
)
#: The marker of a numbered line of reasoning ("1. The chunk mentions ...").
_LIST_MARKER = re.compile(r"(?m)^\s*\d+[.)]\s+(?=\S)")
#: A number given as a score: after "score", "threshold" or "rating" on the same line ("Score: 0.2",
#: "Relevance Score (): 0.85", ``"score": 0.4``, "the threshold is 0.6").
_LABELLED = re.compile(rf"(?i)\b(?:score|threshold|rating)\b[^\d\n]{{0,40}}?({_NUMBER})")


def ask(llm: LLM, prompt: str, report: StageReport, *, max_tokens: int, stage: str) -> str:
    """Send ``prompt`` as one user message; count the call and its tokens into ``report``."""
    reply = llm.chat([Message("user", prompt)], max_tokens=max_tokens, stage=stage)
    record_usage(llm, report, prompt, reply)
    return reply


def record_usage(llm: LLM, report: StageReport, prompt: str, reply: str) -> None:
    """Count one call into ``report``, in the model's own tokens for what this stage sent and received.

    Billing-grade numbers (cache hits, server-reported usage, cost) are the model layer's ledger's; the
    trace counts tokens per stage so that stages can be compared whatever the cache state.
    """
    report.calls += 1
    report.tokens_in += llm.count_tokens(prompt)
    report.tokens_out += llm.count_tokens(reply)


def _number(text: str) -> float:
    """The value of a :data:`_NUMBER` match (a decimal comma read as a point)."""
    return float(text.replace(",", "."))


def parse_unit_score(reply: str) -> float | None:
    """The score in [0, 1] that ``reply`` gives, or ``None`` when it gives none or is ambiguous.

    The prompts ask for "a single decimal number between 0 and 1. No other text"; models add words
    around it, echo the scale, or number their reasoning. The rule:

    1. Statements of the scale are removed ("between 0 and 1", "0 to 1", "0-1", "[0, 1]", "out of 1",
       "/1"), and so are the markers of numbered lines ("1. ").
    2. If a number follows a "score", "threshold" or "rating" label on its line, the last such number is
       the answer ("Relevance Score (between 0 and 1): 0.85" is 0.85; "1. ... Score: 0.2" is 0.2).
    3. Otherwise every remaining number in [0, 1] must be the same value, and that is the answer ("On a
       scale from 0 to 1, I'd say 0.3" is 0.3); two different ones ("0.7, maybe 0.8") are ambiguous.

    Numbers may have an exponent ("1e-3") or a decimal comma ("0,7"). A score outside [0, 1] ("7",
    "Score: 8") is not silently rescaled: it is ``None``, as is a reply without a number.
    """
    text = _LIST_MARKER.sub("", _SCALE.sub(" ", reply))
    labelled = _LABELLED.findall(text)
    if labelled:
        value = _number(labelled[-1])
        return value if 0.0 <= value <= 1.0 else None
    values = {value for value in map(_number, re.findall(_NUMBER, text)) if 0.0 <= value <= 1.0}
    return values.pop() if len(values) == 1 else None
