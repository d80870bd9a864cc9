"""Test helpers shared across test modules: the scripted loopback OpenAI-compatible server
(``openai_server``, for faults and vLLM's response shapes), the real one (``transformers_server``:
``transformers serve`` with the bundled SmolLM2, and a proxy recording its answers), and counting wrappers."""
