"""Chunker parameters keep the JSON type they were sent with, and a form's ``params`` that Python's JSON
reader cannot hold (nested too deeply, an integer of thousands of digits) is a malformed-JSON 400, never
a 500: each on a real server."""

from __future__ import annotations

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.server import error_of

FORM_FILE = [("file", ("a.md", b"# A\n\ntext"))]


def _invalid_message(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    error = error_of(response)
    assert error["type"] == "invalid_request", error
    return error["message"]


@settings(max_examples=20, deadline=None)
@given(
    name=st.sampled_from(["max_size", "min_size"]),
    chunker=st.sampled_from(["fixed", "recursive", "sentence", "structure"]),
    whole=st.integers(min_value=0, max_value=100_000),
)
def test_a_whole_float_for_an_int_parameter_is_refused_naming_it(
    server_url: str, name: str, chunker: str, whole: int
) -> None:
    """``10.0`` for an ``int`` parameter is a wrong JSON type, as ``"10"`` is: a 422 naming the parameter,
    never rounded to ten (the chunker's own coercion takes a whole float for an ``int``)."""
    value = float(whole)
    with httpx.Client(base_url=server_url, timeout=600) as http:
        body = {"text": "a text", "chunker": chunker, "params": {name: value}}
        message = _invalid_message(http.post("/v1/chunk", json=body))
        assert message == f"params: {name}: expected int, got {value!r}"
        form = http.post(
            "/v1/chunk", files=FORM_FILE, data={"chunker": chunker, "params": f'{{"{name}": {value!r}}}'}
        )
        assert _invalid_message(form) == message


def test_floats_and_ints_stay_accepted_where_the_parameter_is_a_float(client: httpx.Client) -> None:
    for overlap in (0.5, 0.0, 1.0, 0):
        body = {"text": "a text", "chunker": "fixed", "params": {"max_size": 10, "overlap": overlap}}
        response = client.post("/v1/chunk", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["params"]["overlap"] == overlap


def test_form_params_the_json_reader_cannot_hold_are_malformed_json(client: httpx.Client) -> None:
    for params in (
        '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}",  # nested past Python's recursion limit
        "[" * 100_000,
        '{"max_size": ' + "9" * 5000 + "}",  # past Python's limit on integer digits
    ):
        response = client.post("/v1/chunk", files=FORM_FILE, data={"params": params})
        assert response.status_code == 400, response.text
        assert error_of(response) == {
            "type": "malformed_json",
            "message": "field 'params' is not valid JSON",
        }
    assert client.get("/healthz").status_code == 200


def test_json_bodies_the_reader_cannot_hold_are_malformed_json_on_every_route(client: httpx.Client) -> None:
    """Invalid UTF-8, nesting past Python's recursion limit and an integer past its digit limit are
    malformed JSON (400, ``malformed_json``) whichever route reads the body, as a syntax error is."""
    headers = {"Content-Type": "application/json"}
    for route, field in (
        ("/v1/search", b"query"),
        ("/v1/segments", b"query"),
        ("/v1/answer", b"query"),
        ("/v1/chunk", b"text"),
    ):
        for body in (
            b'{"%s": "\xff\xfe bags"}' % field,
            b'{"%s": "bags", "x": %s%s}' % (field, b"[" * 100_000, b"]" * 100_000),
            b'{"%s": "bags", "x": %s}' % (field, b"9" * 5000),
        ):
            response = client.post(route, content=body, headers=headers)
            assert response.status_code == 400, (route, response.text)
            assert error_of(response) == {
                "type": "malformed_json",
                "message": "the request body is not valid JSON",
            }, route


def test_a_chunker_name_parameter_that_is_no_string_is_refused(client: httpx.Client) -> None:
    """``inner`` names a chunker: a list or an object there is refused, never a 500: a wrong type (422)
    where the chunker declares ``inner``, a wrong chunker name (400) where it does not."""
    for inner in ([1], {"a": 1}, 5):
        wrong_type = client.post(
            "/v1/chunk", json={"text": "a text", "chunker": "sections", "params": {"inner": inner}}
        )
        assert _invalid_message(wrong_type) == f"params: inner: expected str, got {inner!r}"
        undeclared = client.post(
            "/v1/chunk", json={"text": "a text", "chunker": "recursive", "params": {"inner": inner}}
        )
        assert undeclared.status_code == 400, undeclared.text
        error = error_of(undeclared)
        assert error["type"] == "config_error"
        assert error["message"].startswith("inner must be one of fixed, recursive"), error
