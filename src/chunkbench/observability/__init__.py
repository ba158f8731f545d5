"""Observability: Prometheus metrics, request ids and structured logs."""
