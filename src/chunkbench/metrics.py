"""The process's Prometheus metrics: every counter and histogram chunkbench exports on ``GET /metrics``.

One module holds them all so names and labels stay consistent. It sits in the bottom layer (it imports nothing of
chunkbench), so every layer records to it without importing upward: indexing counts flagged chunks, llm its tokens,
rag its cache lookups; ``observability`` only exports them. Callers import the object they record to
(``CACHE_LOOKUPS.labels(result="hit_exact").inc()``). Each API process exports its own figures: with several
replicas Prometheus scrapes each one and sums (docs/deploy.md). Labels are low-cardinality on purpose (route
templates, never raw paths; no tenant or query text).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# Seconds; from a cached answer (~1 ms) to an LLM answer (tens of seconds).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

HTTP_REQUESTS = Counter(
    "chunkbench_http_requests_total", "HTTP requests answered, by route template, method and status code.",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_ERRORS = Counter(
    "chunkbench_http_errors_total", "HTTP responses with a 4xx or 5xx status, by route template and error code.",
    ["route", "method", "error"],
)  # fmt: skip
HTTP_LATENCY = Histogram(
    "chunkbench_http_request_duration_seconds", "Time from request to response headers, by route template.",
    ["route", "method"], buckets=LATENCY_BUCKETS,
)  # fmt: skip
CACHE_LOOKUPS = Counter(
    "chunkbench_cache_lookups_total", "Semantic-cache lookups by result: hit_exact, hit_semantic or miss.", ["result"]
)
CACHE_EVICTIONS = Counter(
    "chunkbench_cache_evictions_total", "Semantic-cache entries removed, by reason: lru, expired or invalidated.",
    ["reason"],
)  # fmt: skip
INJECTIONS_BLOCKED = Counter("chunkbench_injections_blocked_total", "Queries refused by the prompt-injection guard.")
INJECTIONS_FLAGGED_CHUNKS = Counter(
    "chunkbench_injection_flagged_chunks_total", "Ingested chunks flagged as possible indirect prompt injection."
)
PII_DETECTIONS = Counter(
    "chunkbench_pii_detections_total", "PII entities redacted, by entity type and where: query, answer or document.",
    ["entity", "where"],
)  # fmt: skip
LLM_TOKENS = Counter(
    "chunkbench_llm_tokens_total", "Tokens sent to and received from the LLM, by kind: prompt or completion.",
    ["kind"],
)  # fmt: skip
RATE_LIMITED = Counter("chunkbench_rate_limited_total", "Requests refused with 429 by the per-tenant rate limit.")
# The job queue, read from the database at each scrape (every worker's, on PostgreSQL).
QUEUE_DEPTH = Gauge("chunkbench_queue_depth", "Job tasks waiting for a worker.")
QUEUE_RUNNING = Gauge("chunkbench_queue_running", "Job tasks running now.")
WORKERS_SEEN = Gauge("chunkbench_workers_seen", "Workers whose heartbeat is recent.")
QUEUE_STALLED = Gauge("chunkbench_queue_stalled", "Job tasks on a worker whose heartbeat stopped (retried elsewhere).")
