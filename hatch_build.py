"""Build hook: compile the optional C helper of the chunkers, ``chunkwise.chunking._speedups``.

The extension is built in place, next to its source, so an editable install (``make``) imports it
from ``src/`` and a wheel ships it. Without a C compiler the build goes on with a warning: every
function of the helper has a pure-Python counterpart that gives the same chunks
(:mod:`chunkwise.chunking.speedups`). ``CHUNKWISE_PURE_PYTHON=1`` skips it on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "src/chunkwise/chunking/_speedups.c"
MODULE = "chunkwise.chunking._speedups"


class SpeedupsBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles :data:`SOURCE` with setuptools' ``build_ext`` (the platform's usual compiler)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build the extension in place; on failure, warn and leave the package pure Python."""
        if os.environ.get("CHUNKWISE_PURE_PYTHON"):
            return
        try:
            built = self._compile()
        except Exception as exc:  # no compiler, no headers: the pure-Python path still works
            self.app.display_warning(f"chunkwise: C helper not built ({exc}); chunking runs in pure Python")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"].append(built.relative_to(self.root).as_posix())

    def _compile(self) -> Path:
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        root = Path(self.root)
        extension = Extension(MODULE, [SOURCE], extra_compile_args=[] if os.name == "nt" else ["-O2"])
        dist = Distribution({"ext_modules": [extension], "package_dir": {"": "src"}})
        command = build_ext(dist)
        command.inplace = True
        command.build_temp = str(root / "build" / "temp")
        command.ensure_finalized()
        cwd = Path.cwd()
        os.chdir(root)
        try:
            command.run()
        finally:
            os.chdir(cwd)
        built = root / "src" / command.get_ext_filename(MODULE)
        if not built.is_file():
            raise FileNotFoundError(built)
        self.app.display_info(f"chunkwise: built {built.name}")
        return built
