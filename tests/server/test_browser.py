"""The inspector page in a real browser (headless chromium driven by Playwright) against the real server.

Each view is used as a person would (open a file, pick a chunker, type a question, click a citation),
what it shows is checked against the API's own answers, and a screenshot of each view is saved
(``make screenshots`` refreshes the ones under ``docs/screenshots``). The W-RAC and logprob views run
the bundled SmolLM2.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import CHROMIUM_ARGS, SKIP_REASON, find_chromium, screenshot_dir

CHROMIUM = find_chromium()
if CHROMIUM is None:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402

pytestmark = pytest.mark.slow

#: A hang guard for the model-driven views (SmolLM2 on two shared cores), not a performance bound.
PATIENCE_MS = 900_000
QUESTION = "What should I do if my baggage is damaged?"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


@pytest.fixture
def page(browser: Browser, server_url: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(PATIENCE_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(server_url)
    expect(opened.locator("#chunker option")).not_to_have_count(0)
    yield opened
    context.close()
    assert not errors, errors  # no script error on any view


def _chunk(page: Page, chunker: str, params: dict[str, Any]) -> None:
    """Pick ``chunker``, set ``params``, click Chunk and wait until the request has been answered."""
    page.select_option("#chunker", chunker)
    for name, value in params.items():
        page.fill(f"#param-{name}", str(value))
    page.click("#chunk-run")
    page.wait_for_function("() => !document.querySelector('#chunk-run').disabled", timeout=PATIENCE_MS)
    assert page.locator("#status").inner_text() == ""  # no error from the server


def test_chunk_view_draws_boundaries_and_hover_shows_the_chunk(
    page: Page, client: httpx.Client, data_dir: Path, shots: Path
) -> None:
    path = data_dir / "formats" / "Boarding Process.md"
    page.set_input_files("#chunk-file", str(path))
    _chunk(page, "structure", {"max_size": 300, "min_size": 40})
    expect(page.locator("#chunk-stats")).to_contain_text("structure")
    expected = client.post(
        "/v1/chunk",
        files=[("file", (path.name, path.read_bytes()))],
        data={"chunker": "structure", "params": '{"max_size": 300, "min_size": 40}', "document": "true"},
    ).json()
    view = page.locator("#chunk-view")
    assert view.inner_text() == expected["document"]["text"]  # the whole text, exactly, chunks drawn on it
    spans = view.locator(".chunk")
    drawn = [spans.nth(i).get_attribute("data-chunk") for i in range(spans.count())]
    assert sorted({int(i) for i in drawn}) == list(range(len(expected["chunks"])))
    assert [spans.nth(i).get_attribute("class") for i in range(2)] == ["chunk c0", "chunk c1"]
    second = expected["chunks"][1]
    for i in range(spans.count()):
        if spans.nth(i).get_attribute("data-chunk") == "1":
            spans.nth(i).hover()
            break
    tip = page.locator("#tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text(f"id {second['id']}")
    expect(tip).to_contain_text(f"offsets {second['start']}–{second['end']}")
    expect(tip).to_contain_text("section " + " › ".join(second["section"]))
    expect(tip).to_contain_text(f"tokens {second['tokens']}")
    page.screenshot(path=str(shots / "chunk.png"))


def test_wrac_view_shows_the_plan_outcome_per_window(page: Page, data_dir: Path, shots: Path) -> None:
    text = (data_dir / "formats" / "Boarding Process.md").read_text(encoding="utf-8")
    page.fill("#chunk-text", text[: text.index("## 3.")])
    _chunk(page, "wrac", {"max_size": 300, "min_size": 40})
    plan = page.locator("#plan")
    expect(plan).to_be_visible(timeout=PATIENCE_MS)
    expect(plan.locator("h2")).to_have_text("W-RAC plan: outcome per window")
    outcomes = plan.locator("td.outcome").all_inner_texts()
    assert outcomes
    assert set(outcomes) <= {"valid", "valid_after_reprompt", "repaired", "fallback"}
    expect(page.locator("#chunk-stats")).to_contain_text("model calls")
    assert page.locator("#chunk-view .chunk").count() > 0
    page.screenshot(path=str(shots / "wrac.png"))


def test_logprob_view_draws_the_boundary_curve(page: Page, data_dir: Path, shots: Path) -> None:
    page.fill("#chunk-text", (data_dir / "formats" / "Boarding Process.md").read_text(encoding="utf-8"))
    _chunk(page, "logprob", {"max_size": 600, "min_size": 50})
    curve = page.locator("#curve")
    expect(curve).to_be_visible(timeout=PATIENCE_MS)
    plot = page.locator("#curve-svg")
    assert int(plot.get_attribute("data-points") or 0) > 100
    assert len((plot.locator("polyline").get_attribute("points") or "").split()) > 100
    chosen = plot.locator("line.chosen").count()
    assert chosen >= 1
    assert page.locator("#chunk-view .chunk").count() >= chosen + 1
    curve.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "logprob.png"), full_page=True)


def test_search_view_shows_hits_trace_and_segments(page: Page, client: httpx.Client, shots: Path) -> None:
    page.click("#tabs button[data-view=search]")
    page.fill("#search-q", QUESTION)
    page.press("#search-q", "Enter")
    expected = client.post("/v1/search", json={"query": QUESTION, "k": 5}).json()
    hits = page.locator("#hits li")
    expect(hits).to_have_count(len(expected["hits"]))
    top = expected["hits"][0]
    expect(hits.first.locator(".meta")).to_contain_text(f"{top['doc_id']} · {top['start']}–{top['end']}")
    stages = page.locator("#trace tbody tr td:first-child").all_inner_texts()
    assert stages == [stage["stage"] for stage in expected["trace"]]
    expect(page.locator("#segments li")).not_to_have_count(0)
    page.screenshot(path=str(shots / "search.png"))


def test_answer_citations_jump_to_the_quoted_span(page: Page, client: httpx.Client, shots: Path) -> None:
    page.click("#tabs button[data-view=answer]")
    page.fill("#answer-q", QUESTION)
    page.press("#answer-q", "Enter")
    expected = client.post("/v1/answer", json={"query": QUESTION}).json()
    assert expected["citations"]
    citations = page.locator("#citations li")
    expect(citations).to_have_count(len(expected["citations"]))
    last = expected["citations"][-1]
    citations.last.locator("a.cite").click()
    mark = page.locator("#source-view mark#quote")
    expect(mark).to_have_text(last["quote"])
    expect(page.locator("#source-title")).to_have_text(f"{last['doc_id']} · {last['start']}–{last['end']}")
    document = client.get(f"/v1/documents/{last['doc_id']}").json()
    before = page.evaluate("() => document.querySelector('#source-view').firstChild.textContent")
    assert before == document["text"][: last["start"]]  # the mark sits at the cited offsets
    expect(mark).to_be_in_viewport()
    page.screenshot(path=str(shots / "answer.png"))


def test_documents_view_ingests_an_upload_and_deletes_it(page: Page, data_dir: Path, shots: Path) -> None:
    page.click("#tabs button[data-view=documents]")
    page.set_input_files("#upload-files", str(data_dir / "formats" / "accessories.html"))
    page.click("#upload-form button")
    expect(page.locator("#job")).to_contain_text("done · added 1", timeout=PATIENCE_MS)
    row = page.locator("#documents tr.document", has_text="accessories.html")
    expect(row).to_have_count(1)
    expect(page.locator("#documents tr.document")).to_have_count(7)
    job = page.locator("#jobs tr.job").first  # the newest job first, as GET /v1/jobs lists them
    expect(job).to_contain_text("done")
    expect(job).to_contain_text("accessories.html")
    expect(job).to_contain_text("added 1, replaced 0, skipped 0, failed 0")
    page.screenshot(path=str(shots / "documents.png"))
    row.locator("button").click()
    expect(row).to_have_count(0)
    expect(page.locator("#documents tr.document")).to_have_count(6)


def test_api_view_lists_the_endpoints(page: Page) -> None:
    page.click("#tabs button[data-view=api]")
    expect(page.locator("#api code", has_text=re.compile(r"^/v1/chunk$"))).to_have_count(1)
    expect(page.locator("#api tbody tr")).not_to_have_count(0)
