"""The HTTP API against its own OpenAPI document, by property: for requests that schemathesis generates
from ``/openapi.json`` (valid ones and, in its negative phase, invalid ones), the server never answers
5xx, and every answer is one the document describes: a documented status, the documented content type
and a body of the documented schema, and a 405's ``Allow`` naming the path's methods.

A real server over its own small knowledge base, with the bundled embedder; its LLM is a scripted
OpenAI-compatible endpoint on loopback (an LLM chunker fuzzed with long texts would keep the bundled
SmolLM2 busy for minutes a request). Run against the whole document, this found ``/metrics`` documented
as JSON, a 405 naming one route's methods and a lone surrogate answered 422 on some routes only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from chunkwise.config import from_dict
from chunkwise.kb import KnowledgeBase
from chunkwise.server import ServerSettings, create_app
from tests.support.openai_server import OpenAIServer
from tests.support.server import running_app

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    allow_header_conformance,
]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Any]:
    """The OpenAPI document of a real server, loaded from it (the server runs while the tests do)."""
    kb = tmp_path_factory.mktemp("fuzz") / "kb"
    with OpenAIServer(answer=lambda request: '{"cuts": []}') as llm:
        config = from_dict({"models": {"llm": "openai:m", "base_url": llm.base_url, "cache": False}})
        with KnowledgeBase(kb, config) as base:
            assert base.add([data_dir / "formats" / "Baggage Allowance.md"]).added
        app = create_app(kb, config=config, settings=ServerSettings(request_timeout=60))
        with running_app(app) as url:
            yield schemathesis.openapi.from_url(f"{url}/openapi.json")


#: Every operation of the document (a test below fails when a route is added and not listed here), and
#: whether requests that break its schema are generated too (those with a body to break).
OPERATIONS = {
    "GET /healthz": False,
    "GET /readyz": False,
    "GET /metrics": False,
    "GET /v1/chunkers": False,
    "POST /v1/chunk": True,
    "POST /v1/search": True,
    "POST /v1/segments": True,
    "POST /v1/answer": True,
    "POST /v1/documents": True,
    "GET /v1/jobs": True,
    "GET /v1/jobs/{job_id}": False,
    "GET /v1/documents": False,
    "GET /v1/documents/{doc_id}": False,
    "DELETE /v1/documents/{doc_id}": False,
}
CASES = [(label, GenerationMode.POSITIVE) for label in OPERATIONS] + [
    (label, GenerationMode.NEGATIVE) for label, negative in OPERATIONS.items() if negative
]


def test_every_operation_is_fuzzed(api_schema: Any) -> None:
    labels = {result.ok().label for result in api_schema.get_all_operations()}
    assert labels == set(OPERATIONS)


@pytest.mark.parametrize(("label", "mode"), CASES, ids=[f"{mode.value} {label}" for label, mode in CASES])
def test_every_answer_is_one_the_api_document_describes(api_schema: Any, label: str, mode: Any) -> None:
    operation = api_schema.find_operation_by_label(label)

    @settings(
        max_examples=100,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def answered_as_documented(case: Any) -> None:
        case.call_and_validate(checks=CHECKS, timeout=120)

    answered_as_documented()
