"""Contextual chunk headers and the TOML pipeline configuration."""

from __future__ import annotations

import re

import pytest

from chunkwise.chunking.chunk import make_chunk
from chunkwise.config import PRESETS, from_dict, load_config
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.ingest.headers import ContextualHeaders, extractive_summary, fallback_title, format_header
from chunkwise.models.config import ModelsConfig
from tests.support.cli import run_chunkwise
from tests.support.documents import doc_from_markdown_lines
from tests.support.fakes import FakeLLM, on_prompt

DOC = doc_from_markdown_lines(
    "policy.md",
    "# Pet Policy\nSmall pets may travel in the cabin. They must stay in a carrier.\n"
    "## Fees\nA fee of 50 EUR applies.",
)


def test_header_parts_and_switches():
    chunk = make_chunk(DOC, DOC.text.index("A fee"), len(DOC.text))
    headers = ContextualHeaders(summary_chars=70)  # two sentences fit, the third does not
    context = headers.document_context(DOC)
    assert context.title == "Pet Policy"
    assert context.summary == "Small pets may travel in the cabin. They must stay in a carrier."
    header = headers.header(chunk, context)
    assert header.splitlines() == [
        "Document: Pet Policy",
        "Summary: Small pets may travel in the cabin. They must stay in a carrier.",
        "Section: Pet Policy > Fees",
    ]
    quiet = ContextualHeaders(summary=False, section=False)
    assert quiet.header(chunk, quiet.document_context(DOC)) == "Document: Pet Policy"
    assert format_header("", "", ()) == ""


def test_title_and_summary_fallbacks():
    plain = Document(
        "notes/trip.txt", "First sentence here. Second one follows. Third.", source="notes/trip.txt"
    )
    assert fallback_title(plain) == "trip"
    assert extractive_summary(plain, max_chars=30) == "First sentence here."
    assert fallback_title(DOC) == "Pet Policy"


def test_llm_writes_missing_title_and_the_summary():
    untitled = Document("a.txt", "Lounges open two hours before departure.")
    llm = FakeLLM(
        chat_fn=on_prompt(
            lambda p: '"Lounge Hours"' if p.startswith("What is the title") else "About lounges.\nmore"
        )
    )
    context = ContextualHeaders(llm).document_context(untitled)
    assert (context.title, context.summary) == ("Lounge Hours", "About lounges.")
    assert len(llm.prompts) == 2
    titled = ContextualHeaders(llm, summary=False).document_context(DOC)
    assert titled.title == "Pet Policy"
    assert len(llm.prompts) == 2  # a parsed title is never replaced, and no summary was asked for


def test_load_config_from_toml(tmp_path):
    path = tmp_path / "kb.toml"
    path.write_text(
        'preset = "dsrag"\n[retrieval]\nfusion = "rrf"\n[segments]\npreset = "precision"\nmax_length = 4\n'
        '[models]\nembedder = "local:int8"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.preset == "dsrag"
    assert config.retrieval.fusion == "rrf"
    assert config.segments.enabled
    assert config.segments.overrides() == {"max_length": 4}
    assert config.models.embedder == "local:int8"
    assert load_config(path, preset="fast").segments.enabled is False  # the argument wins over the file
    assert set(PRESETS) == {"default", "fast", "quality", "chunkrag", "dsrag"}


def test_every_preset_passes_its_own_checks():
    for name in PRESETS:
        assert load_config(preset=name).preset == name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[retrieval]\nwieght = 0.3\n", r"retrieval: unknown setting\(s\) wieght; known: bm25, dense"),
        ("[answr]\nmode = 'llm'\n", r"unknown setting\(s\) answr; known: preset, models, chunking"),
        ("[retrieval]\nweight = 'half'\n", "retrieval.weight: expected float"),
        ("[relevance]\nthreshold = 'max'\n", "relevance.threshold: 'max' is not one of"),
        ("[models]\nllm = 3\nfoo = 1\n", r"models: unknown setting\(s\) foo; known: llm, embedder"),
        ("[models]\nllm = 3\n", "models.llm: expected str, got 3"),
        (
            "[chunking]\nname = 'recursive'\nparams = { max_sise = 400 }\n",
            r"chunking: recursive: unknown setting\(s\) max_sise; known: max_size, min_size, overlap, unit",
        ),
        ("[chunking]\nname = 'recursive'\nparams = { max_size = 0 }\n", "max_size must be at least 1"),
        ("[chunking]\nname = 'recursve'\n", "unknown chunker 'recursve': use one of fixed, recursive"),
        (
            "[chunking]\nname = 'recursive'\nparams = { overlap = nan }\n",
            "recursive.overlap: expected a finite number",
        ),
        ("[retrieval]\nweight = inf\n", "retrieval.weight: expected a finite number, got inf"),
        ("[retrieval]\ncandidates = 0\n", "retrieval.candidates: must be at least 1, got 0"),
        ("[retrieval]\nweight = 1.5\n", "retrieval.weight: BM25's share of the fused score, 0 to 1"),
        ("[store]\nhnsw_ef_search = 2000\n", r"store.hnsw_ef_search: 1 to 1000 \(pgvector's bounds\)"),
        ("[store]\npool_size = 0\n", "store.pool_size: must be at least 1"),
        ("[relevance]\nweights = [1, 1]\n", r"relevance.weights: three weights .*got \[1.0, 1.0\]"),
        ("[relevance]\nweights = [0, 0, 0]\n", "relevance.weights: .* with a positive sum"),
        ("[relevance]\nweights = [1, 1, -1.5]\n", "relevance.weights: .*none negative"),
        ("[relevance]\nneutral_score = 1.5\n", "relevance.neutral_score: must be 0 to 1, got 1.5"),
        ("[relevance]\nepsilon = -0.1\n", "relevance.epsilon: must be 0 to 1"),
        ("[relevance]\nmax_candidates = -1\n", "relevance.max_candidates: must be at least 1, got -1"),
        ("[rerank]\nweight = 2\n", "rerank.weight: must be 0 to 1, got 2"),
        ("[rerank]\ndepth = -1\n", "rerank.depth: must be at least 0, got -1"),
        ("[rerank]\ntop_n = -2\n", "rerank.top_n: must be at least 0, got -2"),
        ("[redundancy]\nthreshold = -1\n", "redundancy.threshold: must be 0 to 1, got -1"),
        ("[answer]\nsources = -1\n", "answer.sources: must be at least 1, got -1"),
        ("[answer]\nmax_sentences = 0\n", "answer.max_sentences: must be at least 1, got 0"),
        ("[answer]\nmax_context_chars = 0\n", "answer.max_context_chars: must be at least 1"),
        ("[answer]\nmin_quote_chars = 0\n", "answer.min_quote_chars: must be at least 1"),
        ("[segments]\ndecay_rate = 0\n", "segments.decay_rate: must be positive, got 0"),
        ("[segments]\nmax_length = 0\n", "segments.max_length: must be at least 1, got 0"),
        (
            "[segments]\npreset = 'bogus'\n",
            "segments.preset: unknown RSE preset 'bogus'; choose one of balanced, precision, find_all",
        ),
        ("preset = 'turbo'\n", "unknown preset 'turbo'"),
        ("preset = ''\n", "unknown preset ''"),  # an empty or list preset was the default, silently
        ("preset = []\n", r"unknown preset \[\]"),
        ("[models.prices.gpt]\ninput_per_mtok = -1\n", "models.prices.'gpt': prices must not be negative"),
        ("[models.prices.gpt]\ncached_input_per_mtok = -0.5\n", "prices must not be negative"),
        ("[retrieval\n", "kb.toml"),
    ],
)
def test_bad_config_names_the_key(tmp_path, text, message):
    path = tmp_path / "kb.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_config_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('preset = "fast"\n# caf\u00e9\n'.encode("latin-1"))
    message = r"latin1.toml: cannot read .*: not UTF-8 text .*: byte 0xe9 at offset 21 \(line 2\)"
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    with pytest.raises(ConfigError, match=message):
        ModelsConfig.load(path)
    done = run_chunkwise("search", "pets", "--kb", str(tmp_path / "kb"), "--config", str(path))
    assert done.returncode == 2
    assert re.match(r"error: .*" + message, done.stderr)
    assert "Traceback" not in done.stderr


def test_the_llm_is_in_the_ingest_fingerprint_only_when_ingesting_calls_it() -> None:
    """Titles written by another LLM, or chunks planned by one, are other chunks: switching LLMs then
    re-ingests. Where ingest calls no LLM, switching it changes nothing stored, nor the fingerprint."""

    def fingerprint(llm: str, **sections: dict[str, object]) -> str:
        return from_dict({"models": {"llm": llm}, **sections}).ingest_fingerprint("e")

    assert fingerprint("openai:a") == fingerprint("openai:b")
    headers = {"headers": {"enabled": True, "llm": True}}
    assert fingerprint("openai:a", **headers) != fingerprint("openai:b", **headers)
    wrac = {"chunking": {"name": "wrac"}}
    assert fingerprint("openai:a", **wrac) != fingerprint("openai:b", **wrac)
    assert fingerprint("openai:a", **wrac) != fingerprint("openai:a")
