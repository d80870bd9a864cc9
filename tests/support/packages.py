"""Zip packages (DOCX, PPTX) with one member rewritten: how the parser tests put the XML a feature or a
damage needs into a real package."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable


def edited_package(package: bytes, member: str, edit: Callable[[bytes], bytes]) -> bytes:
    """``package`` with ``member`` replaced by ``edit`` of it, every other member as it was."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as original,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as edited,
    ):
        for info in original.infolist():
            data = original.read(info)
            edited.writestr(info, edit(data) if info.filename == member else data)
    return out.getvalue()
