"""Lenient JSON extraction: what small models actually produce, and invariants over arbitrary JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.models.json_repair import parse_lenient
from chunkwise.models.structured import skeleton

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
CONTAINERS = st.lists(JSON, max_size=4) | st.dictionaries(st.text(max_size=6), JSON, max_size=4)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here is the JSON:\n{"a": "b"}\nHope it helps.', {"a": "b"}),
        ('{"a": [1, 2,], }', {"a": [1, 2]}),
        ('{"cuts": [3, 7', {"cuts": [3, 7]}),
        ('{"cuts": [3, 7],', {"cuts": [3, 7]}),
        ('{"title": "Intro', {"title": "Intro"}),
        ('{"a": 1, "b":', {"a": 1, "b": None}),
        ('{"a": 1, "b"', {"a": 1, "b": None}),
        ('[{"x": "}"}, {"y": 2}] trailing words', [{"x": "}"}, {"y": 2}]),
        ("```\n[1, 2, 3]\n```", [1, 2, 3]),
        ('Here you go: {"```": null}', {"```": None}),  # a fence marker inside a string is text
        ('```json\n{"```": null}\n```', {"```": None}),
        ('```json\n"fenced"\n```', "fenced"),
        ('"just a string"', "just a string"),
    ],
)
def test_repairs_what_small_models_write(answer: str, expected: Any) -> None:
    assert parse_lenient(answer) == expected


@pytest.mark.parametrize("answer", ["", "The capital of France is Paris.", "{]", '{"a": tru'])
def test_unrecoverable_answers_raise_value_error(answer: str) -> None:
    with pytest.raises(ValueError, match="JSON"):
        parse_lenient(answer)


@given(JSON)
def test_valid_json_round_trips(value: Any) -> None:
    assert parse_lenient(json.dumps(value)) == value


@given(CONTAINERS, st.sampled_from(["Here you go: {}", "```json\n{}\n```", "{}\n\nThat is all.", "  {}  "]))
def test_containers_survive_prose_and_fences(value: Any, frame: str) -> None:
    text = frame.replace("{}", json.dumps(value), 1)
    assert parse_lenient(text) == value


@given(st.dictionaries(st.text(max_size=6), st.lists(st.integers(), max_size=5), min_size=1, max_size=4))
def test_truncated_object_keeps_its_complete_members(value: dict[str, list[int]]) -> None:
    text = json.dumps(value)
    cut = text[: text.rindex("]") + 1]  # the last list complete, the object left open
    assert parse_lenient(cut) == value


@pytest.mark.parametrize(
    "frame",
    ["{}", "```json\n{}\n```", "Here: {}", "{} and more", '{"a": {}'],
    ids=["bare", "fenced", "prose before", "prose after", "truncated"],
)
def test_nesting_past_the_decoders_depth_is_a_value_error(frame: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ValueError, match="too deeply"):
        parse_lenient(frame.replace("{}", deep, 1))


def test_skeleton_follows_the_schema_shape() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "cuts": {"type": "array", "items": {"type": "integer"}},
            "kind": {"enum": ["a", "b"]},
            "score": {"type": ["number", "null"]},
        },
    }
    assert skeleton(schema) == {"title": "...", "cuts": [0], "kind": "a", "score": 0.0}
