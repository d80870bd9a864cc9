"""What the tests share: the fakes (one module), documents, the chunking contract, the CLI runner, the
scripted loopback OpenAI-compatible server (``openai_server``: faults and vLLM's response shapes) and the
real one (``transformers_server``: ``transformers serve`` with the bundled SmolLM2, and a proxy that
records its answers)."""
