"""What the ``ingest``, ``search`` and ``ask`` commands share: the ``--kb``/``--config``/``--preset``
options and how they become a :class:`~chunkwise.kb.KnowledgeBase`.

``--kb`` is a knowledge-base directory or a ``postgresql://user@host:port/db?schema=NAME`` URL; without
it, the configuration's ``[store] url`` is used. ``ingest`` records the configuration it used in the
store, so a later ``search`` or ``ask`` on the same knowledge base uses the same chunking, headers and
stages unless it is given ``--config`` or ``--preset``.
The knowledge base is opened with its configuration fully resolved (the budget options applied), and
is not changed afterwards. ``search`` and ``ask`` open it read-only, so a read-only or immutable
directory can be searched; ``--kb`` is taken as given (an empty value is refused, not read as the
current directory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chunkwise.config import load_config
from chunkwise.errors import ConfigError
from chunkwise.kb import KnowledgeBase, stored_config
from chunkwise.store import open_store

#: What ``--kb`` names, for its help.
KB_HELP = "Knowledge base: a directory or postgresql://user@host:port/db?schema=NAME"
#: A string, not a ``Path``: ``Path("")`` would silently mean the current directory.
KbOption = Annotated[
    str | None, typer.Option("--kb", help=f"{KB_HELP} (default: \\[store] url of the configuration).")
]
#: ``--kb`` where it must be given (``kb check``, ``kb repair``).
RequiredKbOption = Annotated[str, typer.Option("--kb", help=f"{KB_HELP}.")]
ConfigOption = Annotated[Path | None, typer.Option("--config", help="Pipeline configuration (TOML).")]
PresetOption = Annotated[
    str | None, typer.Option("--preset", help="Named preset: default, fast, quality, chunkrag, dsrag.")
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

    ``kb``: a directory or a store URL; ``None`` takes the ``[store] url`` of the given configuration.
    ``create``: to ingest (the directory and store are created when absent); otherwise the store must
    exist and is opened read-only. ``max_cost``/``max_tokens`` override the budget of the ``[models]``
    section for this run: the model layer refuses the call that would cross it with
    :class:`~chunkwise.errors.BudgetExceededError`.

    Raises:
        StoreError: the store cannot be opened (not a directory, read-only for ingest, damaged, absent,
            a server that does not answer).
        ConfigError: no ``--kb`` and no configuration that names a store.
    """
    given = load_config(config, preset) if config is not None or preset is not None else None
    if given is None:
        if kb is None:
            raise ConfigError("no knowledge base given: pass --kb, or a --config with [store] url")
        with open_store(kb, read_only=not create) as store:
            given = stored_config(store) or load_config()
    return KnowledgeBase(kb, given.with_budget(max_cost, max_tokens), read_only=not create)
