"""The server engine where no Qdrant server can run: qdrant-client's in-process local mode answers the same client
API. What it does not cover: the HTTP transport, the server's HNSW, and payload indexes (local mode ignores them)."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient

from chunkbench.config import Settings
from chunkbench.storage.qdrant_server import ServerEngine
from chunkbench.storage.vectors import VectorStore

# Local mode warns that payload indexes and search parameters (but idf) do nothing there.
LOCAL_MODE_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect"),
    pytest.mark.filterwarnings("ignore:Local mode performs exact"),
]


def server_stand_in(settings: Settings) -> VectorStore:
    """A store on the server engine, over an in-memory local-mode client."""
    return VectorStore(settings, engine=ServerEngine(settings, client=QdrantClient(location=":memory:")))
