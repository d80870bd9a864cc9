"""An upload of several files names each document once: two files whose names are the same (once any
folder part is dropped) are refused before anything is queued, never stored one over the other."""

from __future__ import annotations

import httpx

from tests.support.server import error_of


def test_two_uploads_of_one_name_are_refused_whole(client: httpx.Client) -> None:
    before = client.get("/v1/documents").json()["documents"]
    for names in (("notes.md", "notes.md"), ("a/notes.md", "b/notes.md"), ("notes.md", "..\\notes.md")):
        files = [("files", (name, f"# Notes {i}\n\nVersion {i}.".encode())) for i, name in enumerate(names)]
        response = client.post("/v1/documents", files=files)
        assert response.status_code == 422, response.text
        assert error_of(response) == {
            "type": "invalid_request",
            "message": "field 'files': two files are named 'notes.md'",
        }
    assert client.get("/healthz").json()["queue"] == 0
    assert client.get("/v1/documents").json()["documents"] == before
