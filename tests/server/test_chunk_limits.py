"""``POST /v1/chunk`` honours the served configuration's ``[limits]``, as ingest does: a text past
``max_chars`` is refused (413), a chunking past ``max_chunks`` too (422), whether the text comes as JSON
or as an uploaded file. Real server over the shared knowledge base."""

from __future__ import annotations

import httpx
import pytest

from chunkwise.config import from_dict
from chunkwise.server import create_app
from tests.support.server import running_app

TEXT = " ".join(f"Sentence {i} tells how checked bags are weighed at the counter." for i in range(14))


@pytest.mark.parametrize("upload", [False, True], ids=["json", "file"])
def test_the_chunk_endpoint_refuses_what_the_served_limits_refuse(kb_dir, upload):
    assert len(TEXT) > 800

    def post(http: httpx.Client) -> httpx.Response:
        params = {"max_size": 100}
        if upload:
            form = {"chunker": "fixed", "params": '{"max_size": 100}'}
            return http.post("/v1/chunk", files={"file": ("bags.txt", TEXT.encode())}, data=form)
        return http.post("/v1/chunk", json={"text": TEXT, "chunker": "fixed", "params": params})

    for limits, status, kind in [
        ({"max_chars": 200}, 413, "file_too_large"),
        ({"max_chunks": 3}, 422, "chunking_error"),
        ({}, 200, None),
    ]:
        app = create_app(kb_dir, config=from_dict({"limits": limits}))
        with running_app(app) as url, httpx.Client(base_url=url, timeout=120) as http:
            answer = post(http)
        assert answer.status_code == status, answer.text
        if kind:
            assert answer.json()["error"]["type"] == kind
        else:
            assert len(answer.json()["chunks"]) > 3
