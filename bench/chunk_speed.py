"""Chunking speed: chunkwise against chonkie, semchunk and langchain-text-splitters, in one run.

Every implementation chunks the same texts with the same setting. The grid:

* sizes: 256, 512 and 2,048 characters; 128 and 512 tokens of the bundled all-MiniLM-L6-v2 WordPiece
  tokenizer (no special tokens, no truncation);
* overlap: none, and one eighth of the size (32, 64, 256 characters; 16, 64 tokens), given to every
  peer that supports overlap (chonkie's ``RecursiveChunker`` has none, so it sits those rows out);
* corpora: ``nike``, the hard-wrapped Nike 10-K from ``data/long_docs/`` repeated to ``--mb`` million
  characters (``--token-mb`` for token sizes, where the peers re-tokenise many times); ``chroma``, the
  five ``data/chroma/`` corpora one document at a time (1.44 M characters); ``one_line``, the Nike
  text with every run of whitespace made one space, so a single line without newlines, repeated like
  ``nike``; ``cjk``, Chinese prose (no spaces, full-width punctuation, one paragraph a line) made by
  :func:`cjk_prose`, sized like ``nike``. The data sets hold no Chinese or Japanese text, so this one
  is synthetic: sentences of common words drawn by a seeded generator, the same text on every run.

Kinds and their peers:

* ``fixed``: chonkie ``TokenChunker``; langchain ``CharacterTextSplitter`` on spaces (its closest
  fixed-size mode; on ``cjk``, which has no spaces, on every character).
* ``recursive``: chonkie ``RecursiveChunker``, semchunk, langchain ``RecursiveCharacterTextSplitter``
  (on ``cjk`` with the separators its documentation gives for text without word boundaries).
* ``sentence``: chonkie ``SentenceChunker`` (langchain's sentence splitters need NLTK or spaCy data that
  cannot be downloaded here; semchunk has none).

Each measurement runs in a fresh subprocess and times the chunking call alone, each run with a freshly
built chunker so that no memoised token counts carry over (tokenizer loading excluded). Speeds are in
millions of characters per CPU second of the process (all its threads: the Rust tokenizers' worker
threads count too), because this machine is shared by several jobs and wall time measures their load
as much as the code; the JSON also gives the wall-clock speeds. The process CPU clock here moves in
steps of a few milliseconds at times, so a fast case chunks its texts several times per timed run
(with as many fresh chunkers) until a run lasts 0.2 CPU seconds, and its speed is per chunking. A
speed is the best of at least ``--repeat`` runs, repeated until they add up to one CPU second (at
most 30 runs; one for runs over 10 s). The implementations of one case run one after the other,
``--rounds`` times in alternation, and each keeps its best. A run is stopped after ``--timeout`` CPU
seconds (RLIMIT_CPU) and its speed reported as an upper bound, so the ratio is then a lower bound.
Peak memory is the growth of the process's peak RSS during chunking, which also sees memory allocated
by native code (Rust tokenizers, chonkie-core). chunkwise's timing includes building full ``Chunk``
objects (exact offsets, ids, section paths); the peers return strings or their own chunk objects.

A second table times the ``semantic`` chunker (cold, uncached local embedder) on the State of the Union
corpus: sentences (or pieces) per second, and the share of the time spent inside the embedder.

Run: ``.venv/bin/python bench/chunk_speed.py [--mb 2] [--token-mb 0.5] [--repeat 3] [--rounds 2]
[--data ../shared/data] [--only corpus=nike,kind=recursive]``. Installs nothing; the peers come from
the ``bench`` extra. Writes ``bench/results/chunk_speed.json`` (unless ``--only`` narrows the grid).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_data import add_data_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "chunk_speed.json"

#: A measurement slower than this is not repeated (its noise is small next to its length).
SLOW_SECONDS = 10.0
#: Fast measurements repeat until their runs add up to this many CPU seconds, at most :data:`MAX_RUNS`
#: times: on a shared machine a burst of load can cover a few runs, rarely dozens.
MIN_SECONDS = 1.0
MAX_RUNS = 30
#: A timed run chunks the texts up to :data:`MAX_BATCH` times (a fresh chunker each), so that it lasts
#: at least this many CPU seconds.
MIN_RUN_SECONDS = 0.2
MAX_BATCH = 4096

CHAR_SIZES = (256, 512, 2048)
TOKEN_SIZES = (128, 512)
#: Overlap as a share of the size, in the rows with overlap.
OVERLAP_FRACTION = 0.125
CORPORA = ("nike", "chroma", "one_line", "cjk")
#: Peers of each kind (chunkwise is measured in every case).
PEERS: dict[str, tuple[str, ...]] = {
    "recursive": ("chonkie", "semchunk", "langchain"),
    "fixed": ("chonkie", "langchain"),
    "sentence": ("chonkie",),
}
#: (peer, kind) pairs without an overlap setting.
NO_OVERLAP = frozenset({("chonkie", "recursive")})
#: The module each peer is imported from (a peer that is not installed is left out).
PEER_MODULES = {"chonkie": "chonkie", "semchunk": "semchunk", "langchain": "langchain_text_splitters"}
#: LangChain's separators for text without word boundaries (its text-splitter documentation).
CJK_SEPARATORS = ["\n\n", "\n", " ", ".", ",", "\u200b", "\uff0c", "\u3001", "\uff0e", "\u3002", ""]

Chunk = Callable[[str], Sequence[Any]]


@dataclass(frozen=True)
class Case:
    """One setting: a corpus, a kind, a size in a unit, and an overlap in the same unit."""

    corpus: str
    kind: str
    unit: str
    size: int
    overlap: int

    def label(self) -> str:
        """``512 chars`` and the like."""
        return f"{self.size} {self.unit}"


def cases() -> list[Case]:
    """The full grid, in table order."""
    out = []
    for corpus in CORPORA:
        for unit, sizes in (("chars", CHAR_SIZES), ("tokens", TOKEN_SIZES)):
            for size in sizes:
                for overlap in (0, round(size * OVERLAP_FRACTION)):
                    out.extend(Case(corpus, kind, unit, size, overlap) for kind in PEERS)
    return out


def peers(case: Case) -> list[str]:
    """The installed peers that can run ``case``."""
    return [
        peer
        for peer in PEERS[case.kind]
        if importlib.util.find_spec(PEER_MODULES[peer]) is not None
        and not (case.overlap and (peer, case.kind) in NO_OVERLAP)
    ]


#: Words of the synthetic Chinese prose: common nouns, verbs, adjectives, adverbs and particles.
CJK_WORDS = """
我们 他们 今天 明天 时间 城市 国家 社会 经济 发展 技术 研究 问题 方法 结果 系统 数据 信息 公司 市场
学生 老师 学校 教育 历史 文化 语言 文字 生活 工作 朋友 家庭 孩子 父母 医院 医生 健康 环境 自然 科学
政府 政策 法律 经验 能力 计划 目标 过程 条件 关系 影响 作用 意义 价值 机会 挑战 变化 趋势 方向 世界
中国 北京 上海 地区 农村 交通 道路 河流 山区 天气 春天 夏天 秋天 冬天 早上 晚上 图书馆 博物馆 音乐 电影
非常 已经 正在 可能 应该 需要 希望 认为 发现 提出 解决 完成 开始 继续 改变 提高 增加 减少 保持 实现
重要 主要 基本 明显 复杂 简单 困难 容易 新的 旧的 大量 少数 许多 一些 这个 那个 这些 那些 所有 每个
的 了 在 是 和 与 也 都 还 就 又 很 更 最 不 没有 因为 所以 但是 如果 虽然 而且 或者 然后 之后 之前
进行 参加 讨论 分析 比较 选择 利用 建立 组织 管理 服务 生产 消费 投资 贸易 合作 交流 学习 阅读 写作
""".split()  # noqa: SIM905 (a word list reads best as words)


def cjk_prose(chars: int, seed: int = 17) -> str:
    """Deterministic Chinese prose of ``chars`` characters: sentences of 1-4 clauses joined by ``，``,
    ended by ``。``, ``！`` or ``？``, 3-8 sentences a paragraph, one paragraph a line."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    total = 0
    while total < chars:
        sentences = []
        for _ in range(rng.randint(3, 8)):
            clauses = ["".join(rng.choices(CJK_WORDS, k=rng.randint(3, 9))) for _ in range(rng.randint(1, 4))]
            sentences.append("，".join(clauses) + rng.choice("。。。。！？"))
        paragraphs.append("".join(sentences))
        total += len(paragraphs[-1]) + 1
    return "\n".join(paragraphs)[:chars]


def load_texts(corpus: str, mb: float, data: Path) -> list[str]:
    """The texts of ``corpus``; the repeated ones hold ``mb`` million characters."""
    target = int(mb * 1_000_000)
    if corpus == "chroma":
        with (data / "chroma" / "corpus.jsonl").open(encoding="utf-8") as handle:
            return [json.loads(line)["text"] for line in handle]
    if corpus == "cjk":
        return [cjk_prose(target)]
    base = (data / "long_docs" / "nike_2023_annual_report.txt").read_text(encoding="utf-8")
    if corpus == "one_line":
        base = re.sub(r"\s+", " ", base).strip() + " "
    return [(base * (target // len(base) + 1))[:target]]


def minilm_tokenizer() -> Any:
    """The bundled MiniLM tokenizer with truncation and padding off."""
    from tokenizers import Tokenizer

    from chunkwise.models.bundled import minilm_dir

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def build(impl: str, case: Case) -> Chunk:
    """A ``text -> chunks`` function for one implementation and case."""
    size, overlap = case.size, case.overlap
    if impl == "chunkwise":
        from chunkwise.chunking import get_chunker
        from chunkwise.document import Document

        unit = "chars" if case.unit == "chars" else "minilm"
        chunker = get_chunker(case.kind, max_size=size, overlap=overlap, unit=unit)
        return lambda text: chunker.chunk(Document(id="bench", text=text))
    tokenizer = "character" if case.unit == "chars" else minilm_tokenizer()
    if case.unit == "chars":
        count: Callable[[str], int] = len
    else:
        count = lambda text: len(tokenizer.encode(text, add_special_tokens=False))  # noqa: E731
    if impl == "chonkie":
        from chonkie import RecursiveChunker, SentenceChunker, TokenChunker

        if case.kind == "fixed":
            chonkie_chunker: Any = TokenChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=overlap)
        elif case.kind == "recursive":
            chonkie_chunker = RecursiveChunker(tokenizer=tokenizer, chunk_size=size)
        else:
            chonkie_chunker = SentenceChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=overlap)
        return chonkie_chunker.chunk  # type: ignore[no-any-return]
    if impl == "semchunk":
        import semchunk

        semchunk_chunker = semchunk.chunkerify(count, size)
        return lambda text: semchunk_chunker(text, overlap=overlap or None)  # type: ignore[no-any-return]
    from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter

    if case.kind == "fixed":
        splitter: Any = CharacterTextSplitter(
            separator="" if case.corpus == "cjk" else " ",
            chunk_size=size,
            chunk_overlap=overlap,
            length_function=count,
        )
    else:
        splitter = RecursiveCharacterTextSplitter(
            separators=CJK_SEPARATORS if case.corpus == "cjk" else None,
            chunk_size=size,
            chunk_overlap=overlap,
            length_function=count,
        )
    return splitter.split_text  # type: ignore[no-any-return]


def _rss_mb() -> float:
    """Current resident set size in MB."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so that loading the text does not count."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def _peak_mb() -> float:
    """Peak resident set size since :func:`_reset_peak`, in MB (falls back to the lifetime peak)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _limit_cpu(seconds: float | None) -> None:
    """Let the process run ``seconds`` more CPU seconds before the kernel stops it (``None``: no limit)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if seconds is None:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    resource.setrlimit(
        resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)
    )


def worker(impl: str, case: Case, *, data: Path, mb: float, repeat: int, timeout: float) -> dict[str, Any]:
    """One measurement (run in its own process): chunks, best CPU and wall seconds, speed, peak memory.

    Each timed run may use ``timeout`` CPU seconds; past that the kernel stops the process (SIGXCPU),
    which :func:`measure` records as a cut-off run.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a process stopped by SIGXCPU leaves no core file
    texts = load_texts(case.corpus, mb, data)

    def timed(batch: int) -> tuple[float, float, int, float]:
        """CPU and wall seconds of ``batch`` chunkings of the texts, chunks, peak memory growth."""
        # Fresh chunkers for every chunking: peers that memoise token counts must not start warm.
        chunkers = [build(impl, case) for _ in range(batch)]
        for chunk in chunkers:
            chunk("Warm up. " * 50)
        _reset_peak()
        before = _rss_mb()
        _limit_cpu(timeout)
        cpu, wall = time.process_time(), time.perf_counter()
        for chunk in chunkers:
            count = sum(len(chunk(text)) for text in texts)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        _limit_cpu(None)
        return cpu, wall, count, _peak_mb() - before

    # The process CPU clock of this machine moves in steps of a few milliseconds at times, so a fast
    # case chunks its texts several times per timed run: the batch grows until a run lasts
    # MIN_RUN_SECONDS of CPU time, and the speed is per chunking.
    batch = 1
    cpu, wall, count, peak = timed(batch)
    while cpu < MIN_RUN_SECONDS and batch < MAX_BATCH:
        batch = min(MAX_BATCH, batch * 4)
        cpu, wall, count, peak = timed(batch)
    best_cpu, best_wall, spent, runs = cpu / batch, wall / batch, cpu, 1
    while best_cpu < SLOW_SECONDS and (runs < repeat or (spent < MIN_SECONDS and runs < MAX_RUNS)):
        cpu, wall, count, grown = timed(batch)
        best_cpu, best_wall = min(best_cpu, cpu / batch), min(best_wall, wall / batch)
        spent, runs, peak = spent + cpu, runs + 1, max(peak, grown)
    chars = sum(len(t) for t in texts)
    return {
        "chunks": count,
        "cpu_seconds": round(best_cpu, 5),
        "seconds": round(best_wall, 5),
        "mchars_per_s": round(chars / best_cpu / 1e6, 3),
        "wall_mchars_per_s": round(chars / best_wall / 1e6, 3),
        "peak_mb": round(max(0.0, peak), 1),
    }


def measure(impl: str, case: Case, *, data: Path, mb: float, repeat: int, timeout: float) -> dict[str, Any]:
    """Run :func:`worker` in a fresh interpreter; a run stopped at ``timeout`` CPU seconds (or, as a
    guard, at ten times that in wall time) is recorded as cut off, its speed an upper bound."""
    args = [sys.executable, __file__, "--worker", impl, json.dumps(asdict(case)), str(data), str(mb)]
    try:
        out = subprocess.run(
            [*args, str(repeat), str(timeout)],
            capture_output=True,
            text=True,
            check=True,
            timeout=10 * timeout + 60,
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as exc:
        if isinstance(exc, subprocess.CalledProcessError) and exc.returncode != -signal.SIGXCPU:
            raise
        chars = sum(len(t) for t in load_texts(case.corpus, mb, data))
        return {
            "chunks": None,
            "seconds": None,
            "mchars_per_s": round(chars / timeout / 1e6, 3),
            "timed_out": True,
        }
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_case(
    case: Case, *, data: Path, mb: float, repeat: int, rounds: int, timeout: float
) -> dict[str, Any]:
    """chunkwise and every peer on ``case``, ``rounds`` times in alternation; each keeps its best."""
    impls = ["chunkwise", *peers(case)]
    best: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):
        for impl in impls:
            if best.get(impl, {}).get("timed_out"):
                continue
            result = measure(impl, case, data=data, mb=mb, repeat=repeat, timeout=timeout)
            if impl not in best or result["mchars_per_s"] > best[impl]["mchars_per_s"]:
                best[impl] = result
    chars = sum(len(t) for t in load_texts(case.corpus, mb, data))
    ours = best.pop("chunkwise")
    row: dict[str, Any] = {**asdict(case), "chars": chars, "chunkwise": ours, "peers": best}
    if best:
        fastest = max(best, key=lambda name: best[name]["mchars_per_s"])
        row["fastest_peer"] = fastest
        row["ratio_to_fastest_peer"] = round(ours["mchars_per_s"] / best[fastest]["mchars_per_s"], 2)
        # A cut-off peer's speed is an upper bound, so the ratio is a lower bound.
        row["ratio_is_lower_bound"] = bool(best[fastest].get("timed_out"))
    return row


def semantic_rows(data: Path) -> list[dict[str, Any]]:
    """Sentences per second and embedding share of the semantic chunker, cold, on one corpus."""
    from chunkwise.chunking import get_chunker
    from chunkwise.document import Document
    from chunkwise.models.local_embedder import LocalEmbedder

    class TimedEmbedder:
        """Counts the texts and the seconds spent in the wrapped embedder."""

        def __init__(self, inner: LocalEmbedder) -> None:
            self.inner, self.name, self.dim = inner, inner.name, inner.dim
            self.seconds, self.texts = 0.0, 0

        def embed(self, texts: Sequence[str]) -> Any:
            start = time.perf_counter()
            out = self.inner.embed(texts)
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)
            return out

    with (data / "chroma" / "corpus.jsonl").open(encoding="utf-8") as handle:
        doc = next(
            Document(id=d["doc_id"], text=d["text"])
            for d in map(json.loads, handle)
            if d["doc_id"] == "state_of_the_union"
        )
    base = LocalEmbedder()
    base.embed(["warm up"])
    rows = []
    for label, options in (
        ("threshold 0.8 (ChunkRAG)", {}),
        ("percentile 95 (SemanticChunk)", {"breakpoint": "percentile"}),
        ("cluster (Chroma)", {"method": "cluster", "max_size": 800}),
    ):
        timed = TimedEmbedder(base)
        chunker = get_chunker("semantic", embedder=timed, **options)
        start = time.perf_counter()
        chunks = chunker.chunk(doc)
        total = time.perf_counter() - start
        rows.append(
            {
                "rule": label,
                "chars": len(doc.text),
                "embedded_texts": timed.texts,
                "chunks": len(chunks),
                "seconds": round(total, 2),
                "texts_per_s": round(timed.texts / total, 1),
                "embed_share": round(timed.seconds / total, 3),
            }
        )
    return rows


def _speed(result: dict[str, Any]) -> str:
    """A speed cell: ``< x`` for a cut-off run."""
    return f"< {result['mchars_per_s']:.2f}" if result.get("timed_out") else f"{result['mchars_per_s']:.2f}"


def markdown(rows: list[dict[str, Any]], semantic: list[dict[str, Any]]) -> str:
    """The speed table (one line per case) and the semantic table."""
    lines = [
        "| corpus | M chars | kind | size | overlap | chunkwise M chars/CPU-s | fastest peer | "
        "peer M chars/CPU-s | ratio |",
        "|---|---:|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        ratio = r.get("ratio_to_fastest_peer")
        ratio_cell = (
            "" if ratio is None else (f"> {ratio:.2f}" if r["ratio_is_lower_bound"] else f"{ratio:.2f}")
        )
        peer = r.get("fastest_peer", "")
        peer_speed = _speed(r["peers"][peer]) if peer else ""
        lines.append(
            f"| {r['corpus']} | {r['chars'] / 1e6:.2f} | {r['kind']} | {r['size']} {r['unit']} | "
            f"{r['overlap']} | {_speed(r['chunkwise'])} | {peer} | {peer_speed} | {ratio_cell} |"
        )
    if semantic:
        lines += [
            "",
            "| semantic rule | chars | embedded texts | chunks | seconds | texts/s | embedding share |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for s in semantic:
            lines.append(
                f"| {s['rule']} | {s['chars']} | {s['embedded_texts']} | {s['chunks']} | {s['seconds']} | "
                f"{s['texts_per_s']} | {s['embed_share']:.0%} |"
            )
    return "\n".join(lines)


def ratio_grid(rows: list[dict[str, Any]]) -> str:
    """The ratios alone: one line per corpus and kind, one column per size and overlap."""
    columns = sorted(
        {(r["unit"], r["size"], r["overlap"]) for r in rows}, key=lambda c: (c[0] != "chars", c[1], c[2])
    )
    header = " | ".join(
        f"{size} {unit[:-1]}{f' +{overlap}' if overlap else ''}" for unit, size, overlap in columns
    )
    lines = [f"| corpus | kind | {header} |", "|---|---|" + "---:|" * len(columns)]
    by_key = {(r["corpus"], r["kind"], r["unit"], r["size"], r["overlap"]): r for r in rows}
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        for kind in dict.fromkeys(r["kind"] for r in rows):
            cells = []
            for unit, size, overlap in columns:
                row = by_key.get((corpus, kind, unit, size, overlap))
                ratio = None if row is None else row.get("ratio_to_fastest_peer")
                bound = "> " if row is not None and row.get("ratio_is_lower_bound") else ""
                cells.append("" if ratio is None else f"{bound}{ratio:.2f}")
            lines.append(f"| {corpus} | {kind} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _selected(case: Case, only: str) -> bool:
    """Whether ``case`` matches every ``field=value[|value...]`` of ``only`` (comma-separated)."""
    for term in filter(None, only.split(",")):
        field, _, values = term.partition("=")
        if str(getattr(case, field)) not in values.split("|"):
            return False
    return True


def main() -> None:
    """Run every case, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_data_option(parser)
    parser.add_argument("--mb", type=float, default=2.0, help="million characters of the repeated texts")
    parser.add_argument("--token-mb", type=float, default=0.5, help="the same for token sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating measurements per implementation")
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="CPU seconds before a run is cut off (upper bound)"
    )
    parser.add_argument(
        "--only",
        default="",
        help="measure a part of the grid, e.g. corpus=nike,kind=recursive|fixed,size=512",
    )
    parser.add_argument("--skip-semantic", action="store_true", help="leave out the semantic table")
    parser.add_argument("--report", action="store_true", help="print the tables of the saved JSON only")
    args = parser.parse_args()
    if args.report:
        saved = json.loads(RESULTS.read_text())
        print(markdown(saved["speed"], saved["semantic"]), ratio_grid(saved["speed"]), sep="\n\n")
        return
    rows = []
    for case in cases():
        if not _selected(case, args.only):
            continue
        mb = args.mb if case.unit == "chars" else args.token_mb
        rows.append(
            run_case(
                case, data=args.data, mb=mb, repeat=args.repeat, rounds=args.rounds, timeout=args.timeout
            )
        )
        print(f"  {case}: ratio {rows[-1].get('ratio_to_fastest_peer')}", file=sys.stderr)
    semantic = [] if args.skip_semantic or args.only else semantic_rows(args.data)
    print(markdown(rows, semantic), ratio_grid(rows), sep="\n\n")
    if args.only:
        return
    settings = {
        "mb": args.mb,
        "token_mb": args.token_mb,
        "repeat": args.repeat,
        "rounds": args.rounds,
        "timeout": args.timeout,
        "char_sizes": CHAR_SIZES,
        "token_sizes": TOKEN_SIZES,
        "overlap_fraction": OVERLAP_FRACTION,
    }
    ratios = [r["ratio_to_fastest_peer"] for r in rows if r.get("ratio_to_fastest_peer") is not None]
    summary = {"cases": len(rows), "min_ratio_to_fastest_peer": min(ratios, default=None)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"settings": settings, "summary": summary, "speed": rows, "semantic": semantic}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        impl, case_json, data, mb, repeat, timeout = sys.argv[2:8]
        case = Case(**json.loads(case_json))
        print(
            json.dumps(
                worker(impl, case, data=Path(data), mb=float(mb), repeat=int(repeat), timeout=float(timeout))
            )
        )
    else:
        main()
