"""Every example in the README runs and prints what the README says it prints.

Python blocks run as scripts; the ``text`` block right after one is its expected output. Console blocks
run command by command, in order; the lines after a ``$ command`` line are its expected output. In an
expected output ``...`` stands for any text (across lines, too), so an example can show the stable
part of a long JSON line (:mod:`tests.support.readme` reads the blocks and matches the outputs). Each
example runs in a fresh working directory that sees the repository's ``tests/`` and ``samples/``
folders, so the relative paths in the README hold and nothing is written into the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.readme import (
    console_commands,
    matches,
    readme_blocks,
    readme_text,
    run_console,
    starts_a_server,
)

REPO = Path(__file__).resolve().parent.parent
README = readme_text()


def python_examples() -> list[tuple[str, str]]:
    """``(code, expected output)`` for each Python block; the output is the ``text`` block after it."""
    blocks = readme_blocks()
    examples = []
    for index, (lang, body) in enumerate(blocks):
        if lang == "python":
            following = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
            examples.append((body, following[1] if following[0] == "text" else ""))
    return examples


def console_examples() -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$`` line of the console blocks, in order (the blocks
    that start a server are run by ``tests/server/test_serve_cli.py``)."""
    examples: list[tuple[str, str]] = []
    for lang, body in readme_blocks():
        if lang == "console" and not starts_a_server(body):
            examples += console_commands(body)
    return examples


def _workdir(tmp_path: Path) -> Path:
    for name in ("tests", "samples"):
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="120")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_readme_has_examples_with_outputs() -> None:
    assert len(python_examples()) >= 4
    assert all(expected.strip() for _, expected in python_examples())
    assert len(console_examples()) >= 8
    assert all(expected.strip() for _, expected in console_examples())
    assert README.startswith("# chunkwise\n\n```bash\nmake demo")


def test_matching_honours_ellipsis() -> None:
    assert matches("a ... z", "a b c z")
    assert matches("first\n...\nlast", "first\nmiddle\nmore\nlast  ")
    assert not matches("a ... z", "a b c y")
    assert not matches("exact", "exact and more")
    assert matches("a long line that wraps", "a long line\nthat wraps\n")


@pytest.mark.parametrize("index", range(len(python_examples())))
def test_python_example_prints_what_the_readme_shows(index: int, tmp_path: Path) -> None:
    code, expected = python_examples()[index]
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
    assert matches(expected, result.stdout), f"expected:\n{expected}\nprinted:\n{result.stdout}"


def test_console_examples_print_what_the_readme_shows(tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    for command, expected in console_examples():
        result = run_console(command, workdir, _env())
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
        assert matches(expected, result.stdout), (
            f"{command}\nexpected:\n{expected}\nprinted:\n{result.stdout}"
        )


@pytest.mark.parametrize("index", range(sum(lang == "toml" for lang, _ in readme_blocks())))
def test_toml_example_is_a_valid_configuration(index: int, tmp_path: Path) -> None:
    """Each TOML block loads as a configuration (unknown keys and bad values would raise)."""
    from chunkwise.config import load_config

    body = [body for lang, body in readme_blocks() if lang == "toml"][index]
    path = tmp_path / "chunkwise.toml"
    path.write_text(body, encoding="utf-8")
    load_config(path)
