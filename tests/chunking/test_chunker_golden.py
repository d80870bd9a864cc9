"""Golden tests: exact boundaries of each chunking rule on hand-made inputs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from chunkwise.chunking import get_chunker
from chunkwise.chunking.semantic import cluster_segments
from chunkwise.document import Document
from chunkwise.models.protocols import Vectors
from chunkwise.parsing.builder import DocumentBuilder


def texts(name: str, text: str, **params: object) -> list[str]:
    return [c.text for c in get_chunker(name, **params).chunk(Document(id="d", text=text))]


def test_fixed_windows_and_overlap() -> None:
    assert texts("fixed", "abcdefghij", max_size=4) == ["abcd", "efgh", "ij"]
    # NaiveChunk with overlap: windows of 4 stepping by 3.
    assert texts("fixed", "abcdefghij", max_size=4, overlap=1) == ["abc", "cdef", "fghi", "ij"]
    assert texts("fixed", "abcd efgh", max_size=5) == ["abcd", "efgh"]


def test_fixed_in_tokens() -> None:
    text = "one two three four five six seven eight nine"
    assert texts("fixed", text, max_size=4, unit="minilm") == [
        "one two three four",
        "five six seven eight",
        "nine",
    ]
    # WordPiece splits "unbelievably" into several tokens; a window may end inside the word.
    assert texts("fixed", "unbelievably", max_size=4, unit="minilm") == ["unbelieva", "bly"]


@pytest.mark.parametrize(
    ("max_size", "expected"),
    [
        (20, ["aaa bbb.\nccc ddd.", "eee fff."]),
        (12, ["aaa bbb.", "ccc ddd.", "eee fff."]),
        (6, ["aaa", "bbb.", "ccc", "ddd.", "eee", "fff."]),
    ],
)
def test_recursive_prefers_the_strongest_boundary(max_size: int, expected: list[str]) -> None:
    assert texts("recursive", "aaa bbb.\nccc ddd.\n\neee fff.", max_size=max_size) == expected


def test_recursive_keeps_a_heading_with_the_text_it_heads() -> None:
    text = "# Fees\n\nIntro line.\n\n## Rules\n\nSome rule text.\n\n## Costs\n\nCost text."
    # the blank line after "## Costs" is not a cut: the chunk ends before the heading instead
    assert texts("recursive", text, max_size=52) == [
        "# Fees\n\nIntro line.\n\n## Rules\n\nSome rule text.",
        "## Costs\n\nCost text.",
    ]
    # headings in a row stay with the first text after them; "#tag" is no heading
    assert texts("recursive", "Intro.\n\n# A\n\n## B\n\nBody.\n\n#tag\n\nEnd.", max_size=24) == [
        "Intro.",
        "# A\n\n## B\n\nBody.\n\n#tag",
        "End.",
    ]


def test_recursive_clause_cjk_and_long_word() -> None:
    assert texts("recursive", "alpha, beta gamma", max_size=12) == ["alpha,", "beta gamma"]
    assert texts("recursive", "我爱你。你好吗？很好", max_size=5) == ["我爱你。", "你好吗？", "很好"]
    assert [len(t) for t in texts("recursive", "x" * 10_000, max_size=4_000)] == [4_000, 4_000, 2_000]


def test_sentence_chunker_packs_whole_sentences() -> None:
    text = "One. Two two. Three three three."
    assert texts("sentence", text, max_size=14) == ["One. Two two.", "Three three", "three."]
    assert texts("sentence", text, max_size=40) == [text]


class TopicEmbedder:
    """Deterministic test embedder: a sentence's vector is looked up by its first word."""

    name = "test:topics"
    dim = 2

    def __init__(self, vectors: dict[str, tuple[float, float]]) -> None:
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [self._vectors[t.split()[0]] for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(-1, 2)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_semantic_chunkrag_threshold_and_size() -> None:
    embedder = TopicEmbedder({"A": (1.0, 0.0), "B": (0.0, 1.0), "C": (-1.0, 0.0)})
    text = "A one. A two. B one. B two. B three. C one."
    assert texts("semantic", text, embedder=embedder, breakpoint="threshold") == [
        "A one. A two.",
        "B one. B two. B three.",
        "C one.",
    ]
    # The size maximum starts a new chunk even inside one topic.
    assert texts("semantic", text, embedder=embedder, breakpoint="threshold", max_size=13) == [
        "A one. A two.",
        "B one. B two.",
        "B three.",
        "C one.",
    ]


def _angles(degrees: list[float]) -> TopicEmbedder:
    """Sentences S0..Sn on the unit circle, consecutive ones ``degrees`` apart."""
    positions = np.cumsum([0.0, *degrees])
    return TopicEmbedder(
        {f"S{i}": (math.cos(math.radians(a)), math.sin(math.radians(a))) for i, a in enumerate(positions)}
    )


def test_semantic_threshold_versus_percentile() -> None:
    # cos(10°)=.98, cos(80°)=.17, cos(20°)=.94, cos(30°)=.87, cos(5°)=.996
    embedder = _angles([10, 80, 20, 30, 5])
    text = "S0 one. S1 two. S2 three. S3 four. S4 five. S5 six."
    assert texts("semantic", text, embedder=embedder, breakpoint="threshold", threshold=0.9) == [
        "S0 one. S1 two.",
        "S2 three. S3 four.",
        "S4 five. S5 six.",
    ]
    assert texts("semantic", text, embedder=embedder, breakpoint="percentile", percentile=95.0) == [
        "S0 one. S1 two.",
        "S2 three. S3 four. S4 five. S5 six.",
    ]


def test_cluster_dynamic_programming() -> None:
    e0, e1 = [1.0, 0.0], [0.0, 1.0]
    vectors = np.asarray([e0, e0, e1, e1, e1, e0], dtype=np.float32)
    fits = [max(0, i - 2) for i in range(6)]  # at most three pieces per chunk
    assert cluster_segments(vectors, fits) == [0, 2, 5]


def test_semantic_cluster_groups_topics() -> None:
    embedder = TopicEmbedder({"A": (1.0, 0.0), "B": (0.0, 1.0)})
    text = "A ant. A bee. B cow. B dog. B elk. A fox."
    assert texts("semantic", text, embedder=embedder, method="cluster", max_size=20, piece_size=6) == [
        "A ant. A bee.",
        "B cow. B dog. B elk.",
        "A fox.",
    ]


@pytest.mark.slow
def test_semantic_real_embedder_breaks_at_topic_shift(embedder) -> None:  # type: ignore[no-untyped-def]
    cats = "Cats purr when they are happy. A kitten sleeps most of the day. Cats groom their fur."
    stocks = "Stock markets fell sharply on Monday. Investors sold bank shares. Bond yields rose."
    chunks = get_chunker("semantic", embedder=embedder, breakpoint="threshold", threshold=0.2).chunk(
        Document(id="d", text=f"{cats} {stocks}")
    )
    assert len(cats) + 1 in {c.start for c in chunks}
    assert all(len(c.text) <= 500 for c in chunks)


def _guide() -> Document:
    b = DocumentBuilder()
    b.heading("Guide", 1)
    b.heading("Setup", 2)
    b.paragraph("Install the tool. It is easy to do. Really.")
    for n, step in enumerate(("Step one", "Step two", "Step three"), 1):
        b.list_item(step, number=n)
    b.heading("Data", 2)
    b.table([["name", "size"], ["a", "1"], ["b", "2"], ["c", "3"], ["d", "4"]])
    b.code("print(1)\nprint(2)")
    b.paragraph("Tiny.")
    return b.build("guide")


def test_structure_sections_blocks_and_table_header() -> None:
    doc = _guide()
    chunks = get_chunker("structure", max_size=200).chunk(doc)
    assert [c.section for c in chunks] == [("Guide",), ("Guide", "Data")]
    assert chunks[0].text.endswith("3. Step three")
    assert chunks[1].text.startswith("## Data")

    small = get_chunker("structure", max_size=40, min_size=10).chunk(doc)
    assert [c.text for c in small] == [
        "# Guide\n\n## Setup",
        "Install the tool. It is easy to do.",
        "Really.",
        "1. Step one\n2. Step two\n3. Step three",
        "## Data\n\n| name | size |\n|---|---|",
        "| a | 1 |\n| b | 2 |\n| c | 3 |\n| d | 4 |",
        "```\nprint(1)\nprint(2)\n```\n\nTiny.",
    ]
    assert small[5].context == "| name | size |\n|---|---|"
    assert small[5].section == ("Guide", "Data")
    assert [c.context for c in small if c is not small[5]] == [""] * 6


def test_structure_plain_text_falls_back_to_paragraphs() -> None:
    assert texts("structure", "First para.\n\nSecond para.\n\nThird.", max_size=26) == [
        "First para.\n\nSecond para.",
        "Third.",
    ]
