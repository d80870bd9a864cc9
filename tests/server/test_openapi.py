"""``/openapi.json`` describes what the endpoints take and answer: the multipart upload of
``POST /v1/documents``, and the one error body every refusal has (never the framework's
``{"detail": [...]}``), checked against real error responses of a real server."""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator

from tests.server.test_bad_input import PNG


def _schema(openapi: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in ``openapi``."""
    return Draft202012Validator({**schema, "components": openapi["components"]})


def test_every_operation_documents_the_error_body_it_sends(client: httpx.Client) -> None:
    openapi = client.get("/openapi.json").raise_for_status().json()
    assert "HTTPValidationError" not in openapi["components"]["schemas"]
    errors = {
        ("POST", "/v1/search"): client.post("/v1/search", json={"query": "bags", "k": 0}),
        ("POST", "/v1/segments"): client.post("/v1/segments", json={}),
        ("POST", "/v1/answer"): client.post("/v1/answer", json={"query": 5}),
        ("POST", "/v1/chunk"): client.post("/v1/chunk", json={"text": "a", "chunker": "nope"}),
        ("POST", "/v1/documents"): client.post("/v1/documents", data={"x": "1"}),
        ("GET", "/v1/jobs/{job_id}"): client.get("/v1/jobs/job-0-0"),
        ("GET", "/v1/documents/{doc_id}"): client.get("/v1/documents/nope.md"),
        ("DELETE", "/v1/documents/{doc_id}"): client.delete("/v1/documents/nope.md"),
    }
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "422" not in responses, (method, path)
            for status in ("4XX", "5XX"):
                schema = responses[status]["content"]["application/json"]["schema"]
                response = errors.get((method.upper(), path))
                if response is not None:
                    assert 400 <= response.status_code < 500, response.text
                    _schema(openapi, schema).validate(response.json())
                    assert not _schema(openapi, schema).is_valid({"detail": [{"msg": "x"}]})


def test_the_upload_of_documents_is_documented_as_multipart_files(client: httpx.Client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/v1/documents"]["post"]
    schema = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert schema["required"] == ["files"]
    assert schema["properties"]["files"]["items"] == {"type": "string", "format": "binary"}
    # The documented field is the one the endpoint reads: an unsupported file in it is refused as such.
    png = client.post("/v1/documents", files=[("files", ("image.png", PNG))])
    assert png.status_code == 415, png.text


def test_metrics_are_documented_as_the_text_they_are(client: httpx.Client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/metrics"]["get"]
    assert list(operation["responses"]["200"]["content"]) == ["text/plain"]
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    assert "chunkwise_" in response.text
