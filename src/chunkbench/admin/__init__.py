"""Admin (seed 000 §11): embedding model roles and thresholds, Qdrant collections, Chunk Preview."""
