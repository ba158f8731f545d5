"""Corpora and source keys through the real app and the real CLI: folder ingest keyed by relative path, replacement
that keeps corpus membership, corpus CRUD and its errors, tenant isolation, and the 0006 → head migration."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.errors import InvalidCorpusNameError
from chunkbench.models import corpus_name
from chunkbench.storage.db import Database, migrate
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import Base, UtcDateTime
from chunkbench.tenants import accounts

ALPHA = "Alpha notes.\n\nThe alpha team meets on Mondays.\n"
BETA = "Beta notes.\n\nThe beta team meets on Fridays.\n"
GUIDE = "# Guide\n\nHow the teams work.\n"


def _inbox(settings, name: str = "inbox") -> Path:
    """``inbox/a/notes.txt``, ``inbox/b/notes.txt`` (same filename, other content) and ``inbox/guide.md``."""
    root = settings.data_dir / name
    for relative, text in (("a/notes.txt", ALPHA), ("b/notes.txt", BETA), ("guide.md", GUIDE)):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def _index(client: TestClient, path: str = "inbox", **body) -> dict[str, dict]:
    response = client.post("/documents/index-directory", json={"path": path, **body})
    assert response.status_code == 200, response.text
    return {r["source_key"]: r for r in response.json()["results"]}


def _corpus(client: TestClient, name: str) -> dict:
    response = client.get(f"/corpora/{name}")
    assert response.status_code == 200, response.text
    return response.json()


# ------------------------------------------------------------------------------------------------- source keys


def test_the_same_filename_in_two_folders_is_two_documents_keyed_by_relative_path(client, settings):
    _inbox(settings)
    results = _index(client)
    assert set(results) == {"a/notes.txt", "b/notes.txt", "guide.md"}
    assert {r["outcome"] for r in results.values()} == {"created"}
    assert results["a/notes.txt"]["filename"] == results["b/notes.txt"]["filename"] == "notes.txt"
    assert results["a/notes.txt"]["document"]["id"] != results["b/notes.txt"]["document"]["id"]
    listed = client.get("/documents").json()
    assert sorted(item["source_key"] for item in listed["items"]) == ["a/notes.txt", "b/notes.txt", "guide.md"]

    again = _index(client)
    assert {r["outcome"] for r in again.values()} == {"unchanged"}
    assert {k: r["document"]["id"] for k, r in again.items()} == {k: r["document"]["id"] for k, r in results.items()}


def test_changed_content_replaces_only_its_key_and_keeps_its_corpora(client, settings):
    root = _inbox(settings)
    first = _index(client, corpus="teams")
    old_alpha, beta = first["a/notes.txt"]["document"]["id"], first["b/notes.txt"]["document"]["id"]
    assert client.post("/corpora", json={"name": "alpha-only", "document_ids": [old_alpha]}).status_code == 201

    (root / "a" / "notes.txt").write_text(ALPHA + "\nThey moved to Tuesdays.\n", encoding="utf-8")
    second = _index(client)  # no corpus named: the replacement keeps the ones it had
    assert second["a/notes.txt"]["outcome"] == "replaced"
    assert second["a/notes.txt"]["replaced_id"] == old_alpha
    new_alpha = second["a/notes.txt"]["document"]["id"]
    assert second["b/notes.txt"]["outcome"] == "unchanged" and second["b/notes.txt"]["document"]["id"] == beta

    assert client.get(f"/documents/{old_alpha}").status_code == 404
    assert client.get(f"/documents/{new_alpha}").json()["corpora"] == ["alpha-only", "teams"]
    assert [d["id"] for d in _corpus(client, "alpha-only")["documents"]] == [new_alpha]
    assert {d["source_key"] for d in _corpus(client, "teams")["documents"]} == {
        "a/notes.txt",
        "b/notes.txt",
        "guide.md",
    }


def test_the_same_bytes_under_another_key_are_flagged_duplicate(client, settings):
    root = _inbox(settings)
    first = _index(client)
    (root / "c").mkdir()
    (root / "c" / "notes.txt").write_text(ALPHA, encoding="utf-8")
    second = _index(client)
    copy = second["c/notes.txt"]
    assert copy["outcome"] == "created"
    assert copy["duplicate_of"] == first["a/notes.txt"]["document"]["id"]
    assert second["a/notes.txt"]["duplicate_of"] is None  # unchanged, not a copy of itself


def test_an_upload_is_keyed_by_its_sanitised_filename(client):
    created = client.post("/documents", files={"file": ("../../etc/notes.txt", ALPHA.encode())}).json()
    assert (created["source_key"], created["document"]["source_key"]) == ("notes.txt", "notes.txt")
    replaced = client.post("/documents", files={"file": ("notes.txt", BETA.encode())}).json()
    assert replaced["outcome"] == "replaced" and replaced["replaced_id"] == created["document"]["id"]


# ------------------------------------------------------------------------------------------------- corpora API


def test_corpus_crud_through_the_api(client, settings):
    _inbox(settings)
    docs = {key: r["document"]["id"] for key, r in _index(client).items()}

    created = client.post(
        "/corpora", json={"name": "  team notes ", "description": "Both teams", "document_ids": [docs["a/notes.txt"]]}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["name"], body["description"], body["document_count"]) == ("team notes", "Both teams", 1)
    member = body["documents"][0]
    assert set(member) == {"id", "source_key", "filename", "status", "language", "page_count", "chunk_counts"}
    assert (member["id"], member["source_key"], member["filename"], member["status"], member["chunk_counts"]) == (
        docs["a/notes.txt"], "a/notes.txt", "notes.txt", "parsed", {},
    )  # fmt: skip

    added = client.post("/corpora/team notes/documents", json={"document_ids": [docs["b/notes.txt"], docs["guide.md"]]})
    assert added.json() == {"corpus": "team notes", "added": 2, "document_count": 3}
    again = client.post("/corpora/team notes/documents", json={"document_ids": [docs["guide.md"]]})
    assert again.json()["added"] == 0
    assert client.get(f"/corpora/{body['id']}").json()["name"] == "team notes"  # by id too

    listed = client.get("/corpora").json()
    assert [(c["name"], c["document_count"]) for c in listed] == [("team notes", 3)]
    in_corpus = client.get("/documents", params={"corpus": "team notes"}).json()
    assert in_corpus["total"] == 3

    assert client.delete(f"/corpora/team notes/documents/{docs['guide.md']}").status_code == 204
    stranger = client.delete(f"/corpora/team notes/documents/{docs['guide.md']}")
    assert (stranger.status_code, stranger.json()["error"]) == (404, "not_in_corpus")
    assert [d["source_key"] for d in _corpus(client, "team notes")["documents"]] == ["a/notes.txt", "b/notes.txt"]
    assert client.get(f"/documents/{docs['guide.md']}").status_code == 200  # removing never deletes

    assert client.delete("/corpora/team notes").status_code == 204
    assert client.get("/corpora/team notes").json()["error"] == "corpus_not_found"
    assert client.get("/documents").json()["total"] == 3  # deleting a corpus keeps its documents
    assert client.get(f"/documents/{docs['a/notes.txt']}").json()["corpora"] == []


def test_corpus_errors_write_nothing(client, settings):
    _inbox(settings)
    doc = _index(client)["guide.md"]["document"]["id"]
    unknown = client.post("/corpora", json={"name": "papers", "document_ids": [doc, "nope"]})
    assert (unknown.status_code, unknown.json()["error"]) == (404, "document_not_found")
    assert "nope" in unknown.json()["message"]
    assert client.get("/corpora").json() == []  # the corpus row went with the refused request

    assert client.post("/corpora", json={"name": "papers"}).status_code == 201
    taken = client.post("/corpora", json={"name": "papers"})
    assert (taken.status_code, taken.json()["error"]) == (409, "corpus_exists")
    assert client.post("/corpora/papers/documents", json={"document_ids": ["nope"]}).status_code == 404
    assert _corpus(client, "papers")["document_count"] == 0
    assert client.post("/corpora/nowhere/documents", json={"document_ids": [doc]}).status_code == 404
    assert client.delete("/corpora/nowhere").status_code == 404
    assert client.get("/documents", params={"corpus": "nowhere"}).json()["error"] == "corpus_not_found"


@pytest.mark.parametrize("name", ["", "   ", "a/b", "-leading", "x" * 201, "0123456789abcdef0123456789ABCDEF", "a\tb"])
def test_an_invalid_corpus_name_is_422_stating_the_rule(client, name):
    response = client.post("/corpora", json={"name": name})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_corpus_name"
    assert "letters of any script, digits" in response.json()["message"]


def test_a_corpus_name_may_be_any_script_and_is_trimmed():
    assert corpus_name("  قراردادهای\u200cسال ۱۴۰۲ ") == "قراردادهای\u200cسال ۱۴۰۲"
    assert corpus_name("2024") == "2024"  # digits are a name; only the 32-hex shape of an id is refused
    with pytest.raises(InvalidCorpusNameError):
        corpus_name("_hidden")


def test_index_directory_with_a_corpus_joins_every_file_it_ingested(client, settings):
    root = _inbox(settings)
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n%%EOF")
    results = _index(client, corpus="inbox")
    assert results["broken.pdf"]["outcome"] == "failed"
    assert [d["source_key"] for d in _corpus(client, "inbox")["documents"]] == [
        "a/notes.txt",
        "b/notes.txt",
        "guide.md",
    ]
    unchanged = _index(client, corpus="second")  # unchanged documents join too
    assert unchanged["guide.md"]["outcome"] == "unchanged"
    assert _corpus(client, "second")["document_count"] == 3

    refused = client.post("/documents/index-directory", json={"path": "inbox", "corpus": "a/b"})
    assert (refused.status_code, refused.json()["error"]) == (422, "invalid_corpus_name")
    assert [c["name"] for c in client.get("/corpora").json()] == ["inbox", "second"]


@pytest.mark.model
def test_the_chatbot_index_directory_joins_its_corpus_too(client, settings):
    _inbox(settings)
    body = client.post("/api/index-directory", json={"path": "inbox", "corpus": "chat"}).json()
    assert body["status"] == "success" and body["chunks_created"] >= 3, body
    members = [d["source_key"] for d in _corpus(client, "chat")["documents"]]
    assert members == ["a/notes.txt", "b/notes.txt", "guide.md"]
    refused = client.post("/api/index-directory", json={"path": "inbox", "corpus": "../x"})
    assert (refused.status_code, refused.json()["error"]) == (422, "invalid_corpus_name")


def test_deleting_a_document_removes_it_from_its_corpora(client, settings):
    _inbox(settings)
    docs = {key: r["document"]["id"] for key, r in _index(client, corpus="all").items()}
    assert client.delete(f"/documents/{docs['guide.md']}").status_code == 204
    corpus = _corpus(client, "all")
    assert corpus["document_count"] == 2 and docs["guide.md"] not in {d["id"] for d in corpus["documents"]}


def test_another_tenant_can_neither_see_nor_change_a_corpus(settings):
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        headers = {}
        with client.app.state.database.session() as session:
            for tenant in ("tenant-a", "tenant-b"):
                accounts.create_tenant(session, tenant, tenant_id=tenant)
                headers[tenant] = {"Authorization": f"Bearer {accounts.create_key(session, tenant)[1]}"}
        a, b = headers["tenant-a"], headers["tenant-b"]
        doc_a = client.post("/documents", headers=a, files={"file": ("a.md", GUIDE.encode())}).json()["document"]["id"]
        doc_b = client.post("/documents", headers=b, files={"file": ("b.md", ALPHA.encode())}).json()["document"]["id"]
        corpus = client.post("/corpora", headers=a, json={"name": "shared", "document_ids": [doc_a]}).json()

        assert client.get("/corpora", headers=b).json() == []
        for path in ("/corpora/shared", f"/corpora/{corpus['id']}"):
            assert client.get(path, headers=b).status_code == 404
        assert client.post("/corpora/shared/documents", headers=b, json={"document_ids": [doc_b]}).status_code == 404
        assert client.delete(f"/corpora/shared/documents/{doc_a}", headers=b).status_code == 404
        assert client.delete("/corpora/shared", headers=b).status_code == 404
        # A's corpus cannot take B's document either, and B may use the same name for its own corpus.
        assert client.post("/corpora/shared/documents", headers=a, json={"document_ids": [doc_b]}).status_code == 404
        assert client.post("/corpora", headers=b, json={"name": "shared", "document_ids": [doc_b]}).status_code == 201
        assert [d["id"] for d in client.get("/corpora/shared", headers=a).json()["documents"]] == [doc_a]
        assert [d["id"] for d in client.get("/corpora/shared", headers=b).json()["documents"]] == [doc_b]


# -------------------------------------------------------------------------------------------------------- CLI

runner = CliRunner()


@pytest.fixture
def cli(settings, monkeypatch):
    """``chunkbench …`` on the test's data directory and database."""
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("COLUMNS", "200")  # rich reads it on every table: no wrapped source keys to assert on
    get_settings.cache_clear()

    def invoke(*args: str):
        return runner.invoke(cli_app, list(args), catch_exceptions=False)

    yield invoke
    get_settings.cache_clear()


def _json(result) -> dict | list:
    return json.loads(result.stdout)


@pytest.mark.slow
def test_cli_ingest_into_a_corpus_and_manage_it(cli, settings):
    root = _inbox(settings)
    ingested = _json(cli("ingest", str(root), "--corpus", "teams", "--json"))
    assert sorted(r["source_key"] for r in ingested) == ["a/notes.txt", "b/notes.txt", "guide.md"]
    ids = {r["source_key"]: r["document"]["id"] for r in ingested}
    listed = _json(cli("corpora", "list", "--json"))
    assert [(c["name"], c["document_count"]) for c in listed] == [("teams", 3)]
    table = cli("documents", "list").stdout
    assert "a/notes.txt" in table and "b/notes.txt" in table

    # A DOC is an id, a source key, or a filename only one document has.
    created = _json(cli("corpora", "create", "alpha", "a/notes.txt", ids["guide.md"], "--description", "A", "--json"))
    assert {d["source_key"] for d in created["documents"]} == {"a/notes.txt", "guide.md"}
    ambiguous = cli("corpora", "add", "alpha", "notes.txt", "--json")
    assert ambiguous.exit_code == 1
    error = _json(ambiguous)
    assert error["error"] == "ambiguous_document" and error["details"]["source_keys"] == ["a/notes.txt", "b/notes.txt"]
    assert _json(cli("corpora", "add", "alpha", "b/notes.txt", "--json"))["added"] == 1
    removed = _json(cli("corpora", "remove", "alpha", "guide.md", "--json"))
    assert (removed["removed"], removed["document_count"]) == (1, 2)
    assert cli("corpora", "remove", "alpha", "guide.md", "--json").exit_code == 1  # not a member any more

    shown = _json(cli("documents", "show", "a/notes.txt", "--json"))
    assert shown["corpora"] == ["alpha", "teams"]
    text = cli("corpora", "show", "alpha").stdout
    assert "a/notes.txt" in text and "b/notes.txt" in text and "2 documents" in text
    assert "corpora: alpha, teams" in cli("documents", "show", ids["a/notes.txt"]).stdout

    assert _json(cli("corpora", "delete", "alpha", "--json"))["name"] == "alpha"
    assert _json(cli("corpora", "show", "alpha", "--json"))["error"] == "corpus_not_found"
    assert _json(cli("documents", "list", "--json"))["total"] == 3
    assert _json(cli("documents", "list", "--corpus", "teams", "--json"))["total"] == 3


def test_cli_refuses_a_bad_corpus_name_before_ingesting_anything(cli, settings):
    root = _inbox(settings)
    refused = cli("ingest", str(root), "--corpus", "a/b", "--json")
    assert refused.exit_code == 1 and _json(refused)["error"] == "invalid_corpus_name"
    assert _json(cli("documents", "list", "--json"))["total"] == 0
    assert cli("corpora", "create", "x" * 201).exit_code == 1
    assert _json(cli("corpora", "create", "taken", "--json"))["name"] == "taken"
    assert _json(cli("corpora", "create", "taken", "--json"))["error"] == "corpus_exists"


def test_a_file_named_directly_is_keyed_by_its_filename(cli, settings):
    root = _inbox(settings)
    first = _json(cli("ingest", str(root / "a" / "notes.txt"), "--json"))
    assert first[0]["source_key"] == "notes.txt"
    second = _json(cli("ingest", str(root / "b" / "notes.txt"), "--json"))
    assert second[0]["outcome"] == "replaced"  # same key (the filename), other bytes


# -------------------------------------------------------------------------------------------------- migration


def test_a_database_at_revision_0006_keeps_its_documents_keyed_by_filename(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    database = Database.from_settings(settings, run_migrations=False)
    try:
        with database.engine.begin() as connection:  # an empty database on either engine
            Base.metadata.drop_all(connection)
            connection.execute(sa.text("DROP TABLE IF EXISTS alembic_version"))
        migrate(database.engine, "0006")
        documents = sa.table(
            "documents",
            *(sa.column(name) for name in ("id", "tenant_id", "filename", "content_hash", "file_size", "mime_type",
                                           "paragraph_count", "heading_count", "parsed_text", "status", "attempts")),
            sa.column("document_tree", sa.JSON), sa.column("chunk_counts", sa.JSON),
            sa.column("created_at", UtcDateTime()), sa.column("updated_at", UtcDateTime()),
        )  # fmt: skip
        now = datetime(2026, 11, 1, tzinfo=UTC)
        with database.engine.begin() as connection:
            for document_id, tenant, filename in (("d1", "default", "notes.txt"), ("d2", "other", "notes.txt"),
                                                  ("d3", "default", "guide.md")):  # fmt: skip
                connection.execute(documents.insert().values(
                    id=document_id, tenant_id=tenant, filename=filename, content_hash=document_id, file_size=1,
                    mime_type="text/plain", paragraph_count=1, heading_count=0, parsed_text="x", status="parsed",
                    attempts=1, document_tree={"root": {"node_type": "document"}}, chunk_counts={"recursive": 2},
                    created_at=now, updated_at=now,
                ))  # fmt: skip
        migrate(database.engine)
        with database.session() as session:
            rows = {row.id: row for row in DocumentRepository(session, "default").list()[0]}
            assert {(r.id, r.filename, r.source_key) for r in rows.values()} == {
                ("d1", "notes.txt", "notes.txt"), ("d3", "guide.md", "guide.md"),
            }  # fmt: skip
            assert rows["d1"].chunk_counts == {"recursive": 2}
            assert DocumentRepository(session, "other").get_by_source_key("notes.txt").id == "d2"
    finally:
        database.dispose()
