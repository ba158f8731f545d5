"""Guards of the RAG service (seed 003): PII redaction so far; auth, rate limits, prompt-injection checks and the
semantic cache belong here too (issue 7)."""
