"""Chunking domain: tokens, sentences, the five strategies, the processing service."""
