"""Guards of the RAG service (docs/service.md): PII redaction so far; auth, rate limits, prompt-injection checks and the
semantic cache belong here too (issue 7)."""
