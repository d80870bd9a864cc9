"""The JSON result format, its independent recomputation, and the HTML report."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from chunkwise.errors import ConfigError
from chunkwise.evaluation import (
    Dataset,
    EvaluationReport,
    QueryRun,
    Retrieved,
    Span,
    StageCost,
    chunk_stats,
    load_dataset,
    parse_metrics,
    recompute,
    score_config,
    verify,
)
from chunkwise.evaluation.html_report import render_html
from chunkwise.evaluation.metrics import omega_chunks

SPAN_METRICS = ("recall@5", "precision@5", "iou@5", "precision_omega", "char_recall@5", "char_precision@5")
DOC_METRICS = ("doc_recall@5", "doc_precision@5", "mrr@5", "ndcg@5")


def windows(dataset: Dataset, size: int, overlap: int) -> list[Span]:
    """Fixed character windows over every document: a stand-in chunking for the report tests."""
    step = size - overlap
    return [
        Span(doc.id, start, min(start + size, len(doc.text)))
        for doc in dataset.documents
        for start in range(0, len(doc.text), step)
    ]


def runs_for(dataset: Dataset, chunks: list[Span], k: int) -> list[QueryRun]:
    """Rank chunks by shared lowercase words with the query (deterministic, ties by position)."""
    texts = {doc.id: doc.text for doc in dataset.documents}
    runs = []
    for query in dataset.queries:
        words = set(query.query.lower().split())
        scored = sorted(
            (
                (len(words & set(texts[c.doc_id][c.start : c.end].lower().split())), -i, c)
                for i, c in enumerate(chunks)
            ),
            key=lambda t: (t[0], t[1]),
            reverse=True,
        )
        retrieved = tuple(Retrieved(c.doc_id, c.start, c.end, float(score)) for score, _, c in scored[:k])
        runs.append(
            QueryRun(
                query.qid, retrieved, query.spans, query.gold_docs, tuple(omega_chunks(chunks, query.spans))
            )
        )
    return runs


def build_report(
    dataset: Dataset, metrics: tuple[str, ...], sizes: tuple[tuple[int, int], ...]
) -> EvaluationReport:
    parsed = parse_metrics(metrics)
    configs = []
    for size, overlap in sizes:
        chunks = windows(dataset, size, overlap)
        configs.append(
            score_config(
                f"window-{size}-{overlap}",
                {"chunker": "window", "size": size, "overlap": overlap},
                runs_for(dataset, chunks, 8),
                parsed,
                costs=[
                    StageCost("chunk", seconds=0.01),
                    StageCost("retrieve", seconds=0.02, calls=3, input_tokens=40),
                ],
                chunks=chunk_stats([c.end - c.start for c in chunks]),
            )
        )
    return EvaluationReport(
        dataset={"name": dataset.name, "queries": len(dataset.queries), "documents": len(dataset.documents)},
        metrics=tuple(m.name for m in parsed),
        configs=tuple(configs),
    )


@pytest.fixture(scope="module")
def span_report(data_dir: Path) -> EvaluationReport:
    return build_report(
        load_dataset(data_dir / "eval" / "xquad_mini"), SPAN_METRICS + DOC_METRICS, ((200, 0), (400, 100))
    )


def test_aggregates_recompute_from_the_json_alone(span_report: EvaluationReport, tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    span_report.write(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert verify(data) == []
    for config in data["configs"]:
        assert recompute(data)[config["name"]] == pytest.approx(config["metrics"], abs=1e-12)


def test_recall_recomputed_with_character_sets_matches(span_report: EvaluationReport) -> None:
    """A second, set-based recomputation of recall@5 straight from the JSON rows."""
    data = json.loads(json.dumps(span_report.to_dict()))
    for config in data["configs"]:
        values = []
        for row in config["queries"]:
            top = [item for item in row["retrieved"] if item["rank"] <= 5]
            got = {(i["doc_id"], c) for i in top for c in range(i["start"], i["end"])}
            gold = {(g["doc_id"], c) for g in row["gold"]["spans"] for c in range(g["start"], g["end"])}
            values.append(len(got & gold) / len(gold))
        assert sum(values) / len(values) == pytest.approx(config["metrics"]["recall@5"], abs=1e-12)


def test_verify_catches_a_changed_number_or_item(span_report: EvaluationReport) -> None:
    data = span_report.to_dict()
    data["configs"][1]["metrics"]["iou@5"] += 0.01
    problems = verify(data)
    assert len(problems) == 1
    assert problems[0].startswith("window-400-100: iou@5 stored")
    data = span_report.to_dict()
    row = next(q for q in data["configs"][0]["queries"] if q["metrics"]["recall@5"] > 0)
    row["retrieved"] = []
    assert any("recall@5" in problem for problem in verify(data))


def test_verify_reports_a_stored_nan(span_report: EvaluationReport) -> None:
    # NaN compares false with everything: a check written as "differs by more than" would pass it.
    data = span_report.to_dict()
    data["configs"][0]["metrics"]["recall@5"] = math.nan
    assert [p.split(" stored")[0] for p in verify(data)] == ["window-200-0: recall@5"]


def test_json_round_trip(span_report: EvaluationReport, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    span_report.write(path)
    again = EvaluationReport.read(path)
    assert again == span_report
    assert not list(tmp_path.glob("*.partial"))
    with pytest.raises(ConfigError, match="format version"):
        EvaluationReport.from_dict({**span_report.to_dict(), "format_version": 99})


def _strict_json(text: str) -> object:
    """``text`` parsed as standard JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are refused."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not standard JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_number_that_is_not_finite_is_written_as_null(
    span_report: EvaluationReport, tmp_path: Path
) -> None:
    """A NaN aggregate, a NaN per-query value and an infinite score: the file stays standard JSON, the
    three are ``null``, they read back as NaN, and verify names the aggregate it cannot trust."""
    config = span_report.configs[0]
    record = config.queries[0]
    first = replace(record.retrieved[0], score=math.inf)
    record = replace(
        record, retrieved=(first, *record.retrieved[1:]), metrics={**record.metrics, "mrr@5": math.nan}
    )
    config = replace(
        config, metrics={**config.metrics, "recall@5": math.nan}, queries=(record, *config.queries[1:])
    )
    report = replace(span_report, configs=(config, *span_report.configs[1:]))
    path = tmp_path / "nan.json"
    report.write(path)
    data = _strict_json(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    stored = data["configs"][0]
    assert stored["metrics"]["recall@5"] is None
    assert stored["queries"][0]["metrics"]["mrr@5"] is None
    assert stored["queries"][0]["retrieved"][0]["score"] is None
    again = EvaluationReport.read(path)
    assert math.isnan(again.configs[0].metrics["recall@5"])
    assert math.isnan(again.configs[0].queries[0].metrics["mrr@5"])
    assert math.isnan(again.configs[0].queries[0].retrieved[0].score)
    assert [p.split(" stored")[0] for p in verify(data)] == ["window-200-0: recall@5"]


def test_rows_hold_ranks_scores_and_metrics(span_report: EvaluationReport) -> None:
    row = span_report.to_dict()["configs"][0]["queries"][0]
    assert [item["rank"] for item in row["retrieved"]] == list(range(1, len(row["retrieved"]) + 1))
    assert set(row["metrics"]) == set(SPAN_METRICS + DOC_METRICS)
    assert {"doc_id", "start", "end", "score"} <= row["retrieved"][0].keys()


def test_document_gold_report(data_dir: Path) -> None:
    dataset = load_dataset(data_dir / "eval" / "rmc_mini")
    report = build_report(dataset, DOC_METRICS, ((300, 0),))
    assert verify(report.to_dict()) == []
    with pytest.raises(ConfigError, match="span gold"):
        build_report(dataset, ("recall@5",), ((300, 0),))


def test_interval_against_an_identical_configuration_is_zero(span_report: EvaluationReport) -> None:
    twin = EvaluationReport(
        span_report.dataset, span_report.metrics, (span_report.configs[0], span_report.configs[0])
    )
    for interval in next(iter(twin.intervals().values())).values():
        assert (interval.difference, interval.low, interval.high) == (0.0, 0.0, 0.0)


def test_intervals_need_the_same_queries(span_report: EvaluationReport) -> None:
    first, second = span_report.configs
    other = replace(second, queries=second.queries[1:])
    with pytest.raises(ConfigError, match="different queries"):
        replace(span_report, configs=(first, other)).intervals()


def test_one_query_gives_no_interval_and_nothing_marked_significant(span_report: EvaluationReport) -> None:
    """A single query would give the zero-width interval [d, d], which excludes 0 whenever the
    configurations differ on it: the page shows the difference alone instead."""
    first, second = (
        replace(c, queries=c.queries[:1], metrics=dict(c.queries[0].metrics)) for c in span_report.configs
    )
    assert first.metrics != second.metrics
    single = replace(span_report, configs=(first, second))
    assert single.intervals() == {}
    page = render_html(single, resamples=50)
    assert 'class="sig"' not in page
    assert "no interval: fewer than two queries" in page
    assert "Δ" in page


def test_html_report_is_self_contained(span_report: EvaluationReport) -> None:
    page = render_html(span_report, resamples=200)
    assert page.startswith("<!DOCTYPE html>")
    # no script, stylesheet, image or font fetched from anywhere: the only URL is the SVG namespace.
    assert set(re.findall(r"https?://[^\"' )]+", page)) == {"http://www.w3.org/2000/svg"}
    for tag in ("<script", "<link", "<img"):
        assert tag not in page
    for name in ("window-200-0", "window-400-100", *SPAN_METRICS):
        assert name in page
    # two curves (recall, precision against k), the chunk-size histogram, the cost-quality scatter.
    assert page.count("<svg") == 4
    assert "recall against k" in page
    assert "precision against k" in page
    assert "Δ" in page


def test_html_escapes_names(data_dir: Path) -> None:
    report = build_report(load_dataset(data_dir / "eval" / "rmc_mini"), DOC_METRICS, ((300, 0),))
    bad = replace(report.configs[0], name="<b>x</b>")
    page = render_html(EvaluationReport(report.dataset, report.metrics, (bad,)))
    assert "<b>x</b>" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "doc_recall against k" in page
