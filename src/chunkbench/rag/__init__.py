"""The RAG service (docs/service.md): ``POST /v1/query`` over a tenant's corpus, guarded, PII-safe and cached."""
