"""Every example in the README runs: Python blocks as scripts, console blocks command by command.

Each runs in a fresh working directory that sees the repository's ``tests/`` and ``samples/`` folders, so
the relative paths in the README hold and nothing is written into the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def _commands() -> list[str]:
    return [line[2:] for body in _blocks("console") for line in body.splitlines() if line.startswith("$ ")]


def _workdir(tmp_path: Path) -> Path:
    for name in ("tests", "samples"):
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_readme_has_examples() -> None:
    assert len(_blocks("python")) >= 4
    assert len(_commands()) >= 10
    assert README.startswith("# chunkwise\n\n```bash\nmake demo")


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_example_runs(index: int, tmp_path: Path) -> None:
    code = _blocks("python")[index]
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=_workdir(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()


def test_console_examples_run_in_order(tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    for command in _commands():
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=workdir,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
        assert result.stdout.strip(), command
