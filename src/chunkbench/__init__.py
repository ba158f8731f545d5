"""chunkbench: a RAG chunking benchmarker.

Public API: parse documents with :func:`chunkbench.documents.parsers.parse_document`, manage
them through :mod:`chunkbench.documents.service`, serve with :func:`chunkbench.app.create_app`.
"""

__version__ = "0.1.0"
