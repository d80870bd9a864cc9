"""What ``GET /metrics`` exposes, in Prometheus' text format.

Requests by route, method and status, and their latency as histograms; model calls, cache hits, tokens
and dollars by model role, summed from the accounting of every request and ingest job (the same ledger
totals the JSON bodies carry); the ingest queue's depth and the jobs by outcome. Each server has its own
registry, so two apps in one process (as in tests) never share counters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

#: Latency buckets (seconds): a cached search takes milliseconds, an LLM answer or ingest seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class ServerMetrics:
    """The counters of one server (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "chunkwise_http_requests", "HTTP requests answered.", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "chunkwise_http_request_seconds",
            "Time to answer an HTTP request.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.model_calls = Counter(
            "chunkwise_model_calls", "Model calls that reached a backend.", ["role"], registry=r
        )
        self.cache_hits = Counter(
            "chunkwise_model_cache_hits", "Model calls answered from the cache.", ["role"], registry=r
        )
        self.tokens = Counter(
            "chunkwise_model_tokens", "Tokens sent to and received from models.", ["role", "kind"], registry=r
        )
        self.cost = Counter("chunkwise_model_cost_dollars", "Cost of model calls.", ["role"], registry=r)
        self.queue_depth = Gauge("chunkwise_ingest_queue_depth", "Ingest jobs waiting.", registry=r)
        self.jobs = Counter("chunkwise_ingest_jobs", "Ingest jobs finished.", ["status"], registry=r)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_accounting(self, accounting: Mapping[str, Any]) -> None:
        """Add a run's accounting (the ``accounting`` of a JSON body: totals by role) to the counters."""
        for role, totals in accounting.get("by_role", {}).items():
            self.model_calls.labels(role).inc(totals["calls"])
            self.cache_hits.labels(role).inc(totals["cache_hits"])
            self.tokens.labels(role, "input").inc(totals["input_tokens"])
            self.tokens.labels(role, "output").inc(totals["output_tokens"])
            self.cost.labels(role).inc(totals["cost"])

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
