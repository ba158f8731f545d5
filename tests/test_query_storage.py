"""The query pipeline's storage path: the document columns it reads, the row it writes (SQLAlchemy Core on
real SQLite), the Corpus model it falls back to, and the response it sends being the row it committed."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from sqlalchemy import select

from chunkbench.embedding.roles import EmbeddingRole, set_role_model
from chunkbench.errors import DocumentNotFoundError
from chunkbench.retrieval.queries import _resolve_corpus
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import DocumentRepository, QueryRecord, QueryRepository
from chunkbench.storage.schema import DocumentRow, QueryRow


@pytest.fixture
def database(settings):
    db = Database.from_settings(settings)
    yield db
    db.dispose()


def _document(document_id: str = "d1", filename: str = "a.md", **overrides) -> DocumentRow:
    values = dict(
        id=document_id, filename=filename, content_hash="h", file_size=1, mime_type="text/markdown",
        parsed_text="x" * 1000, document_tree={"root": {}}, chunk_counts={"recursive": 3, "fixed_size": 7},
        last_corpus_embedding_model_id="all-MiniLM-L6-v2", status="indexed", attempts=1,
    )  # fmt: skip
    values.update(overrides)
    return DocumentRow(**values)


def _record(document_id: str = "d1") -> QueryRecord:
    return QueryRecord(
        document_id=document_id,
        strategy_name="recursive",
        question="How many leave days?",
        answer="25 days [Source 1]",
        config={"retriever": "dense", "top_k": 5},
        sources=[{"number": 1, "chunk_id": "c1", "text": "Employees get 25 days (می‌شود)."}],
        citations=[1],
        retrieved_chunks=[{"chunk_id": "c1", "chunk_index": 0, "score": 0.5}],
        expansion_tree=[{"chunk_id": "c1", "neighbors_prev": [], "neighbors_next": []}],
        latency_breakdown={"embed": 1.5, "total": 2.25},
        token_usage={"prompt_tokens": 0, "total_tokens": 0},
    )


def test_query_target_reads_the_four_columns_of_the_tenants_document(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
        DocumentRepository(session, "other").add(_document("d2", last_corpus_embedding_model_id=None))
    with database.engine.connect() as connection:
        target = QueryRepository(connection, "default").query_target("d1")
        other = QueryRepository(connection, "other").query_target("d2")
    assert (target.id, target.filename, target.chunk_counts) == ("d1", "a.md", {"recursive": 3, "fixed_size": 7})
    assert target.last_corpus_embedding_model_id == "all-MiniLM-L6-v2"
    assert other.last_corpus_embedding_model_id is None


@pytest.mark.parametrize(("tenant", "document_id"), [("other", "d1"), ("default", "nope")])
def test_query_target_of_another_tenants_or_a_missing_document_is_404(database, tenant, document_id):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
    with database.engine.connect() as connection, pytest.raises(DocumentNotFoundError) as info:
        QueryRepository(connection, tenant).query_target(document_id)
    assert info.value.status_code == 404 and document_id in info.value.message


def test_added_query_is_stored_with_its_tenant_id_time_and_json(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
    with database.engine.begin() as connection:
        created_at = QueryRepository(connection, "default").add(_record(), query_id="q1")
    with database.session() as session:
        row = session.scalar(select(QueryRow).where(QueryRow.id == "q1"))
    assert row is not None and row.tenant_id == "default" and row.document_id == "d1"
    assert created_at.tzinfo is UTC and row.created_at.replace(tzinfo=UTC) == created_at
    record = _record()
    assert (row.question, row.answer, row.config, row.sources) == (
        record.question, record.answer, record.config, record.sources,
    )  # fmt: skip
    assert (row.citations, row.retrieved_chunks, row.expansion_tree) == (
        [1],
        record.retrieved_chunks,
        record.expansion_tree,
    )
    assert (row.latency_breakdown, row.token_usage) == ({"embed": 1.5, "total": 2.25}, record.token_usage)


def test_a_query_added_in_a_session_that_rolls_back_leaves_no_row(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
    with pytest.raises(RuntimeError), database.session() as session:
        QueryRepository(session, "default").add(_record(), query_id="q1")
        raise RuntimeError("the caller failed after the insert")
    with database.session() as session:
        assert session.scalar(select(QueryRow.id)) is None


def test_a_query_of_an_unknown_document_is_refused_by_the_foreign_key(database):
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError), database.engine.begin() as connection:
        QueryRepository(connection, "default").add(_record("missing"), query_id="q1")


def test_corpus_model_is_the_requested_one_then_the_documents_then_the_configured_role(database):
    with database.session() as session:
        set_role_model(session, EmbeddingRole.CORPUS, "all-mpnet-base-v2")
    assert _resolve_corpus(database, "text-embedding-3-small", "all-MiniLM-L6-v2").id == "text-embedding-3-small"
    assert _resolve_corpus(database, None, "all-MiniLM-L6-v2").id == "all-MiniLM-L6-v2"
    assert _resolve_corpus(database, None, None).id == "all-mpnet-base-v2"


HANDBOOK = b"""# Handbook

## Leave

Every employee receives 25 days of paid annual leave per calendar year. Unused leave can be carried over.

## Travel

Train travel is preferred for journeys under five hours. Hotel costs are reimbursed up to 150 euros a night.
"""


@pytest.mark.model
def test_posted_query_is_committed_and_its_response_is_the_stored_query(client):
    document_id = client.post("/documents", files={"file": ("h.md", HANDBOOK)}).json()["document"]["id"]
    processed = client.post(f"/documents/{document_id}/process?wait=true", json={"strategies": ["recursive"]})
    assert processed.status_code == 200, processed.text
    response = client.post(
        "/queries", json={"document_id": document_id, "strategy": "recursive", "question": "Hotel costs per night?"}
    )
    assert response.status_code == 201, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert "150 euros" in body["answer"] and body["id"]
    # Committed before the response: another connection sees the row.
    other = Database(client.app.state.settings.sqlalchemy_url)
    with other.engine.connect() as connection:
        stored_id = connection.execute(select(QueryRow.id).where(QueryRow.id == body["id"])).scalar()
    other.dispose()
    assert stored_id == body["id"]
    # The JSON written from the built model is what FastAPI writes for the stored one (timestamps aside:
    # SQLite returns them without a zone).
    stored = client.get(f"/queries/{body['id']}").json()
    assert body.pop("created_at").startswith(stored.pop("created_at")[:19])
    assert json.dumps(body, sort_keys=True) == json.dumps(stored, sort_keys=True)


def test_posting_a_query_for_an_unknown_document_is_404_and_stores_nothing(client):
    response = client.post("/queries", json={"document_id": "nope", "strategy": "recursive", "question": "Why?"})
    assert response.status_code == 404 and response.json()["error"] == "document_not_found"
    assert client.get("/queries").json() == []
