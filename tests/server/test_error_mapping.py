"""Errors that name the server's own files never quote those files to a client (the log has them): a
bundled model file that cannot be used is the server's fault, a 503 that says what failed, not a 400
with its absolute path; an ingest job whose store fails reports it without the store's directory."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from chunkwise.errors import ModelFileError
from chunkwise.kb import KnowledgeBase
from chunkwise.models.onnx_embedder import BGE_SMALL, OnnxEmbedder
from chunkwise.server.errors import public_message, typed_status
from chunkwise.server.writer import _run_job

SPAWN = multiprocessing.get_context("spawn")


def test_an_unusable_model_file_is_a_503_that_names_no_path(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "bge"
    folder.mkdir(parents=True)
    with pytest.raises(ModelFileError) as caught:  # the real error a missing model file raises
        OnnxEmbedder(folder / "model.onnx", folder, recipe=BGE_SMALL)
    assert str(folder) in str(caught.value)
    assert typed_status(caught.value) == (503, "model_unavailable")
    message = public_message(caught.value)
    assert str(tmp_path) not in message
    assert "/" not in message
    assert message.startswith("a model file of the server is missing or unreadable")


def test_a_jobs_store_error_names_no_path_and_the_log_gets_it(tmp_path: Path) -> None:
    """An ingest job whose store fails ends ``failed`` with the store's error type and a message without
    the store's directory; the whole message goes to the server's log (the end's ``traceback``)."""
    kb = KnowledgeBase(tmp_path / "kb")
    kb.store.close()  # every statement of the job now fails in the store
    try:
        end = _run_job(kb, [("a.md", b"# A\n\ntext")], lambda event: None, SPAWN.Event())
    finally:
        kb.close()
    assert end["status"] == "failed"
    assert end["error"] == {"type": "store_unavailable", "message": "the knowledge base cannot be used now"}
    assert str(tmp_path) in end["traceback"]
