"""DOCX and PPTX list numbers are held to the bound HTML and Markdown lists keep
(:data:`~chunkwise.parsing.blocks.MAX_LIST_NUMBER`), and a malformed start value is a typed error.

Each test builds a real package with python-docx or python-pptx and rewrites the numbering XML a case
needs: ``word/numbering.xml`` (``w:start``, ``w:startOverride``) or the slide's ``a:buAutoNum``.
"""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pptx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pptx.util import Inches

from chunkwise.document import UnitKind
from chunkwise.errors import CorruptFileError
from chunkwise.parsing import parse_file
from chunkwise.parsing.blocks import MAX_LIST_NUMBER
from tests.support.packages import edited_package

_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_list(tmp_path: Path, level: str, override: str = "", items: int = 2) -> Path:
    """A DOCX whose body is ``items`` paragraphs of list 7 and whose numbering part defines that list:
    ``level`` is the abstract level 0 (``w:start``...), ``override`` the list's ``w:lvlOverride`` body."""
    made = docx.Document()
    buffer = io.BytesIO()
    made.save(buffer)
    numbering = (
        f'<w:numbering xmlns:w="{_W_NS}">'
        f'<w:abstractNum w:abstractNumId="3"><w:lvl w:ilvl="0">{level}</w:lvl></w:abstractNum>'
        '<w:num w:numId="7"><w:abstractNumId w:val="3"/>'
        + (f'<w:lvlOverride w:ilvl="0">{override}</w:lvlOverride>' if override else "")
        + "</w:num></w:numbering>"
    )
    body = "".join(
        '<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="7"/></w:numPr></w:pPr>'
        f"<w:r><w:t>step {n}</w:t></w:r></w:p>"
        for n in range(1, items + 1)
    )
    package = edited_package(buffer.getvalue(), "word/numbering.xml", lambda _: numbering.encode("utf-8"))
    package = edited_package(
        package,
        "word/document.xml",
        lambda xml: xml.decode("utf-8").replace("<w:body>", f"<w:body>{body}", 1).encode("utf-8"),
    )
    path = tmp_path / "numbered.docx"
    path.write_bytes(package)
    return path


def decimal_level(start: str) -> str:
    return f'<w:start w:val="{start}"/><w:numFmt w:val="decimal"/>'


def pptx_list(tmp_path: Path, start_at: str, items: int = 2) -> Path:
    """A one-slide deck whose text box holds ``items`` auto-numbered paragraphs starting at ``start_at``."""
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
    box.text_frame.text = "Pack light"
    buffer = io.BytesIO()
    deck.save(buffer)
    paragraphs = "".join(
        f'<a:p><a:pPr><a:buAutoNum type="arabicPeriod" startAt="{start_at}"/></a:pPr>'
        f"<a:r><a:t>step {n}</a:t></a:r></a:p>"
        for n in range(1, items + 1)
    )

    def edited(xml: bytes) -> bytes:
        text = xml.decode("utf-8")
        old = "<a:p><a:r><a:t>Pack light</a:t></a:r></a:p>"
        assert text.count(old) == 1
        return text.replace(old, paragraphs).encode("utf-8")

    path = tmp_path / "numbered.pptx"
    path.write_bytes(edited_package(buffer.getvalue(), "ppt/slides/slide1.xml", edited))
    return path


def numbered(path: Path) -> list[str]:
    """The numbers of the document's list items, as their markers show them ("5" for "5. step 1")."""
    items = [u for u in parse_file(path).units if u.kind is UnitKind.LIST_ITEM]
    return [item.text.split(" ", 1)[0].removesuffix(".") for item in items]


#: List starts of both formats and the numbers of three items counted on from them (a start near the
#: bound stays at it; 5,000 digits are read without converting them).
CLAMPED_STARTS = [
    ("5", ["5", "6", "7"]),
    ("9999999999", [str(MAX_LIST_NUMBER)] * 3),
    ("999999998", [str(MAX_LIST_NUMBER - 1), str(MAX_LIST_NUMBER), str(MAX_LIST_NUMBER)]),
    ("-9999999999", [str(-MAX_LIST_NUMBER), str(1 - MAX_LIST_NUMBER), str(2 - MAX_LIST_NUMBER)]),
    ("9" * 5000, [str(MAX_LIST_NUMBER)] * 3),
]


@pytest.mark.parametrize(
    ("start", "expected"),
    [*CLAMPED_STARTS, ("-1", ["-1", "0", "1"]), (" 0012 ", ["12", "13", "14"])],
)
def test_a_docx_list_start_is_clamped_like_html_lists(
    tmp_path: Path, start: str, expected: list[str]
) -> None:
    """``w:start="9999999999"`` used to give a ten-digit item number, and a 5,000-digit start made the
    whole document unreadable; now every number stays within +-MAX_LIST_NUMBER, counting on from a
    start near the bound stays at the bound."""
    assert numbered(docx_list(tmp_path, decimal_level(start), items=3)) == expected


@pytest.mark.parametrize("override", ["9999999999", "9" * 5000])
def test_a_docx_start_override_is_clamped(tmp_path: Path, override: str) -> None:
    path = docx_list(tmp_path, decimal_level("1"), f'<w:startOverride w:val="{override}"/>')
    assert numbered(path) == [str(MAX_LIST_NUMBER)] * 2


def test_a_docx_override_level_start_is_clamped(tmp_path: Path) -> None:
    """A ``w:lvlOverride`` carrying a whole ``w:lvl`` replaces the abstract level, start included."""
    path = docx_list(
        tmp_path, decimal_level("1"), f'<w:lvl w:ilvl="0">{decimal_level("12345678901")}</w:lvl>'
    )
    assert numbered(path) == [str(MAX_LIST_NUMBER)] * 2


@pytest.mark.parametrize("start", ["", "abc", "1.5", "1_000", "--3", "+"])
@pytest.mark.parametrize("where", ["start", "startOverride"])
def test_a_malformed_docx_list_start_is_corrupt(tmp_path: Path, start: str, where: str) -> None:
    """A start that is no decimal integer is a malformed package, reported with the file's name."""
    if where == "start":
        path = docx_list(tmp_path, decimal_level(start))
    else:
        path = docx_list(tmp_path, decimal_level("1"), f'<w:startOverride w:val="{start}"/>')
    with pytest.raises(CorruptFileError, match=r"numbered\.docx.*list start .* is not an integer"):
        parse_file(path)


@pytest.mark.parametrize(("start", "expected"), CLAMPED_STARTS)
def test_a_pptx_auto_number_start_is_clamped_like_html_lists(
    tmp_path: Path, start: str, expected: list[str]
) -> None:
    """``a:buAutoNum startAt="9999999999"`` used to give a ten-digit item number; now it is held to
    +-MAX_LIST_NUMBER like every other list number."""
    assert numbered(pptx_list(tmp_path, start, items=3)) == expected


@pytest.mark.parametrize("start", ["", "abc", "1.5", "1_000"])
def test_a_malformed_pptx_auto_number_start_is_corrupt(tmp_path: Path, start: str) -> None:
    """As in DOCX, a ``startAt`` that is no integer is a malformed package, named in the error."""
    with pytest.raises(CorruptFileError, match=r"numbered\.pptx.*list start .* is not an integer"):
        parse_file(pptx_list(tmp_path, start))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(min_value=-(10**12), max_value=10**12), items=st.integers(min_value=1, max_value=4))
def test_office_list_numbers_count_on_within_the_bound(tmp_path: Path, start: int, items: int) -> None:
    """For any start, DOCX and PPTX items count on from the start clamped to the bound, each number
    clamped again: the same numbers an HTML ``<ol start>`` gets."""
    expected = [str(min(max(start, -MAX_LIST_NUMBER) + n, MAX_LIST_NUMBER)) for n in range(items)]
    assert numbered(docx_list(tmp_path, decimal_level(str(start)), items=items)) == expected
    assert numbered(pptx_list(tmp_path, str(start), items=items)) == expected
