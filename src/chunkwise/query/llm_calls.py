"""One place where query stages talk to the LLM: a single-prompt call that counts its tokens, and the
parser for the bare numbers ChunkRAG's prompts ask for."""

from __future__ import annotations

import re

from chunkwise.models.protocols import LLM, Message
from chunkwise.query.trace import StageReport

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)")


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


def parse_unit_score(reply: str) -> float | None:
    """The first number in ``reply`` if it lies in [0, 1], else ``None`` (the reply is not a score).

    The prompts ask for "a single decimal number between 0 and 1. No other text"; small models add words
    around it ("Score: 0.8"), which is tolerated, but a number outside [0, 1] is not silently rescaled.
    """
    match = _NUMBER.search(reply)
    if match is None:
        return None
    value = float(match.group())
    return value if 0.0 <= value <= 1.0 else None
