"""The bounds every face shares, each written once: API schemas, the CLI, Settings and the pipeline read them here."""

# Hits handed to an answerer per question (docs/api.md).
MAX_TOP_K = 20
# Candidates fetched for a reranker, and the deepest a retrieval-only evaluation ranks.
MAX_CANDIDATE_K = 200
# Neighbor Expansion: chunks added on each side of a hit.
MAX_NEIGHBORS = 5
# Characters of one question or query.
MAX_QUESTION_CHARS = 4000
