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
    """Invalid UTF-8, nesting past Python's recursion limit, an integer past its digit limit and a lone
    surrogate are malformed JSON (400, ``malformed_json``) whichever route reads the body, as a syntax
    error is (the surrogate was a 422 about a field's type on the routes FastAPI reads)."""
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
            b'{"%s": "a\\ud800b"}' % field,  # a lone surrogate: no Unicode text
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


def test_every_route_refuses_a_body_of_a_media_type_it_does_not_read(client: httpx.Client) -> None:
    """A body of another media type is a 415 on every route that reads one, as ``/v1/chunk`` answers it
    (the JSON routes read a form sent by ``curl -d`` as a wrong JSON type: a 422 about a dictionary), and
    an empty JSON body is malformed JSON on every JSON route (it was a 422 "Field required" on some)."""
    for route in ("/v1/search", "/v1/segments", "/v1/answer", "/v1/chunk"):
        for kind, body in (("text/plain", b"bags"), ("application/x-www-form-urlencoded", b"query=bags")):
            response = client.post(route, content=body, headers={"Content-Type": kind})
            assert response.status_code == 415, (route, kind, response.text)
            assert error_of(response)["type"] == "unsupported_media_type", route
        empty = client.post(route, content=b"", headers={"Content-Type": "application/json"})
        assert empty.status_code == 400, (route, empty.text)
        assert error_of(empty) == {"type": "malformed_json", "message": "the request body is not valid JSON"}
    documents = client.post("/v1/documents", json={"files": ["a.md"]})
    assert documents.status_code == 415, documents.text
    assert error_of(documents) == {
        "type": "unsupported_media_type",
        "message": "send the files as multipart/form-data",
    }
    assert client.get("/healthz").json()["queue"] == 0


def test_json_is_read_under_any_json_media_type_and_no_other(client: httpx.Client) -> None:
    """``application/json`` with a charset or an ``application/...+json`` type: the same JSON body is read
    alike on ``/v1/search`` and ``/v1/chunk``; without a ``Content-Type`` (what ``requests.post(url,
    data=text)`` sends) it is refused alike, with a 415 that says what to send."""
    search = b'{"query": "bags", "k": 2}'
    chunk = b'{"text": "One. Two.", "chunker": "sentence"}'
    for kind in ("application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"):
        found = client.post("/v1/search", content=search, headers={"Content-Type": kind})
        assert found.status_code == 200, (kind, found.text)
        assert len(found.json()["hits"]) == 2
        chunked = client.post("/v1/chunk", content=chunk, headers={"Content-Type": kind})
        assert chunked.status_code == 200, (kind, chunked.text)
        assert [c["text"] for c in chunked.json()["chunks"]] == ["One. Two."]
    for route, body in (("/v1/search", search), ("/v1/chunk", chunk)):
        bare = client.post(route, content=body)
        assert "content-type" not in bare.request.headers
        assert bare.status_code == 415, (route, bare.text)
        assert error_of(bare)["message"].startswith("send application/json"), route


def test_a_wrong_method_is_answered_with_every_method_of_the_path(client: httpx.Client) -> None:
    """``Allow`` of a 405 lists every method the path takes (it named only those of one route, ``POST``
    for ``/v1/documents``, which ``GET`` lists too)."""
    for method, path, allowed in (
        ("PUT", "/v1/documents", "GET, POST"),
        ("PUT", "/v1/documents/a.md", "DELETE, GET"),
        ("PATCH", "/healthz", "GET"),
        ("GET", "/v1/search", "POST"),
    ):
        response = client.request(method, path)
        assert response.status_code == 405, (method, path, response.text)
        assert response.headers["allow"] == allowed, (method, path)
        assert error_of(response)["type"] == "method_not_allowed"
