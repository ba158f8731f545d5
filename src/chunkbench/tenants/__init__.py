"""Tenants, API keys, authentication and per-tenant rate limiting (seed 003)."""
