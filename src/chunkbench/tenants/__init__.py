"""Tenants, API keys, authentication and per-tenant rate limiting (docs/service.md)."""
