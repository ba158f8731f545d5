"""``open_document``: what the CLI's commands about one document (``chunks``, ``query``) share, the document named
by id, source key or filename resolved and the stores opened. Not in ``console.py``: resolving needs
``documents.library``, and ``documents/commands.py`` imports the console (a package cycle); a face module of its own
(``*_commands.py``) because the console is a face's import, which no core module of ``documents`` may make."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkbench.console import fail, open_database, vector_store
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DEFAULT_TENANT

if TYPE_CHECKING:  # the stores' modules load when a command runs, not at the CLI's start
    from chunkbench.config import Settings
    from chunkbench.storage.db import Database
    from chunkbench.storage.vectors import VectorStore


def open_document(document: str, as_json: bool) -> tuple[Settings, Database, VectorStore, str]:
    """The settings, the metadata store, the vector store and the id of ``document`` (an id, source key or a filename
    only one document has, in the default tenant). An unknown or ambiguous document, or a vector store that cannot be
    opened, exits 1 with its message (as JSON with ``--json``)."""
    from chunkbench.documents import library

    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
        store = vector_store(settings)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    return settings, database, store, document_id
