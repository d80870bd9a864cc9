"""A real browser for the inspector tests: Debian's chromium, headless, driven by Playwright.

Playwright's own browser download needs the internet, so the tests use the system's chromium
(``make test`` installs it with apt-get where it runs as root). Where none is found the browser tests
skip, saying so; a chromium that is found but fails to start is a failure, not a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Chromium's flags for a closed network: no background connections, no updates, no sync, no sandbox
#: (the tests may run as root), no GPU.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

SKIP_REASON = (
    "no chromium on this machine: `make test` installs Debian's chromium with apt-get when it runs as "
    "root; elsewhere install chromium or set CHUNKWISE_CHROMIUM to its path"
)


def find_chromium() -> str | None:
    """The chromium to drive: ``$CHUNKWISE_CHROMIUM``, else ``chromium`` on the PATH, else Debian's."""
    given = os.environ.get("CHUNKWISE_CHROMIUM")
    if given:
        return given
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def screenshot_dir(default: Path) -> Path:
    """Where the screenshots go: ``$CHUNKWISE_SCREENSHOTS`` (``make screenshots`` points it at
    ``docs/screenshots``), else ``default`` (a temporary folder, so a test run leaves the checkout
    as it was)."""
    target = Path(os.environ.get("CHUNKWISE_SCREENSHOTS") or default)
    target.mkdir(parents=True, exist_ok=True)
    return target
