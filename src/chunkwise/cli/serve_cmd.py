"""``chunkwise serve --kb DIR|URL``: the HTTP API and the inspector page over a knowledge base (uvicorn).

The key, when ``--api-key-env NAME`` is given, is read from that environment variable (never from the
command line, where other users of the machine could read it). Listening on an address other machines
reach without a key is refused, as is a named variable that is unset or empty: one line on stderr and
exit status 2. The server logs through :mod:`logging` (uvicorn's handlers, ``chunkwise`` included).
"""

from __future__ import annotations

import copy
import os
import signal
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from chunkwise.cli.kb_options import KB_HELP, ConfigOption, PresetOption
from chunkwise.config import load_config
from chunkwise.errors import ConfigError
from chunkwise.store import open_store

#: What to install when the server's libraries are missing.
INSTALL_HINT = "chunkwise serve needs the server extra: pip install 'chunkwise[server]'"


#: The default of ``--max-connections``: uvicorn times out no connection that sends no request, so
#: without a bound a client holding connections open runs the process out of file descriptors (often
#: 1,024); past it, a request is answered 503 at once and its connection closed.
MAX_CONNECTIONS = 256


def serve_command(
    *,
    kb: Annotated[str, typer.Option("--kb", help=f"{KB_HELP} (created when absent).")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port).", min=0, max=65535)
    ] = 8000,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="Environment variable holding the bearer key clients must send."),
    ] = None,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_upload_mb: Annotated[
        float, typer.Option("--max-upload-mb", help="Largest request body, in MiB.", min=0.001, max=2**20)
    ] = 32,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds a request may take before a 504.", min=0.001, max=86400),
    ] = 120,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            help="Seconds to wait for the next part of a request body before a 408.",
            min=0.001,
            max=86400,
        ),
    ] = 30,
    queue: Annotated[int, typer.Option("--queue", help="Ingest jobs that may wait.", min=1)] = 8,
    readers: Annotated[int, typer.Option("--readers", help="Requests computed at once.", min=1)] = 4,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="Open connections (idle ones included) past which a request is answered 503.",
            min=1,
        ),
    ] = MAX_CONNECTIONS,
    jobs_file: Annotated[
        Path | None,
        typer.Option(
            "--jobs-file",
            help="SQLite file recording the ingest jobs, so that their ids outlive a restart"
            " (default: jobs.sqlite3 in a SQLite knowledge base, the knowledge base's jobs table shared"
            " by its servers in PostgreSQL).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Serve a knowledge base over HTTP: the API under /v1 and the inspector page at /."""
    from chunkwise.server.settings import ServerSettings, check_binding

    key = None
    if api_key_env is not None:
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise ConfigError(f"--api-key-env {api_key_env}: the variable is unset or empty")
    settings = ServerSettings(
        api_key=key,
        max_upload_bytes=int(max_upload_mb * 2**20),
        request_timeout=timeout,
        body_timeout=body_timeout,
        queue_size=queue,
        readers=readers,
        jobs_file=jobs_file,
    )
    check_binding(host, settings)
    try:
        import uvicorn

        from chunkwise.server import create_app
        from chunkwise.server.journal import open_journal
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    resolved = load_config(config, preset) if config is not None or preset is not None else None
    # a damaged or unreachable store, or a jobs journal that cannot be used, is one error line here,
    # not a server traceback
    with open_store(kb) as store:
        journal = open_journal(store, settings.keep_jobs, settings.jobs_file)
        if journal is not None:
            journal.close()
    app = create_app(kb, config=resolved, settings=settings)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    uvicorn.run(
        app,
        host=host,
        port=port,
        limit_concurrency=max_connections,
        log_config=_log_config(uvicorn.config.LOGGING_CONFIG),
    )


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM outside uvicorn's own handling: exit as a process killed by it would (status 143), but
    through Python's exit, so that the interpreter's exit handlers run.

    uvicorn shuts down gracefully on SIGTERM, then restores the handler it found and raises the signal
    again; with the default handler the process died at once, its exit handlers unrun, and
    multiprocessing's resource tracker reported the writer's semaphores as leaked on every stop."""
    raise SystemExit(128 + signum)


def _log_config(base: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging configuration with the ``chunkwise`` loggers on its default handler."""
    config = copy.deepcopy(base)
    config["loggers"]["chunkwise"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the CLI."""
    app.command("serve")(serve_command)
