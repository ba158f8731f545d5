"""Admin (docs/api.md): embedding model roles and thresholds, Qdrant collections, Chunk Preview."""
