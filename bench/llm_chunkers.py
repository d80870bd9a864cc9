"""W-RAC against agentic chunking on the same documents, then every LLM chunker with invariants checked.

Part 1 runs ``wrac`` and ``agentic`` on the first ``--limit`` Markdown files of
``../shared/data/formats/`` (sorted by path) and prints input and output tokens, calls, cost, time,
W-RAC plan outcomes and agentic alignment failures. Tokens are counted by the model's own tokenizer
(SmolLM2 by default); cost applies the list price of GPT-4.1, the model of the W-RAC paper's agentic
baseline: $2.00 per million input tokens, $8.00 per million output tokens. The paper's claim to check:
about 85% fewer output tokens for W-RAC (84.6% in its Table).

Part 2 runs all four LLM chunkers (``wrac``, ``agentic``, ``logprob``, ``sections``) over the first
``--check-limit`` Markdown files (all of them by default) and checks exact offsets, the hard size limit
and coverage of every chunk, counting violations (there must be none) and window outcomes.

The LLM cache is off, so every call is made and timed; structured output gets one attempt per call
(the chunkers re-ask or fall back themselves). Results go to ``bench/results/llm_chunkers.json``.

    .venv/bin/python bench/llm_chunkers.py --limit 2 --check-limit 1
    .venv/bin/python bench/llm_chunkers.py --limit 0 --check-limit 12 --check-chunkers logprob,sections \
        --out bench/results/llm_chunkers_check.json
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import time
from pathlib import Path
from typing import Any

from bench_data import DEFAULT_DATA, add_data_option
from chunkwise.chunking import Chunk, get_chunker, get_counter
from chunkwise.document import Document
from chunkwise.models import Models
from chunkwise.models.config import ModelsConfig, Price
from chunkwise.parsing import parse_file

RESULTS = Path(__file__).parent / "results" / "llm_chunkers.json"
#: GPT-4.1 list price (USD per million tokens), the reference for the cost column.
REFERENCE_PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)
CHUNKERS = ("wrac", "agentic", "logprob", "sections")


def markdown_files(root: Path) -> list[Path]:
    """Every Markdown file under ``root/<organisation>/md/``, sorted."""
    return sorted(root.glob("*/md/*.md"))


def violations(doc: Document, chunks: list[Chunk], unit: str, max_size: int) -> list[str]:
    """Broken invariants: offsets, size limit, order and coverage of non-whitespace text."""
    counter = get_counter(unit)
    found: list[str] = []
    for chunk in chunks:
        if doc.text[chunk.start : chunk.end] != chunk.text:
            found.append(f"offsets of chunk at {chunk.start}")
        if counter.count(chunk.text) > max_size:
            found.append(f"chunk at {chunk.start} over {max_size}")
    for prev, nxt in itertools.pairwise(chunks):
        if prev.end > nxt.start or doc.text[prev.end : nxt.start].strip():
            found.append(f"gap or overlap at {prev.end}")
    if "".join("".join(c.text for c in chunks).split()) != "".join(doc.text.split()):
        found.append("coverage")
    return found


def run_chunker(
    name: str, doc: Document, llm_spec: str, params: dict[str, Any], base: ModelsConfig | None = None
) -> dict[str, Any]:
    """One chunker on one document in a fresh model context; tokens, cost, time, outcomes, violations.

    ``base`` is the model configuration to start from (default: the environment's)."""
    # No cache (every call is made and timed); one structured attempt per call, since the chunkers
    # re-ask (wrac) or fall back (sections) themselves.
    config = dataclasses.replace(
        base or ModelsConfig.load(), llm=llm_spec, cache=False, structured_attempts=1
    )
    models = Models(config)
    chunker = get_chunker(name, models=models, **params)
    began = time.perf_counter()
    run = chunker.run(doc)  # type: ignore[attr-defined]
    seconds = time.perf_counter() - began
    totals = models.totals()
    return {
        "chunker": name,
        "doc": doc.id,
        "calls": totals.calls,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "cost": REFERENCE_PRICE.cost(totals.input_tokens, totals.output_tokens),
        "seconds": round(seconds, 2),
        "chunks": len(run.chunks),
        "outcomes": run.report.outcomes(),
        "stats": run.report.stats,
        "violations": violations(doc, run.chunks, params["unit"], params["max_size"]),
    }


def _sum(rows: list[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows)


def _merge(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    merged: dict[str, int] = {}
    for row in rows:
        for name, count in row[key].items():
            if isinstance(count, int | float) and not isinstance(count, bool):
                merged[name] = merged.get(name, 0) + int(count)
    return merged


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of wrac vs agentic totals, with the output-token reduction."""
    lines = [
        "| chunker | docs | calls | input tokens | output tokens | cost (USD, GPT-4.1 prices) | time (s) "
        "| chunks | plan outcomes / alignment |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, dict[str, float]] = {}
    for name in ("wrac", "agentic"):
        mine = [r for r in rows if r["chunker"] == name]
        if not mine:
            continue
        totals[name] = {k: _sum(mine, k) for k in ("input_tokens", "output_tokens", "cost", "seconds")}
        if name == "wrac":
            detail = ", ".join(f"{k}: {v}" for k, v in _merge(mine, "outcomes").items())
        else:
            stats = _merge(mine, "stats")
            counts = ", ".join(f"{k} {stats.get(k, 0)}" for k in ("exact", "fuzzy", "failed"))
            unaligned = stats.get("unaligned_chars", 0)
            detail = f"pieces {stats.get('pieces', 0)}: {counts}; unaligned chars {unaligned}"
        t = totals[name]
        lines.append(
            f"| {name} | {len(mine)} | {int(_sum(mine, 'calls'))} | {int(t['input_tokens'])} "
            f"| {int(t['output_tokens'])} | {t['cost']:.5f} | {t['seconds']:.1f} "
            f"| {int(_sum(mine, 'chunks'))} | {detail} |"
        )
    if len(totals) == 2 and totals["agentic"]["output_tokens"]:
        w, a = totals["wrac"], totals["agentic"]
        output = w["output_tokens"] / a["output_tokens"]
        lines.append(
            f"| wrac / agentic | | | {w['input_tokens'] / max(a['input_tokens'], 1):.2f}x "
            f"| {output:.2f}x ({1 - output:.1%} fewer) "
            f"| {w['cost'] / max(a['cost'], 1e-12):.2f}x "
            f"| {w['seconds'] / max(a['seconds'], 1e-9):.2f}x | | |"
        )
    return "\n".join(lines)


def invariants_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the invariant checks per chunker."""
    lines = [
        "| chunker | files | chunks | violations | window outcomes | time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for name in CHUNKERS:
        mine = [r for r in rows if r["chunker"] == name]
        if mine:
            outcomes = ", ".join(f"{k}: {v}" for k, v in _merge(mine, "outcomes").items())
            bad = sum(len(r["violations"]) for r in mine)
            seconds = _sum(mine, "seconds")
            lines.append(
                f"| {name} | {len(mine)} | {int(_sum(mine, 'chunks'))} | {bad} | {outcomes} | {seconds:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(parser, DEFAULT_DATA / "formats")
    parser.add_argument("--limit", type=int, default=3, help="documents for wrac vs agentic")
    parser.add_argument(
        "--check-limit", type=int, default=0, help="documents for the invariant pass (0: all)"
    )
    parser.add_argument("--llm", default="local", help="LLM spec (local, openai:<model>)")
    parser.add_argument("--max-size", type=int, default=800)
    parser.add_argument("--unit", default="chars")
    parser.add_argument("--check-chunkers", default=",".join(CHUNKERS), help="comma-separated, for part 2")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON results go")
    args = parser.parse_args()
    params = {"max_size": args.max_size, "min_size": args.max_size // 10, "unit": args.unit}
    files = markdown_files(args.data)
    compare: list[dict[str, Any]] = []
    for path in files[: args.limit]:
        doc = parse_file(path, doc_id=str(path.relative_to(args.data)))
        for name in ("wrac", "agentic"):
            compare.append(run_chunker(name, doc, args.llm, params))
            print(f"[compare] {name} {doc.id}: {compare[-1]['seconds']} s", flush=True)
    checks: list[dict[str, Any]] = []
    for path in files[: args.check_limit or len(files)]:
        doc = parse_file(path, doc_id=str(path.relative_to(args.data)))
        for name in args.check_chunkers.split(","):
            checks.append(run_chunker(name, doc, args.llm, params))
            print(f"[check] {name} {doc.id}: {len(checks[-1]['violations'])} violations", flush=True)
    print()
    print(f"LLM: {args.llm}; sizes: max {args.max_size} {args.unit}, min {params['min_size']}")
    print()
    print(comparison_table(compare))
    print()
    print(invariants_table(checks))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "llm": args.llm,
                "params": params,
                "reference_price": {"model": "gpt-4.1", "input_per_mtok": 2.0, "output_per_mtok": 8.0},
                "compare": compare,
                "checks": checks,
            },
            indent=1,
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
