"""Retrieval domain: dense, BM25 and hybrid search, reranking, Neighbor Expansion, parent context, queries."""
