"""A usage error (a bad option value, a missing argument, an unknown option or command) is one
``error:`` line with click's message and a line naming the ``--help`` to try, exit status 2, like every
other error of the command line; the help itself is printed as before."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.cli import run_chunkwise

PROG = "python -m chunkwise"


@pytest.mark.parametrize(
    ("args", "message", "help_of"),
    [
        (["search", "-k", "-1", "a query"], "Invalid value for '-k': ", "search"),
        (["search"], "Missing argument 'query'.", "search"),
        (["search", "--bogus", "a query"], "No such option: --bogus", "search"),
        (["kb", "list", "--bogus"], "No such option: --bogus", "kb list"),
        (["bogus"], "No such command 'bogus'.", ""),
        (["--bogus"], "No such option: --bogus", ""),
        (
            ["tune", "--data", "d", "--grid", "size=1", "--search", "x"],
            "Invalid value: --search must be",
            "tune",
        ),
    ],
    ids=[
        "out-of-range",
        "missing-argument",
        "unknown-option",
        "sub-group",
        "unknown-command",
        "root-option",
        "in-body",
    ],
)
def test_a_usage_error_is_an_error_line_and_a_hint(args: list[str], message: str, help_of: str) -> None:
    done = run_chunkwise(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    first, hint = done.stderr.splitlines()
    assert first.startswith(f"error: {message}")
    assert hint == f"try '{' '.join(filter(None, [PROG, help_of]))} --help'"


def test_a_hostile_option_name_stays_on_the_error_line() -> None:
    done = run_chunkwise("search", "--bo\x1b[31m\nerror: fake", "a query")
    assert done.returncode == 2
    first, hint = done.stderr.splitlines()
    assert first.startswith("error: No such option: --bo\\x1b[31m\\")
    assert first.endswith("error: fake")
    assert "\x1b" not in first
    assert hint == f"try '{PROG} search --help'"


@pytest.mark.parametrize("args", [["--help"], ["search", "--help"], ["kb", "--help"]], ids=" ".join)
def test_help_is_still_the_help(args: list[str]) -> None:
    done = run_chunkwise(*args)
    assert done.returncode == 0
    assert "Usage: " in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("args", [[], ["kb"]], ids=["root", "kb"])
def test_a_group_alone_prints_its_help(args: list[str]) -> None:
    done = run_chunkwise(*args)
    assert "Usage: " in done.stdout + done.stderr
    assert "error:" not in done.stdout + done.stderr


def _commands() -> list[tuple[list[str], list[str]]]:
    """Every command of the CLI, as its words, with the help texts it was given (its own and its
    options')."""
    import typer.main

    from chunkwise.cli.main import app

    root = typer.main.get_command(app)
    found: list[tuple[list[str], list[str]]] = []

    def walk(command: Any, words: list[str]) -> None:
        found.append((words, [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]))
        if hasattr(command, "list_commands"):
            context = root.context_class(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                walk(sub, [*words, name])

    walk(root, [])
    return found


def test_help_keeps_every_bracketed_word() -> None:
    """Help is rendered as rich markup, where ``[store]`` is a style tag and vanishes: "(pip install
    'chunkwise')" told a user to install the package without its Ray extra. Every ``[word]`` written
    in a help text (escaped as ``\\[word]``) is on its page."""
    checked = 0
    for words, helps in _commands():
        bracketed = {m.replace("\\[", "[") for text in helps for m in re.findall(r"\\?\[[^\]\s]+\]", text)}
        if not bracketed:
            continue
        page = run_chunkwise(*words, "--help", env={"COLUMNS": "300"}).stdout
        assert {b for b in bracketed if b not in page} == set(), words
        checked += len(bracketed)
    assert checked >= 3  # [ray], [models], [store] at least
