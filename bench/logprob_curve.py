"""LlamaChunk on this machine: the boundary score curve before and after decay normalisation, and speed.

Speed of the local model before and after parallel windows with key/value reuse (:data:`SETTINGS`): each
chunks ``--speed-docs`` one after the other in one process, as an ingest does, alternating for
``--rounds`` rounds (the fastest round counts); the chosen boundary offsets must be identical (asserted).
Tokens/s are scored tokens per wall-clock second; CPU seconds are this process's, the work done.

Runs the ``logprob`` chunker with the bundled SmolLM2-135M on one Markdown document, writes its score
curve (``bench/results/logprob_curve.csv``) and plots the marker log-probability with its fitted
``a + b·log(position)`` baseline, and the normalised score with the threshold and the chosen boundaries
(``bench/results/logprob_curve.png``; needs matplotlib, the ``bench`` extra). Then it asks the same
model to *generate* the document with markers inserted, the slow way LlamaChunk avoids, and prints
tokens per second for both (one forward pass per window against one decoding step per output token).
The generation is capped at ``--generate-tokens`` output tokens and its rate extrapolated to the whole
document. Results also go to ``bench/results/logprob_curve.json``.

    .venv/bin/python bench/logprob_curve.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_data import DEFAULT_DATA
from chunkwise.chunking import get_chunker
from chunkwise.chunking.llm_report import ChunkingRun
from chunkwise.chunking.logprob import SYSTEM_PROMPT
from chunkwise.models.local_llm import LocalLLM
from chunkwise.models.protocols import Message
from chunkwise.parsing import parse_file

FORMATS = DEFAULT_DATA / "formats" / "CloudWay-24" / "md"
DOC = FORMATS / "Boarding Process.md"
#: Two long documents (five windows of 4,000 characters each).
SPEED_DOCS = (FORMATS / "Mumbai Inbound & Outbound Flights.md", FORMATS / "Careers at CloudWay 24.md")
RESULTS = Path(__file__).parent / "results"


def plot(run: ChunkingRun, path: Path, title: str) -> bool:
    """Raw log-probability with its baseline above, the normalised score below; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    curve = run.curve
    assert curve is not None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 6), sharex=True)
    top.plot(curve.offsets, curve.logprobs, lw=0.7, label=f"log P({curve.marker}) before the token")
    top.plot(curve.offsets, curve.baseline, lw=1.5, label="fitted baseline a + b·log(position)")
    top.set_ylabel("log-probability")
    top.legend(loc="lower right")
    top.set_title(f"{title}: before normalisation")
    bottom.plot(curve.offsets, curve.scores, lw=0.7, label="score (residual / std)")
    bottom.axhline(curve.threshold, color="red", lw=0.8, ls="--", label=f"threshold {curve.threshold}")
    for cut in curve.chosen:
        bottom.axvline(cut, color="green", lw=0.6, alpha=0.6)
    bottom.set_xlabel("character offset")
    bottom.set_ylabel("normalised score")
    bottom.legend(loc="lower right")
    bottom.set_title("after normalisation (green: chosen boundaries)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


#: The local model's settings compared: the former one window at a time with every pass computed whole,
#: and the current two windows at a time with key/value reuse.
SETTINGS = {"before": {"kv_cache": 0, "workers": 1}, "after": {"kv_cache": 2, "workers": 2}}


def speed(paths: list[Path], max_size: int, rounds: int) -> dict[str, dict[str, float]]:
    """Scored tokens per second before and after; asserts identical boundaries."""
    docs = [parse_file(path, doc_id=path.name) for path in paths]
    best: dict[str, dict[str, float]] = {}
    boundaries: dict[str, list[tuple[int, ...]]] = {}
    for round_index in range(rounds):
        labels = list(SETTINGS) if round_index % 2 == 0 else list(SETTINGS)[::-1]
        for label in labels:
            llm = LocalLLM(kv_cache=SETTINGS[label]["kv_cache"])
            chunker = get_chunker(
                "logprob",
                llm=llm,
                max_size=max_size,
                min_size=max_size // 10,
                workers=SETTINGS[label]["workers"],
            )
            wall, cpu = time.perf_counter(), time.process_time()
            runs = [chunker.run(doc) for doc in docs]  # type: ignore[attr-defined]
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            tokens = sum(run.report.stats["scored_tokens"] for run in runs)
            windows = sum(len(run.report.windows) for run in runs)
            boundaries[label] = [run.curve.chosen for run in runs]
            reused = llm.reused_tokens
            row = {"tokens": tokens, "windows": windows, "wall_s": wall, "cpu_s": cpu, "reused": reused}
            if label not in best or wall < best[label]["wall_s"]:
                best[label] = row
            done = f"{tokens} tokens, {wall:.1f} s, {cpu:.1f} s CPU"
            print(f"[speed] round {round_index + 1} {label}: {done}", flush=True)
    assert boundaries["after"] == boundaries["before"], "the boundaries changed"
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--max-size", type=int, default=800)
    parser.add_argument("--generate-tokens", type=int, default=128)
    parser.add_argument("--speed-docs", type=Path, nargs="*", default=list(SPEED_DOCS))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    doc = parse_file(args.doc, doc_id=args.doc.name)
    llm = LocalLLM()
    chunker = get_chunker("logprob", llm=llm, max_size=args.max_size, min_size=args.max_size // 10)
    began = time.perf_counter()
    run = chunker.run(doc)  # type: ignore[attr-defined]
    scoring_s = time.perf_counter() - began
    assert run.curve is not None
    run.curve.write(RESULTS / "logprob_curve.csv")
    plotted = plot(run, RESULTS / "logprob_curve.png", doc.id)
    doc_tokens = llm.count_tokens(doc.text)
    messages = [Message("system", SYSTEM_PROMPT.format(marker=run.curve.marker)), Message("user", doc.text)]
    began = time.perf_counter()
    llm.chat(messages, max_tokens=args.generate_tokens)
    generate_s = time.perf_counter() - began
    generated = llm.last_usage.output_tokens if llm.last_usage else args.generate_tokens
    generate_rate = generated / generate_s
    scoring_rate = run.report.stats["scored_tokens"] / scoring_s
    full_generation_s = doc_tokens * 1.05 / generate_rate  # the text plus a marker every ~20 tokens
    print(
        f"document: {doc.id}, {len(doc.text)} chars, {doc_tokens} SmolLM2 tokens, marker {run.curve.marker!r}"
    )
    print()
    print("| method | tokens | seconds | tokens/s |")
    print("|---|---|---|---|")
    print(
        f"| logprob scoring (teacher-forced windows) | {run.report.stats['scored_tokens']} | {scoring_s:.1f} "
        f"| {scoring_rate:.1f} |"
    )
    print(
        f"| generation with markers (measured on {generated} tokens) | {generated} | {generate_s:.1f} "
        f"| {generate_rate:.1f} |"
    )
    print(
        f"| generation, extrapolated to the whole document | {int(doc_tokens * 1.05)} "
        f"| {full_generation_s:.1f} "
        f"| {generate_rate:.1f} |"
    )
    print()
    print(
        f"scoring is {full_generation_s / scoring_s:.1f}x faster than generating the marked-up text; "
        f"{len(run.chunks)} chunks, {len(run.curve.chosen)} boundaries chosen; plot written: {plotted}"
    )
    speeds = speed(args.speed_docs, args.max_size, args.rounds)
    print()
    print(
        "| local model | documents | windows | scored tokens | reused tokens | wall s | tokens/s | CPU s "
        "| tokens per CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, row in speeds.items():
        print(
            f"| {label} | {len(args.speed_docs)} | {row['windows']} | {row['tokens']} | {row['reused']} "
            f"| {row['wall_s']:.1f} | {row['tokens'] / row['wall_s']:.1f} | {row['cpu_s']:.1f} "
            f"| {row['tokens'] / row['cpu_s']:.1f} |"
        )
    before, after = speeds["before"], speeds["after"]
    print(
        f"after / before: {before['wall_s'] / after['wall_s']:.2f}x tokens/s (wall-clock), "
        f"{before['cpu_s'] / after['cpu_s']:.2f}x tokens per CPU second; boundaries identical"
    )
    (RESULTS / "logprob_curve.json").write_text(
        json.dumps(
            {
                "doc": doc.id,
                "doc_tokens": doc_tokens,
                "marker": run.curve.marker,
                "scoring": {"tokens": run.report.stats["scored_tokens"], "seconds": scoring_s},
                "generation": {"tokens": generated, "seconds": generate_s},
                "generation_extrapolated_seconds": full_generation_s,
                "chunks": len(run.chunks),
                "boundaries": list(run.curve.chosen),
                "speed": {"docs": [p.name for p in args.speed_docs], **speeds},
            },
            indent=1,
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
