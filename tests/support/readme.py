"""Reading the README's examples: its fenced blocks, the commands of a console block with their expected
output, and the match of an output against one in which ``...`` stands for any text."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

README_PATH = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: The first command of a console block that starts the HTTP server (run by the server's own test).
SERVE_PREFIX = "chunkwise serve "


def readme_text() -> str:
    """The README."""
    return README_PATH.read_text(encoding="utf-8")


def readme_blocks() -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block, in order."""
    return [(lang, body) for lang, body in BLOCK.findall(readme_text())]


def console_commands(body: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$`` line of a console block."""
    examples: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], []))
        elif examples:
            examples[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in examples]


def starts_a_server(body: str) -> bool:
    """Whether a console block's first command is ``chunkwise serve``."""
    commands = console_commands(body)
    return bool(commands) and commands[0][0].startswith(SERVE_PREFIX)


def _words(text: str) -> str:
    return " ".join(text.split())


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected`` with each ``...`` standing for any text; runs of whitespace
    compare equal, so a line wrapped at another terminal width still matches. The whole output must
    match."""
    pattern = r"\s*.*?\s*".join(re.escape(_words(part)) for part in expected.split("..."))
    return re.fullmatch(pattern, _words(actual), re.DOTALL) is not None


def run_console(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One console command through bash, its output captured (a failed command is the caller's to
    report, with its stderr)."""
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
