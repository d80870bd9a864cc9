"""A scripted in-process LLM for the pure query-stage tests: replies come from a function of the prompt.

It implements the :class:`~chunkwise.models.protocols.LLM` protocol so a stage cannot tell it from a real
model; tests that need a real model or a real HTTP server use those instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chunkwise.models.protocols import Message, TokenLogprobs


class ScriptedLLM:
    """Answers ``chat`` with ``reply(prompt)`` and ``structured`` with ``structured_reply(prompt)``."""

    def __init__(
        self,
        reply: Callable[[str], str] = lambda prompt: "0.5",
        structured_reply: Callable[[str], Any] | None = None,
    ) -> None:
        self.reply = reply
        self.structured_reply = structured_reply
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return "scripted"

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        self.prompts.append(messages[-1].content)
        return self.reply(messages[-1].content)

    def structured(
        self, messages: Sequence[Message], schema: dict[str, Any], *, max_tokens: int = 1024, stage: str = ""
    ) -> Any:
        self.prompts.append(messages[-1].content)
        assert self.structured_reply is not None
        return self.structured_reply(messages[-1].content)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        raise NotImplementedError
