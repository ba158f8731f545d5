"""Persistence: the metadata store (SQLAlchemy) and, from Step 2 on, the vector store (Qdrant)."""
