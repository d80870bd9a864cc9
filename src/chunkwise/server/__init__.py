"""``chunkwise serve``: the HTTP API and the inspector page over one knowledge base (extra ``[server]``).

:func:`create_app` builds the ASGI application (FastAPI, served by uvicorn); :class:`ServerSettings`
holds its key and limits. The endpoints return the same JSON bodies as the command line's ``--json``
(:mod:`chunkwise.results`).
"""

from __future__ import annotations

from chunkwise.server.app import create_app
from chunkwise.server.settings import ServerSettings, check_binding, is_loopback

__all__ = ["ServerSettings", "check_binding", "create_app", "is_loopback"]
