"""What the ``ingest``, ``search`` and ``ask`` commands share: the ``--kb``/``--config``/``--preset``
options and how they become a :class:`~chunkwise.kb.KnowledgeBase`.

``--kb`` is a knowledge-base directory or a ``postgresql://user@host:port/db?schema=NAME`` URL; without
it, the configuration's ``[store] url`` is used. ``ingest`` records the configuration it used in the
store, so a later ``search`` or ``ask`` on the same knowledge base uses the same chunking, headers and
stages unless it is given ``--config`` or ``--preset``.
The knowledge base is opened with its configuration fully resolved (the budget options applied), and
is not changed afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chunkwise.config import load_config
from chunkwise.errors import ConfigError
from chunkwise.kb import KnowledgeBase, stored_config
from chunkwise.store import open_store

KbOption = Annotated[
    str | None,
    typer.Option(
        "--kb",
        help="Knowledge base: a directory or postgresql://user@host:port/db?schema=NAME "
        "(default: [store] url of the configuration).",
    ),
]
ConfigOption = Annotated[Path | None, typer.Option("--config", help="Pipeline configuration (TOML).")]
PresetOption = Annotated[str | None, typer.Option("--preset", help="Named preset: fast, chunkrag, dsrag.")]
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


def open_kb(
    kb: str | None,
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
    given = load_config(config, preset) if config is not None or preset is not None else None
    location = kb if kb is not None else given.store.url if given is not None else None
    if location is None:
        raise ConfigError("no knowledge base given: pass --kb, or a --config with [store] url")
    if given is None:
        with open_store(location, create=create) as store:
            given = stored_config(store) or load_config()
    return KnowledgeBase(location, given.with_budget(max_cost, max_tokens), create=create)
