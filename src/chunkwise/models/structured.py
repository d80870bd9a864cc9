"""Structured output on top of plain chat: JSON against a schema, repaired, validated and retried.

Every backend gets structured output the same way, through its own ``chat``: an example of the schema's
shape goes into the last user message, the answer is parsed with
:func:`~chunkwise.models.json_repair.parse_lenient` (code fences, prose around the value, trailing
commas, truncation) and validated with ``jsonschema``. When that
fails the model is shown its answer and the exact error and asked again, up to ``attempts`` calls in all;
then :class:`~chunkwise.errors.LLMResponseError` names the model and the last reason.

Because the loop only calls ``chat``, the accounting and cache wrappers see (and cache) every attempt,
and a re-run with the same inputs replays the same attempts from the cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jsonschema

from chunkwise.errors import ConfigError, LLMResponseError
from chunkwise.models.json_repair import parse_lenient
from chunkwise.models.protocols import Message

ChatFn = Callable[..., str]

DEFAULT_ATTEMPTS = 3


def schema_instruction(schema: dict[str, Any]) -> str:
    """The text appended to the last user message: an example of the expected shape, not the schema.

    Small models copy a concrete shape far more reliably than they read a schema: SmolLM2-135M answers a
    bare (or an accompanying) schema by echoing the schema back. Constraints the example cannot show
    (enums beyond the first value, bounds, required keys) reach the model through the validation error
    quoted in the retry message.
    """
    return "\n\nReply with only a JSON value of this form (no prose, no code fence): " + json.dumps(
        skeleton(schema)
    )


def skeleton(schema: dict[str, Any]) -> Any:
    """An example value with the shape of ``schema``: placeholders for leaves, one item per array."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    placeholders: dict[str, Any] = {
        "string": "...",
        "integer": 0,
        "number": 0.0,
        "boolean": True,
        "null": None,
    }
    if kind == "object" or "properties" in schema:
        return {key: skeleton(sub) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        items = schema.get("items")
        return [skeleton(items)] if isinstance(items, dict) else []
    return placeholders.get(str(kind), "...")


def complete_structured(
    chat: ChatFn,
    model: str,
    messages: Sequence[Message],
    schema: dict[str, Any],
    *,
    max_tokens: int,
    stage: str,
    attempts: int = DEFAULT_ATTEMPTS,
) -> Any:
    """Ask through ``chat`` until an answer parses and validates against ``schema``.

    ``chat`` is called as ``chat(messages, max_tokens=..., stage=...)``; ``model`` names the model in the
    error raised after ``attempts`` failed answers.
    """
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"invalid JSON schema for structured output: {exc.message}") from exc
    validator = jsonschema.Draft202012Validator(schema)
    conversation = _with_instruction(messages, schema)
    reason = "no attempt was made"
    for _ in range(max(1, attempts)):
        answer = chat(conversation, max_tokens=max_tokens, stage=stage)
        try:
            value = parse_lenient(answer)
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is None:
                return value
            reason = f"schema violation at {_path(error)}: {error.message}"
        except ValueError as exc:
            reason = str(exc)
        conversation = [
            *conversation,
            Message("assistant", answer),
            Message("user", f"That reply is invalid: {reason}. Reply again with only the corrected JSON."),
        ]
    raise LLMResponseError(model, f"no valid JSON for the schema after {max(1, attempts)} attempts: {reason}")


class _ChatModel(Protocol):
    """What :class:`StructuredViaChat` needs from the class it is mixed into."""

    _attempts: int

    @property
    def name(self) -> str: ...

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str: ...


class StructuredViaChat:
    """Mixin giving an LLM its ``structured`` method: :func:`complete_structured` over its own ``chat``.

    The class provides ``name``, ``chat`` and ``_attempts`` (the number of answers tried before giving up),
    so every backend and wrapper retries the same way.
    """

    def structured(
        self: _ChatModel,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        max_tokens: int = 1024,
        stage: str = "",
    ) -> Any:
        """A JSON value valid against ``schema``, each attempt one :meth:`chat` call."""
        return complete_structured(
            self.chat,
            self.name,
            messages,
            schema,
            max_tokens=max_tokens,
            stage=stage,
            attempts=self._attempts,
        )


def _with_instruction(messages: Sequence[Message], schema: dict[str, Any]) -> list[Message]:
    """``messages`` with the schema instruction appended to the last user message (or a new one)."""
    conversation = list(messages)
    for index in range(len(conversation) - 1, -1, -1):
        if conversation[index].role == "user":
            last = conversation[index]
            conversation[index] = Message("user", last.content + schema_instruction(schema))
            return conversation
    return [*conversation, Message("user", schema_instruction(schema).lstrip())]


def _path(error: jsonschema.ValidationError) -> str:
    """A JSON-pointer-like location of a validation error (``$`` for the root)."""
    return "$" + "".join(f"[{part!r}]" for part in error.absolute_path)
