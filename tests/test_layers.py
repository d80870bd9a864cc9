"""The package's layers import only downward: the architecture of docs/architecture.md, enforced.

Every ``chunkwise`` import in every module (at any depth, lazy imports inside functions included) is
read from the source with :mod:`ast`; an import of a module in a higher layer than the importer's fails.
Modules of one layer may import each other. ``TYPE_CHECKING`` blocks count too: a type annotation that
needs a higher layer is a design smell as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "chunkwise"

#: Lowest first. A module's layer is that of the longest prefix of its dotted name listed here (the root
#: package ``chunkwise`` matches only itself, so a new top-level module must be placed explicitly).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "chunkwise.errors",
        "chunkwise.document",
        "chunkwise.spans",
        "chunkwise.settings",
        "chunkwise.terms",
        "chunkwise.blas",
    ),
    ("chunkwise.parsing",),
    ("chunkwise.models",),
    ("chunkwise.chunking",),
    ("chunkwise.store",),
    ("chunkwise.config",),
    ("chunkwise.ingest", "chunkwise.query"),
    ("chunkwise.kb",),
    ("chunkwise.evaluation",),
    ("chunkwise.api", "chunkwise.results"),
    ("chunkwise.server", "chunkwise.adapters"),
    ("chunkwise.cli", "chunkwise", "chunkwise.__main__"),
)


def layer_of(module: str) -> int:
    """The layer index of a dotted module name (the longest listed prefix decides)."""
    best, length = -1, -1
    for index, names in enumerate(LAYERS):
        for name in names:
            prefix = name != "chunkwise" and module.startswith(name + ".")
            if (module == name or prefix) and len(name) > length:
                best, length = index, len(name)
    if best < 0:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and docs/architecture.md")
    return best


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, package: str) -> list[str]:
    """The ``chunkwise`` modules imported by ``source``, a module of ``package`` (relative imports
    resolved against it)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append(base)
    return [name for name in found if name == "chunkwise" or name.startswith("chunkwise.")]


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    for path in MODULES:
        layer_of(module_name(path))


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_imports_point_downward(path: Path) -> None:
    importer = module_name(path)
    assert not upward_imports(path.read_text(encoding="utf-8"), importer, path.name == "__init__.py")


def upward_imports(source: str, importer: str, is_package: bool = False) -> list[str]:
    """The imports of ``source`` (module ``importer``) that reach a higher layer."""
    package = importer if is_package else importer.rpartition(".")[0]
    own = layer_of(importer)
    return [name for name in imports_of(source, package) if layer_of(name) > own]


def test_the_checker_finds_lazy_and_relative_violations() -> None:
    """A violation cannot hide in a function body, a ``TYPE_CHECKING`` block or a relative import."""
    lazy = "def f():\n    from chunkwise.kb import KnowledgeBase\n"
    assert upward_imports(lazy, "chunkwise.store.sqlite") == ["chunkwise.kb"]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import chunkwise.query.pipeline\n"
    assert upward_imports(typed, "chunkwise.chunking.base") == ["chunkwise.query.pipeline"]
    relative = "from ..query import trace\n"
    assert upward_imports(relative, "chunkwise.store.sqlite") == ["chunkwise.query"]
    assert upward_imports("from chunkwise.document import Document\n", "chunkwise.store.sqlite") == []
