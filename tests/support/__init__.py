"""Test helpers shared across test modules (the loopback OpenAI-compatible server)."""
