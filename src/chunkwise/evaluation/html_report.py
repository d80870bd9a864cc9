"""A self-contained HTML page for an :class:`~chunkwise.evaluation.report.EvaluationReport`.

The page has no external asset (inline CSS, inline SVG): it can be mailed or attached to an issue. It
shows the side-by-side table (each later configuration against the first, with paired bootstrap
intervals of the difference), the cost and time per stage, and four figures: recall and precision
against k (span metrics, or document metrics for a data set with document gold only), chunk-size
histograms, and quality against cost.
"""

from __future__ import annotations

import json
import math
from html import escape

from chunkwise.evaluation.bootstrap import DifferenceInterval
from chunkwise.evaluation.costs import total
from chunkwise.evaluation.metrics.registry import parse_metric
from chunkwise.evaluation.report import ConfigResult, EvaluationReport
from chunkwise.evaluation.svg import bar_chart, line_chart, nice_ticks, scatter_chart

MAX_CURVE_K = 20
HISTOGRAM_BINS = 16
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.ci{color:#666;font-size:85%}.sig{font-weight:bold}
.chart{margin:4px;border:1px solid #eee}pre{background:#f6f6f6;padding:8px}
"""


def render_html(
    report: EvaluationReport, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> str:
    """The HTML page for ``report`` (intervals with ``resamples``, ``confidence`` and ``seed``)."""
    intervals = report.intervals(resamples=resamples, confidence=confidence, seed=seed)
    dataset = report.dataset
    sections = [
        f"<h1>Evaluation: {escape(str(dataset.get('name', '')))}</h1>",
        "<p>"
        + ", ".join(f"{escape(str(k))}: {escape(str(v))}" for k, v in dataset.items() if k != "name")
        + "</p>",
        _metrics_table(report, intervals, confidence),
        _cost_table(report),
        _chunk_table(report),
        "<h2>Figures</h2>",
        _curves(report),
        _histograms(report),
        _cost_quality(report),
        "<h2>Configurations</h2>",
        *(
            f"<h3>{escape(c.name)}</h3><pre>{escape(json.dumps(c.config, indent=1, sort_keys=True))}</pre>"
            for c in report.configs
        ),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>chunkwise evaluation: {escape(str(dataset.get('name', '')))}</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(sections)}</body></html>"
    )


def _metrics_table(
    report: EvaluationReport, intervals: dict[str, dict[str, DifferenceInterval]], confidence: float
) -> str:
    head = "".join(f"<th>{escape(c.name)}</th>" for c in report.configs)
    rows = []
    for metric in report.metrics:
        cells = []
        for i, config in enumerate(report.configs):
            value = f"{config.metrics[metric]:.4f}"
            if i and not intervals:
                delta = config.metrics[metric] - report.configs[0].metrics[metric]
                value = f"{value}<br><span class='ci'>Δ {delta:+.4f}</span>"
            elif i:
                ci = intervals[config.name][metric]
                mark = ' class="sig"' if ci.excludes_zero else ""
                value = (
                    f"<span{mark}>{value}</span><br><span class='ci'>Δ {ci.difference:+.4f} "
                    f"[{ci.low:+.4f}, {ci.high:+.4f}]</span>"
                )
            cells.append(f"<td>{value}</td>")
        rows.append(f"<tr><td>{escape(metric)}</td>{''.join(cells)}</tr>")
    note = ""
    if len(report.configs) > 1:
        note = f"<p class='ci'>Δ: difference to <b>{escape(report.configs[0].name)}</b>"
        if intervals:
            note += f" with its {confidence:.0%} paired bootstrap interval over the queries"
            note += "; bold where it excludes 0"
        else:
            note += "; no interval: fewer than two queries"
        note += ".</p>"
    return f"<h2>Metrics</h2><table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>{note}"


def _cost_table(report: EvaluationReport) -> str:
    stages = list(dict.fromkeys(cost.stage for c in report.configs for cost in c.costs))
    if not stages:
        return ""
    head = "".join(f"<th>{escape(c.name)}</th>" for c in report.configs)
    rows = []
    for stage in [*stages, "total"]:
        cells = []
        for config in report.configs:
            costs = [c for c in config.costs if stage in (c.stage, "total")]
            cost = total(costs)
            tokens = cost.input_tokens + cost.output_tokens
            cells.append(
                f"<td>{cost.seconds:.2f} s<br>"
                f"<span class='ci'>{tokens} tokens, ${cost.cost_usd:.4f}</span></td>"
                if costs
                else "<td>-</td>"
            )
        rows.append(f"<tr><td>{escape(stage)}</td>{''.join(cells)}</tr>")
    return f"<h2>Cost and time per stage</h2><table><tr><th>stage</th>{head}</tr>{''.join(rows)}</table>"


def _chunk_table(report: EvaluationReport) -> str:
    if all(c.chunks is None for c in report.configs):
        return ""
    head = "".join(f"<th>{escape(c.name)}</th>" for c in report.configs)
    rows = []
    summaries = [c.chunks.summary() if c.chunks else None for c in report.configs]
    for field in ("count", "mean", "median", "p95", "min", "max"):
        cells = "".join(f"<td>{s[field]:,.0f}</td>" if s else "<td>-</td>" for s in summaries)
        rows.append(f"<tr><td>{field}</td>{cells}</tr>")
    return f"<h2>Chunks (characters)</h2><table><tr><th></th>{head}</tr>{''.join(rows)}</table>"


def _curve(config: ConfigResult, base: str, max_k: int) -> list[tuple[float, float]]:
    runs = [record.run() for record in config.queries]
    points = []
    for k in range(1, max_k + 1):
        metric = parse_metric(f"{base}@{k}")
        points.append((float(k), math.fsum(metric(run) for run in runs) / len(runs)))
    return points


def _curves(report: EvaluationReport) -> str:
    if not report.configs:
        return ""
    span_gold = all(record.gold_spans for c in report.configs for record in c.queries)
    recall, precision = ("recall", "precision") if span_gold else ("doc_recall", "doc_precision")
    max_k = min(MAX_CURVE_K, max((len(r.retrieved) for c in report.configs for r in c.queries), default=1))
    max_k = max(max_k, 1)
    return "".join(
        line_chart(
            f"{base} against k",
            "k (retrieved items)",
            base,
            [(c.name, _curve(c, base, max_k)) for c in report.configs],
        )
        for base in (recall, precision)
    )


def _histograms(report: EvaluationReport) -> str:
    with_chunks = [(c.name, c.chunks) for c in report.configs if c.chunks is not None and c.chunks.count]
    if not with_chunks:
        return ""
    # the same bins for every configuration, so the bars line up
    edges = nice_ticks(0.0, max(stats.lengths[-1] for _, stats in with_chunks), HISTOGRAM_BINS)
    series = [(name, [float(n) for n in stats.histogram(edges)]) for name, stats in with_chunks]
    labels = [f"{edge:g}" for edge in edges[:-1]]
    return bar_chart("chunk sizes", "characters (bin start)", "chunks", labels, series)


def _cost_quality(report: EvaluationReport) -> str:
    if not report.configs or not report.metrics:
        return ""
    totals = [total(c.costs) for c in report.configs]
    by_money = any(t.cost_usd > 0 for t in totals)
    quality = report.metrics[0]
    points = [
        (c.name, t.cost_usd if by_money else t.seconds, c.metrics[quality])
        for c, t in zip(report.configs, totals, strict=True)
    ]
    x_label = "cost (USD)" if by_money else "time (seconds)"
    return scatter_chart(f"{quality} against {x_label}", x_label, quality, points)
