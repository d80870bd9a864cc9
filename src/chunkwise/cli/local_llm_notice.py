"""What an LLM preset will cost on a local model, said before the first call.

The LLM presets (``chunkrag``, ``dsrag``, an LLM chunker or LLM-written headers) on the bundled
SmolLM2-135M run on the CPU: one ``ask --preset chunkrag`` takes minutes, and a 135M model writes weak
answers. So before ``ingest``, ``search`` or ``ask`` makes an LLM call on a local model, the command
writes to stderr, at once, the dry-run estimate of its LLM stages (calls and tokens, from
:mod:`chunkwise.evaluation.estimate`), the minutes that comes to at this machine's measured rates
(:mod:`chunkwise.models.local_rates`), and a one-line hint to point ``CHUNKWISE_LLM`` at an
OpenAI-compatible endpoint. On a terminal it then asks whether to go on; ``--yes`` answers for the user,
and a run without a terminal (a script, a pipe, CI) goes on without asking. After the run, the measured
seconds of its local calls calibrate the next estimate.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from chunkwise.cli.dry_run import estimate_table
from chunkwise.cli.terminal import printable, rich_console
from chunkwise.config import PipelineConfig
from chunkwise.evaluation.estimate import (
    RunEstimate,
    StageEstimate,
    estimate_ingest,
    estimate_queries,
)
from chunkwise.models.config import split_spec
from chunkwise.models.context import Models
from chunkwise.models.local_rates import load_local_rates, record_local_calls

YesOption = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Do not ask before an LLM preset runs on a local model."),
]

HINT = (
    "hint: the bundled model is small and slow; for an LLM preset set "
    "CHUNKWISE_LLM=openai:<model> (and OPENAI_BASE_URL for a local server such as vLLM or Ollama)"
)


def uses_local_llm(config: PipelineConfig) -> bool:
    """Whether the configuration's LLM runs in this process (``local`` or ``local:<path>``)."""
    return split_spec(config.models.llm)[0] == "local"


def confirm_query(config: PipelineConfig, query: str, *, answers: bool, yes: bool) -> None:
    """The notice before ``search`` (``answers`` false) or ``ask`` of ``query`` under ``config``."""
    _confirm(config, estimate_queries([query], config, answers=answers), yes)


def confirm_ingest(config: PipelineConfig, files: Sequence[Path], *, yes: bool) -> None:
    """The notice before ``ingest`` of ``files`` under ``config``; the files are parsed for their text,
    under the configuration's limits, only when the configuration has an LLM stage at ingest. A file
    that fails, for whatever reason (a parser's bug included), is left out of the estimate and left to
    the ingest, which reports it: an estimate never stops the command."""
    if not uses_local_llm(config) or not config.ingest_uses_llm():
        return
    from chunkwise.parsing import parse_file

    limits = config.limits.parse_limits()
    texts: list[str] = []
    for file in files:
        try:
            texts.append(parse_file(file, limits=limits).text)
        except Exception:  # the ingest reports this file (see the docstring)
            continue
    _confirm(config, estimate_ingest(texts, config), yes)


@contextmanager
def measured(models: Models) -> Iterator[None]:
    """Run the body, then add the measured seconds of ``models``' local LLM calls (the body's failure
    included) to the rates behind the next estimate."""
    try:
        yield
    finally:
        record_local_calls(models.ledger.records)


def _confirm(config: PipelineConfig, stages: Sequence[StageEstimate], yes: bool) -> None:
    """Write the estimate of the LLM ``stages`` and the hint to stderr, then ask (see the module)."""
    llm = tuple(stage for stage in stages if stage.model == "llm" and stage.calls)
    if not llm or not uses_local_llm(config):
        return
    estimate = RunEstimate(llm)
    total = estimate.total("llm")
    rates = load_local_rates()
    minutes = rates.seconds(total.input_tokens, total.output_tokens) / 60
    basis = f"calibrated by {rates.calls} earlier calls" if rates.calls else "default rates"
    console = rich_console(stderr=True)
    title = f"{printable(config.models.llm)} runs on this machine's CPU: estimate before any call"
    console.print(estimate_table(estimate, title, models=("llm",)))
    console.print(f"expected time: about {minutes:.1f} minutes ({basis})", markup=False)
    console.print(HINT, markup=False)
    if yes or not (sys.stdin.isatty() and sys.stderr.isatty()):
        return
    if not typer.confirm("Go on?", default=True, err=True):
        sys.stderr.write("stopped before any model call\n")
        raise typer.Exit(1)
