"""The RAG service (seed 003): ``POST /v1/query`` over a tenant's corpus, guarded, PII-safe and cached."""
