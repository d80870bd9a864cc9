"""A request past its timeout makes no further model call: its work ends and frees its reader slot,
instead of running on for no one (on a real server, with a scripted LLM endpoint on loopback that
answers slowly and counts the calls)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from chunkwise.api import parse_text
from chunkwise.chunking import get_chunker
from chunkwise.config import from_dict
from chunkwise.models.config import ModelsConfig
from chunkwise.models.context import Models
from chunkwise.server import ServerSettings, create_app
from tests.support.openai_server import OpenAIServer
from tests.support.server import PATIENCE_S, error_of, running_app

TEXT = "\n\n".join(
    f"Paragraph {i} tells of voyage {i}: its ports, its cargo and its crew." for i in range(80)
)
WRAC = {"text": TEXT, "format": "markdown", "chunker": "wrac", "params": {"window_size": 256}}


def test_an_llm_chunker_past_the_timeout_stops_at_its_next_call(tmp_path: Path) -> None:
    delay = [0.0]

    def slow(request: dict[str, Any]) -> str:  # no plan W-RAC can use: it falls back window by window
        time.sleep(delay[0])
        return "no plan here"

    with OpenAIServer(answer=slow) as llm:
        models = {"llm": "openai:m", "base_url": llm.base_url, "cache": False}
        alone = get_chunker("wrac", models=Models(ModelsConfig(**models)), window_size=256)
        assert alone.chunk(parse_text(TEXT, "markdown", "voyages"))
        needed = len(llm.requests)  # the calls the whole text takes
        assert needed >= 40
        delay[0] = 0.25
        settings = ServerSettings(request_timeout=2, readers=1)
        app = create_app(tmp_path / "kb", config=from_dict({"models": models}), settings=settings)
        with running_app(app) as url, httpx.Client(base_url=url, timeout=PATIENCE_S) as http:
            before = len(llm.requests)
            timed_out = http.post("/v1/chunk", json=WRAC)
            assert timed_out.status_code == 504, timed_out.text
            assert error_of(timed_out)["type"] == "timeout"
            deadline = time.monotonic() + PATIENCE_S
            while http.post("/v1/chunk", json={"text": "a", "chunker": "fixed"}).status_code != 200:
                assert time.monotonic() < deadline, "the reader slot was never freed"
            made = len(llm.requests) - before
            time.sleep(4 * delay[0])  # a call still in flight would have arrived by now
            assert len(llm.requests) - before == made
    assert made < needed // 2, (made, needed)
