"""Indexing: chunk → embed → upsert → record, the one write path of every face (processing, /api/index, evaluation)."""
