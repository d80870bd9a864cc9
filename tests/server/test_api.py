"""The HTTP API on a real uvicorn server (127.0.0.1) over a real knowledge base with the bundled models:
each endpoint's body is the CLI's ``--json`` body, jobs ingest uploads, documents can be read and
deleted, and ``/metrics`` counts requests, latency and model calls."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from chunkwise.api import parse
from chunkwise.server import ServerSettings, create_app
from tests.support.cli import run_chunkwise
from tests.support.server import error_of, running_app, upload, wait_job, without_timings

REPO = Path(__file__).resolve().parents[2]
QUESTION = "How much does extra baggage cost?"


def _cli_json(*args: str) -> dict:
    return json.loads(run_chunkwise(*args, "--json", check=True, cwd=REPO).stdout)


def test_chunk_upload_returns_what_chunk_json_prints(client: httpx.Client, data_dir: Path) -> None:
    path = data_dir / "formats" / "Boarding Process.md"
    params = {"max_size": 300, "min_size": 40}
    response = client.post(
        "/v1/chunk",
        files=upload(path, field="file"),
        data={"chunker": "structure", "params": json.dumps(params)},
    )
    assert response.status_code == 200, response.text
    served = response.json()
    printed = _cli_json("chunk", str(path), "--chunker", "structure", "--max-size", "300", "--min-size", "40")
    assert served["doc_id"] == "Boarding Process.md"  # the upload's name, never a server path
    for body in (served, printed):
        del body["doc_id"]
    assert without_timings(served) == without_timings(printed)
    assert served["stats"]["coverage"] == 1.0


def test_chunk_json_text_is_the_document_never_a_file_name(client: httpx.Client) -> None:
    for text in ("/etc/hostname", "tests/data/formats/Boarding Process.md"):
        body = client.post("/v1/chunk", json={"text": text}).raise_for_status().json()
        assert [c["text"] for c in body["chunks"]] == [text]
    markdown = "# Title\n\nFirst paragraph.\n\n## Part\n\nSecond paragraph."
    body = client.post(
        "/v1/chunk",
        json={"text": markdown, "format": "markdown", "chunker": "structure", "params": {"max_size": 40}},
    ).json()
    assert all(markdown[c["start"] : c["end"]] == c["text"] for c in body["chunks"])
    assert body["chunks"][-1]["section"] == ["Title", "Part"]


def test_chunk_json_text_keeps_plain_text_verbatim(client: httpx.Client) -> None:
    """Plain text sent as JSON is the document as sent: a leading U+FEFF is a character of it, not a
    byte-order mark to drop (dropping it shifted every offset by one), as with ``chunkwise.parse``."""
    text = "\ufeffLounges open early. Gates close at departure.\n"
    body = client.post("/v1/chunk", json={"text": text, "document": True}).raise_for_status().json()
    assert body["document"]["text"] == text == parse(text).text
    assert all(text[c["start"] : c["end"]] == c["text"] for c in body["chunks"])
    assert (body["chunks"][0]["start"], body["chunks"][0]["text"][0]) == (0, "\ufeff")


def test_chunk_json_markdown_drops_a_leading_byte_order_mark_as_parse_does(client: httpx.Client) -> None:
    """Markdown sent as JSON is parsed as a file would be: a leading U+FEFF is a byte-order mark (kept,
    it would make the heading a paragraph); offsets index the parsed text, as ``chunkwise.parse`` gives it."""
    markdown = "\ufeff# Title\n\nFirst paragraph.\n\n## Part\n\nSecond paragraph."
    body = client.post(
        "/v1/chunk",
        json={"text": markdown, "format": "markdown", "chunker": "structure", "document": True},
    ).json()
    text = body["document"]["text"]
    assert text == parse(markdown, format="markdown").text == markdown[1:]
    assert all(text[c["start"] : c["end"]] == c["text"] for c in body["chunks"])
    assert body["chunks"][-1]["section"] == ["Title", "Part"]


def test_search_segments_and_answer_return_the_cli_bodies(client: httpx.Client, kb_dir: Path) -> None:
    kb = ("--kb", str(kb_dir))
    cases = [
        ("/v1/search", {"query": QUESTION, "k": 3}, ("search", QUESTION, *kb, "-k", "3")),
        ("/v1/segments", {"query": QUESTION}, ("segments", QUESTION, *kb)),
        ("/v1/answer", {"query": QUESTION}, ("ask", QUESTION, *kb)),
    ]
    for path, request, command in cases:
        served = client.post(path, json=request).raise_for_status().json()
        printed = _cli_json(*command)
        # The query embedding may come from the cache in one run and not the other: compare the rest.
        assert served.pop("accounting").keys() == printed.pop("accounting").keys()
        assert without_timings(served) == without_timings(printed), path
    hits = client.post("/v1/search", json={"query": QUESTION, "k": 3}).json()["hits"]
    assert next(h["doc_id"] for h in hits) == "samples/docs/Special Baggage Policy.docx"


def test_upload_becomes_a_job_then_a_document_that_can_be_deleted(
    client: httpx.Client, data_dir: Path
) -> None:
    files = [*upload(data_dir / "formats" / "Careers at CloudWay 24.pdf"), ("files", ("empty.md", b""))]
    response = client.post("/v1/documents", files=files)
    assert response.status_code == 202, response.text
    assert response.headers["location"] == f"/v1/jobs/{response.json()['id']}"
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "done"
    assert job["result"]["added"] == ["Careers at CloudWay 24.pdf"]
    assert job["result"]["failed"] == [{"source": "empty.md", "error": "file is empty"}]
    assert [e["status"] for e in job["events"]] == ["failed", "added"]  # failures are told at once
    assert (job["done"], job["total"]) == (2, 2)
    embedder = job["result"]["accounting"]["by_role"]["embedder"]
    assert embedder["calls"] + embedder["cache_hits"] >= 1  # the vectors may come from the model cache

    listed = {d["doc_id"]: d for d in client.get("/v1/documents").json()["documents"]}
    assert listed["Careers at CloudWay 24.pdf"]["chunks"] == job["result"]["chunks"]
    document = client.get("/v1/documents/Careers at CloudWay 24.pdf").json()
    assert len(document["chunks"]) == job["result"]["chunks"]
    assert all(document["text"][u["start"] : u["end"]] for u in document["units"])
    hits = client.post("/v1/search", json={"query": "careers at CloudWay 24 jobs", "k": 1}).json()["hits"]
    assert hits[0]["doc_id"] == "Careers at CloudWay 24.pdf"

    assert client.delete("/v1/documents/Careers at CloudWay 24.pdf").json() == {
        "deleted": "Careers at CloudWay 24.pdf"
    }
    assert client.get("/v1/documents/Careers at CloudWay 24.pdf").status_code == 404
    again = wait_job(client, client.post("/v1/documents", files=files[:1]).json()["id"])
    assert again["result"]["added"] == ["Careers at CloudWay 24.pdf"]  # sent again, stored again
    skipped = wait_job(client, client.post("/v1/documents", files=files[:1]).json()["id"])
    assert skipped["result"]["skipped"] == ["Careers at CloudWay 24.pdf"]
    client.delete("/v1/documents/Careers at CloudWay 24.pdf").raise_for_status()  # as it was


def test_chunkers_health_openapi_and_the_page(client: httpx.Client) -> None:
    chunkers = client.get("/v1/chunkers").json()["chunkers"]
    assert {"recursive", "structure", "wrac", "logprob"} <= set(chunkers)
    assert chunkers["recursive"]["max_size"] == 500
    assert "llm" not in chunkers["wrac"]
    assert client.get("/healthz").json() == {"status": "ok", "queue": 0}
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/v1/chunk",
        "/v1/documents",
        "/v1/jobs/{job_id}",
        "/v1/search",
        "/v1/segments",
        "/v1/answer",
    ):
        assert path in paths
    assert "multipart/form-data" in paths["/v1/chunk"]["post"]["requestBody"]["content"]
    page = client.get("/")
    assert page.status_code == 200
    assert "<title>chunkwise inspector</title>" in page.text
    assert "http://" not in page.text
    assert "https://" not in page.text
    assert client.get("/static/app.js").status_code == 200


def test_metrics_count_requests_latency_and_model_calls(client: httpx.Client) -> None:
    client.post("/v1/search", json={"query": "lounge access rules", "k": 2}).raise_for_status()
    client.post("/v1/search", json={"query": ""})  # no word: 400
    client.post("/v1/search", json={"query": "lounge", "k": 0})  # out of range: 422
    text = client.get("/metrics").text
    assert 'chunkwise_http_requests_total{method="POST",route="/v1/search",status="200"}' in text
    assert 'chunkwise_http_requests_total{method="POST",route="/v1/search",status="400"}' in text
    assert 'chunkwise_http_requests_total{method="POST",route="/v1/search",status="422"}' in text
    assert 'chunkwise_http_request_seconds_bucket{le="0.005",method="POST",route="/v1/search"}' in text
    assert 'chunkwise_model_tokens_total{kind="input",role="embedder"}' in text
    assert "chunkwise_model_cost_dollars_total" in text
    assert "chunkwise_ingest_queue_depth 0.0" in text


def test_an_api_key_guards_the_api_not_the_page(kb_dir: Path) -> None:
    app = create_app(kb_dir, settings=ServerSettings(api_key="s3cret"))
    with running_app(app) as url, httpx.Client(base_url=url, timeout=300) as http:
        missing = http.get("/v1/documents")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        assert error_of(missing) == {"type": "unauthorized", "message": "a bearer key is required"}
        wrong = http.get("/v1/documents", headers={"Authorization": "Bearer nope"})
        assert error_of(wrong)["message"] == "the bearer key is wrong"
        assert http.get("/metrics").status_code == 401
        good = http.get("/v1/documents", headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 200
        assert http.get("/healthz").status_code == 200
        assert http.get("/").status_code == 200


def _refuse(request: dict[str, object]) -> str:
    """A chat endpoint that refuses every request (the loopback server answers HTTP 400)."""
    raise TypeError("scripted refusal")


def test_a_failing_answer_model_is_a_502_and_a_spent_budget_a_402(tmp_path: Path, data_dir: Path) -> None:
    """The answer step's model failures reach the error mapping (they are not "not found" answers); every
    model is the loopback server's (its embeddings work, its chat refuses), so nothing loads."""
    from chunkwise.config import from_dict
    from chunkwise.kb import KnowledgeBase
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(answer=_refuse) as model:
        models = {"llm": "openai:m", "embedder": "openai:m", "base_url": model.base_url, "cache": False}
        sections = {"models": models, "answer": {"mode": "llm"}}
        with KnowledgeBase(tmp_path / "kb", from_dict(sections)) as kb:
            assert kb.add([data_dir / "formats" / "Baggage Allowance.md"]).added
        app = create_app(tmp_path / "kb", config=from_dict(sections))
        with running_app(app) as url, httpx.Client(base_url=url, timeout=60) as http:
            refused = http.post("/v1/answer", json={"query": QUESTION})
            assert refused.status_code == 502
            assert "chat/completions: HTTP 400" in error_of(refused)["message"]
        budget = from_dict({**sections, "models": {**models, "max_tokens": 20}})
        app = create_app(tmp_path / "kb", config=budget)
        with running_app(app) as url, httpx.Client(base_url=url, timeout=60) as http:
            spent = http.post("/v1/answer", json={"query": QUESTION})
            assert spent.status_code == 402
            assert error_of(spent)["type"] == "budget_exceeded"
