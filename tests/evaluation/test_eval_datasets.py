"""Loading, validating and subsampling evaluation data sets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chunkwise.errors import DatasetError
from chunkwise.evaluation.datasets import load_dataset, subsample

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def write(folder: Path, docs: list[dict[str, object]], queries: list[object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text(
        "".join((q if isinstance(q, str) else json.dumps(q)) + "\n" for q in queries), encoding="utf-8"
    )
    return folder


DOCS = [{"doc_id": "a", "text": "Alpha beta gamma."}, {"doc_id": "b", "text": "Delta é epsilon."}]


def test_span_dataset_loads_verbatim_with_valid_spans(data_dir: Path) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    assert dataset.name == "xquad_mini"
    assert dataset.has_spans
    texts = {doc.id: doc.text for doc in dataset.documents}
    lines = (data_dir / "eval" / "xquad_mini" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    raw = {row["qid"]: row for row in map(json.loads, lines)}
    for query in dataset.queries:
        assert query.spans
        assert query.gold_docs == tuple(dict.fromkeys(span.doc_id for span in query.spans))
        for span, given in zip(query.spans, raw[query.qid]["spans"], strict=True):
            assert texts[span.doc_id][span.start : span.end] == given["text"]
        assert "paragraph_span" in query.metadata
        assert query.answer


def test_document_gold_dataset(data_dir: Path) -> None:
    dataset = load_dataset(data_dir / "eval" / "rmc_mini")
    assert not dataset.has_spans
    assert all(q.gold_docs and not q.spans for q in dataset.queries)
    assert {"type", "org", "facts"} <= dataset.queries[0].metadata.keys()


def test_offsets_are_code_points(tmp_path: Path) -> None:
    # "é" is one code point (two UTF-8 bytes): "epsilon" starts at 8.
    folder = write(
        tmp_path / "d",
        DOCS,
        [{"qid": "q", "query": "why", "spans": [{"doc_id": "b", "start": 8, "end": 15, "text": "epsilon"}]}],
    )
    dataset = load_dataset(folder)
    span = dataset.queries[0].spans[0]
    text = next(doc.text for doc in dataset.documents if doc.id == span.doc_id)
    assert text[span.start : span.end] == "epsilon"


def test_a_query_may_give_documents_alone(tmp_path: Path) -> None:
    """``spans`` is optional, as the format says: a query with ``gold_docs`` alone is scored on documents."""
    folder = write(tmp_path / "d", DOCS, [{"qid": "q", "query": "why", "gold_docs": ["b", "a", "b"]}])
    (query,) = load_dataset(folder).queries
    assert (query.spans, query.gold_docs) == ((), ("b", "a"))


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            {"qid": "q", "query": "why", "spans": [{"doc_id": "a", "start": 0, "end": 5, "text": "Alphx"}]},
            "does not match",
        ),
        ({"qid": "q", "query": "why", "spans": [{"doc_id": "a", "start": 0, "end": 99}]}, "out of range"),
        ({"qid": "q", "query": "why", "spans": [{"doc_id": "a", "start": 3, "end": 3}]}, "out of range"),
        ({"qid": "q", "query": "why", "spans": [{"doc_id": "z", "start": 0, "end": 1}]}, "not in the corpus"),
        ({"qid": "q", "query": "why", "spans": [], "gold_docs": ["z"]}, "not in the corpus"),
        (
            {
                "qid": "q",
                "query": "why",
                "spans": [{"doc_id": "a", "start": 0, "end": 5}],
                "gold_docs": ["b"],
            },
            "span document 'a' is not among the query's gold_docs",
        ),
        ({"qid": "q", "query": "why", "spans": []}, "neither spans nor gold_docs"),
        ({"qid": "q", "query": "why"}, "neither spans nor gold_docs"),
        ({"qid": "q", "query": "why", "spans": "a", "gold_docs": ["a"]}, "field 'spans' must be a list"),
        ({"qid": "q", "query": "why", "spans": [], "gold_docs": "a"}, "gold_docs"),
        ({"qid": "q", "spans": []}, "'query'"),
        ({"qid": 7, "query": "why", "spans": []}, "'qid'"),
        ({"qid": "q", "query": "why", "spans": [{"doc_id": "a", "start": "0", "end": 1}]}, "'start'"),
        ({"qid": "q", "query": "?!", "spans": [], "gold_docs": ["a"]}, "holds no word to search for"),
        (
            {"qid": "q", "query": "a \ud800 b", "spans": [], "gold_docs": ["a"]},
            "lone surrogate at character 2",
        ),
        ('{"qid": "q", "query": ', "invalid JSON"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_bad_query_lines_name_the_file_and_line(tmp_path: Path, query: object, reason: str) -> None:
    good = {"qid": "ok", "query": "fine", "spans": [{"doc_id": "a", "start": 0, "end": 5, "text": "Alpha"}]}
    folder = write(tmp_path / "d", DOCS, [good, query])
    with pytest.raises(DatasetError) as err:
        load_dataset(folder)
    assert err.value.source == f"{(folder / 'queries.jsonl').as_posix()}:2"
    assert reason in err.value.reason


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"doc_id": "", "text": "hello there"}', "the document's id is blank"),
        ('{"doc_id": " ", "text": "hello there"}', "the document's id is blank"),
        ('{"doc_id": "n", "text": "hello\\u0000there"}', "the document's text holds a NUL character at"),
        ("[" * 100_000, "invalid JSON: nested too deeply"),
    ],
    ids=["empty-id", "blank-id", "nul", "nested"],
)
def test_bad_corpus_lines_name_the_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    """What no store could index is refused when the data set loads, naming its line (a blank id or a
    NUL character failed only when the first configuration indexed it, without the line; a deeply
    nested line raised a RecursionError)."""
    folder = write(tmp_path / "d", DOCS, [{"qid": "q", "query": "why", "gold_docs": ["a"]}])
    corpus = folder / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_dataset(folder)
    assert err.value.source == f"{corpus.as_posix()}:{len(DOCS) + 1}"
    assert err.value.reason.startswith(reason)


def test_a_byte_order_mark_opening_a_file_is_read_past(tmp_path: Path) -> None:
    """Files written on Windows often open with a UTF-8 byte-order mark; it is no part of the first line."""
    folder = write(tmp_path / "d", DOCS, [{"qid": "q", "query": "why", "gold_docs": ["a"]}])
    for name in ("corpus.jsonl", "queries.jsonl"):
        (folder / name).write_bytes(b"\xef\xbb\xbf" + (folder / name).read_bytes())
    dataset = load_dataset(folder)
    assert [d.id for d in dataset.documents] == [d["doc_id"] for d in DOCS]
    assert [q.qid for q in dataset.queries] == ["q"]


def test_text_that_is_not_unicode_names_the_file_and_line(tmp_path: Path) -> None:
    """A byte that is not UTF-8, or a JSON escape of a lone surrogate in a document, is refused where it
    stands, not later as a raw decoding or encoding error."""
    good = {"qid": "ok", "query": "fine", "spans": [], "gold_docs": ["a"]}
    folder = write(tmp_path / "latin1", DOCS, [good, good | {"qid": "q2"}])
    queries = folder / "queries.jsonl"
    lines = queries.read_bytes().splitlines(keepends=True)
    queries.write_bytes(lines[0] + lines[1].replace(b"fine", b"caf\xe9"))
    with pytest.raises(DatasetError) as err:
        load_dataset(folder)
    assert (err.value.source, err.value.reason) == (
        f"{queries.as_posix()}:2",
        "not UTF-8 text (byte 0xe9 at column 28)",
    )
    folder = write(tmp_path / "surrogate", [*DOCS, {"doc_id": "s", "text": "bad \udc80 text"}], [good])
    with pytest.raises(
        DatasetError, match="field 'text' is not valid Unicode text: a lone surrogate at character 4"
    ):
        load_dataset(folder)


def test_duplicates_and_missing_files_are_reported(tmp_path: Path) -> None:
    q = {"qid": "q", "query": "why", "spans": [], "gold_docs": ["a"]}
    with pytest.raises(DatasetError, match="duplicate qid"):
        load_dataset(write(tmp_path / "dq", DOCS, [q, q]))
    with pytest.raises(DatasetError, match="duplicate doc_id"):
        load_dataset(write(tmp_path / "dd", [*DOCS, DOCS[0]], [q]))
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(DatasetError, match="no queries"):
        load_dataset(write(tmp_path / "empty", DOCS, []))


def test_subsample_is_deterministic_and_keeps_the_needed_documents(data_dir: Path) -> None:
    full = load_dataset(data_dir / "eval" / "rmc_mini")
    first = load_dataset(data_dir / "eval" / "rmc_mini", limit=3, seed=7)
    again = subsample(full, 3, seed=7)
    assert [q.qid for q in first.queries] == [q.qid for q in again.queries]
    assert len(first.queries) == 3
    # queries keep file order; documents are exactly the gold ones, in corpus order.
    order = [q.qid for q in full.queries]
    assert [order.index(q.qid) for q in first.queries] == sorted(order.index(q.qid) for q in first.queries)
    needed = {d for q in first.queries for d in q.gold_docs}
    assert {doc.id for doc in first.documents} == needed
    seeds = {tuple(q.qid for q in subsample(full, 3, seed=seed).queries) for seed in range(10)}
    assert len(seeds) > 1


def test_distractors_add_other_documents(data_dir: Path) -> None:
    full = load_dataset(data_dir / "eval" / "xquad_mini")
    base = subsample(full, 2, seed=0)
    wider = subsample(full, 2, seed=0, distractors=1)
    assert [q.qid for q in base.queries] == [q.qid for q in wider.queries]
    assert len(wider.documents) == min(len(base.documents) + 1, len(full.documents))
    assert {d.id for d in base.documents} <= {d.id for d in wider.documents}
    assert subsample(full, 100, distractors=100).documents == full.documents
    with pytest.raises(DatasetError):
        subsample(full, -1)


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared evaluation data is not on this machine")
@pytest.mark.parametrize(
    "name", ["chroma", "anthropic_code", "xquad_en", "qmsum_train", "qmsum_val", "rmc_dev"]
)
def test_every_shared_dataset_loads(name: str) -> None:
    dataset = load_dataset(SHARED / name)
    assert dataset.queries
    assert dataset.has_spans == (name != "rmc_dev")


def test_subsample_golden_and_stable_when_queries_are_added(data_dir: Path) -> None:
    full = load_dataset(data_dir / "eval" / "rmc_mini")
    # ranked by sha256("0:<qid>"): fixed for every platform and Python version
    assert [q.qid for q in subsample(full, 3, seed=0).queries] == ["rmc-1088", "rmc-1220", "rmc-1241"]
    fewer = replace(full, queries=full.queries[1:])
    kept = {q.qid for q in subsample(full, 5, seed=0).queries} - {full.queries[0].qid}
    assert kept <= {q.qid for q in subsample(fewer, 5, seed=0).queries}
