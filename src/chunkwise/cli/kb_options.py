"""What the ``ingest``, ``search`` and ``ask`` commands share: the ``--kb``/``--config``/``--preset``
options and how they become a :class:`~chunkwise.kb.KnowledgeBase`.

``ingest`` records the configuration it used in the store, so a later ``search`` or ``ask`` on the same
directory uses the same chunking, headers and stages unless it is given ``--config`` or ``--preset``.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer

from chunkwise.config import from_dict
from chunkwise.errors import ConfigError
from chunkwise.kb import KnowledgeBase
from chunkwise.models import new_ledger
from chunkwise.store.database import DB_NAME

CONFIG_META_KEY = "pipeline_config"

KbOption = Annotated[Path, typer.Option("--kb", help="Knowledge-base directory.")]
ConfigOption = Annotated[Path | None, typer.Option("--config", help="Pipeline configuration (TOML).")]
PresetOption = Annotated[
    str | None, typer.Option("--preset", help="Named preset: fast, quality, chunkrag, dsrag.")
]
MaxCostOption = Annotated[
    float | None,
    typer.Option("--max-cost", min=0, help="Stop before a model call would push the run past this cost ($)."),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens", min=0, help="Stop before a model call would push the run past this many tokens."
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="JSON output, with the trace and accounting totals.")
]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def open_kb(
    kb: Path,
    config: Path | None,
    preset: str | None,
    *,
    create: bool,
    max_cost: float | None = None,
    max_tokens: int | None = None,
) -> KnowledgeBase:
    """The knowledge base at ``kb`` with the given configuration, else the one ingest recorded there.

    ``max_cost``/``max_tokens`` override the budget of the ``[models]`` section for this run: the model
    layer refuses the call that would cross it with :class:`~chunkwise.errors.BudgetExceededError`.
    """
    if not create and not (kb / DB_NAME).is_file():
        raise ConfigError(f"{kb}: no knowledge base here (run chunkwise ingest first)")
    data = _read_toml(config) if config else {}
    base = KnowledgeBase(kb, from_dict(data, preset))
    if create:
        recorded = dict(data, preset=base.config.preset)
        base.store.set_meta(CONFIG_META_KEY, json.dumps(recorded))
    elif config is None and preset is None:
        stored = base.store.meta(CONFIG_META_KEY)
        if stored:
            recorded = json.loads(stored)
            base.config = from_dict(recorded)
    if max_cost is not None or max_tokens is not None:
        models = base.config.models
        budget = dataclasses.replace(
            models,
            max_cost=models.max_cost if max_cost is None else max_cost,
            max_tokens=models.max_tokens if max_tokens is None else max_tokens,
        )
        base.config = dataclasses.replace(base.config, models=budget)
    # Models are built lazily, so a ledger made now carries the final configuration's budget.
    base.ledger = new_ledger(base.config.models)
    return base
