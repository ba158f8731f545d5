"""Embedding domain: model registry, providers (local, OpenAI-compatible), Corpus/Boundary roles, BM25."""
