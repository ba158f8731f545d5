"""Retrieval evaluation against span-annotated question sets: Chroma's span metrics and its question data."""
