"""Text utilities at the bottom of the layers: cl100k tokens, sentence spans, normalisation (no chunkbench imports)."""
