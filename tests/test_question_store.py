"""Question files in the metadata store: two app instances with their own data folders on one database see the same
files, a data folder holding files written the old way (``{data_dir}/files``) is imported once, a delete removes the
row, and a benchmark on an imported file records the name and questions it recorded from the folder."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.errors import PathOutsideDataDirError
from chunkbench.evaluation import authoring, question_sets
from chunkbench.storage.app_settings import AppSettingsRepository
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT, QuestionFileRow
from question_store import stored_question_file, stored_question_names
from test_benchmarks import QUESTIONS, processed_handbook

SET = {"questions": QUESTIONS[:2]}
# Bytes as a person writes them (indentation, a trailing newline, a non-ASCII letter): kept exactly, never re-encoded.
OLD_BYTES = (json.dumps({"metadata": {"author": "Zoë"}, **SET}, indent=2, ensure_ascii=False) + "\n").encode()
OLD_MTIME = datetime(2026, 11, 3, 9, 30, tzinfo=UTC)


def _rows(settings: Settings) -> int:
    database = Database(settings.sqlalchemy_url)
    try:
        with database.session() as session:
            return session.scalar(select(func.count()).select_from(QuestionFileRow)) or 0
    finally:
        database.dispose()


def _old_data_folder(settings: Settings) -> None:
    """A data folder as chunkbench left it before question files moved into the database."""
    files = settings.data_dir / "files"
    (files / "tenant-a").mkdir(parents=True)
    (files / "eval" / "handbook").mkdir(parents=True)  # a corpus evaluation's documents: not question files
    (files / "handbook.json").write_bytes(OLD_BYTES)
    os.utime(files / "handbook.json", (OLD_MTIME.timestamp(), OLD_MTIME.timestamp()))
    (files / "broken.json").write_text("[")  # unreadable then, listed with its problem now
    (files / "lines.jsonl").write_bytes(b'{"question": "One?"}\n')
    (files / "notes.txt").write_text("not a question file")
    (files / ".hidden.json").write_bytes(OLD_BYTES)
    (files / "eval" / "handbook" / "doc.md").write_text("# A document")
    (files / "tenant-a" / "a-questions.json").write_bytes(b'[{"question": "Tenant A?"}]')


# --------------------------------------------------------------------------- two instances, one database


@pytest.fixture
def shared_url(tmp_path, database_url) -> str:
    """One database for two instances: the test's PostgreSQL database, or a SQLite file outside both data folders."""
    return database_url or f"sqlite:///{tmp_path / 'shared' / 'chunkbench.db'}"


def test_two_instances_with_their_own_data_folders_see_the_same_question_files(tmp_path, shared_url):
    first = Settings(_env_file=None, data_dir=tmp_path / "replica-1", database_url=shared_url)
    second = Settings(_env_file=None, data_dir=tmp_path / "replica-2", database_url=shared_url)
    with TestClient(create_app(first)) as one, TestClient(create_app(second)) as two:
        created = one.post("/admin/questions", files={"file": ("shared.json", OLD_BYTES)})
        assert created.status_code == 201, created.text

        assert [(f["name"], f["question_count"]) for f in two.get("/admin/questions").json()] == [("shared.json", 2)]
        assert two.get("/admin/questions/shared.json/download").content == OLD_BYTES
        assert [q["id"] for q in two.get("/admin/questions/shared.json").json()["questions"]] == ["leave", "ticket"]
        # A write on one is refused on the other as on the same machine, and a replacement is seen by both.
        lines = b'[{"question": "Replaced?"}]'
        refused = two.post("/admin/questions", files={"file": ("shared.json", lines)})
        assert refused.status_code == 409 and refused.json()["error"] == "question_file_exists"
        replaced = two.post("/admin/questions", files={"file": ("shared.json", lines)}, params={"overwrite": "true"})
        assert replaced.status_code == 200 and replaced.json()["replaced"] is True
        assert one.get("/admin/questions/shared.json/download").content == lines

        # Authoring on one instance, read back on the other.
        added = two.post("/admin/questions/authored.json/questions", json={"question": "Written on two?"})
        assert added.status_code == 201, added.text
        assert [q["question"] for q in one.get("/admin/questions/authored.json").json()["questions"]] == [
            "Written on two?"
        ]

        assert two.delete("/admin/questions/shared.json").status_code == 204
        assert one.get("/admin/questions/shared.json").status_code == 404
        assert [f["name"] for f in one.get("/admin/questions").json()] == ["authored.json"]
    # Neither data folder holds a question file.
    assert not (first.data_dir / "files").exists() and not (second.data_dir / "files").exists()


def test_delete_removes_the_row(client, settings):
    assert client.post("/admin/questions", files={"file": ("gone.json", OLD_BYTES)}).status_code == 201
    assert client.post("/admin/questions", files={"file": ("kept.json", OLD_BYTES)}).status_code == 201
    assert _rows(settings) == 2
    assert client.delete("/admin/questions/gone.json").status_code == 204
    assert _rows(settings) == 1 and stored_question_names(settings) == ["kept.json"]
    assert stored_question_file(settings, "gone.json") is None


def test_a_stored_file_is_its_bytes_with_their_hash_and_size(client, settings):
    assert client.post("/admin/questions", files={"file": ("handbook.json", OLD_BYTES)}).status_code == 201
    database = Database(settings.sqlalchemy_url)
    try:
        with database.session() as session:
            [row] = session.scalars(select(QuestionFileRow)).all()
            assert (row.tenant_id, row.name, row.content) == (DEFAULT_TENANT, "handbook.json", OLD_BYTES)
            assert row.content_hash == hashlib.sha256(OLD_BYTES).hexdigest() and row.size_bytes == len(OLD_BYTES)
    finally:
        database.dispose()


def test_a_set_created_by_another_replica_between_the_read_and_the_write_is_changed_not_overwritten(client, settings):
    """Adding a question creates the set when it is missing; another replica creating it meanwhile (here: another
    connection, committed between this change's read and its write) keeps its question, and this one is added."""
    database = client.app.state.database
    created: list[bool] = []

    def change(questions):
        if not created:  # the other replica's write, once, while this change is under way
            created.append(True)
            with database.session() as other:
                question_sets.save_question_file(
                    other, settings, "race.json", b'[{"id": "theirs", "question": "First?"}]'
                )
        return [*questions, {"id": "ours", "question": "Second?"}], []

    with database.session() as session:
        authored = authoring._rewrite(session, settings, "race.json", change, create=True, tenant_id=DEFAULT_TENANT)
    assert [q.id for q in authored.question_set] == ["theirs", "ours"]
    assert [q["id"] for q in client.get("/admin/questions/race.json").json()["questions"]] == ["theirs", "ours"]


# --------------------------------------------------------------------------- files written the old way


def test_an_old_data_folder_is_imported_once_with_its_bytes_and_times(settings):
    _old_data_folder(settings)
    with TestClient(create_app(settings)) as client:
        listed = client.get("/admin/questions").json()
        assert [(f["name"], f["question_count"], f["error"] is None) for f in listed] == [
            ("broken.json", None, False),
            ("handbook.json", 2, True),
            ("lines.jsonl", 1, True),
        ]
        handbook = listed[1]
        assert handbook["size_bytes"] == len(OLD_BYTES)
        assert datetime.fromisoformat(handbook["modified_at"]) == OLD_MTIME  # the file's time, not the import's
        assert client.get("/admin/questions/handbook.json/download").content == OLD_BYTES
        assert client.get("/admin/questions/broken.json").status_code == 422

        # Deleted after the import, a file stays deleted at the next start; a file put in the folder now is not read.
        assert client.delete("/admin/questions/lines.jsonl").status_code == 204
    (settings.data_dir / "files" / "late.json").write_bytes(OLD_BYTES)
    with TestClient(create_app(settings)) as restarted:
        assert [f["name"] for f in restarted.get("/admin/questions").json()] == ["broken.json", "handbook.json"]
    # The folder was only read.
    assert (settings.data_dir / "files" / "lines.jsonl").read_bytes() == b'{"question": "One?"}\n'
    assert stored_question_file(settings, "handbook.json") == OLD_BYTES
    assert _rows(settings) == 2  # tenant-a's folder waits for tenant-a's first use


def test_each_tenant_folder_is_imported_on_its_own_and_once(settings):
    _old_data_folder(settings)
    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            assert question_sets.import_legacy_files(session, settings, "tenant-a") == ["a-questions.json"]
            assert question_sets.import_legacy_files(session, settings, "tenant-a") is None  # recorded: not again
            assert question_sets.import_legacy_files(session, settings, "tenant-b") is None  # no folder
            marks = AppSettingsRepository(session).get_many(question_sets.IMPORT_KEY_PREFIX)
            assert set(marks) == {question_sets.IMPORT_KEY_PREFIX + "tenant-a"}
            assert json.loads(marks[question_sets.IMPORT_KEY_PREFIX + "tenant-a"])["imported"] == ["a-questions.json"]
            # The default tenant's folder is files/ itself; tenant-a's file is not the default tenant's.
            names = [info.name for info in question_sets.list_question_files(session, settings)]
            assert names == ["broken.json", "handbook.json", "lines.jsonl"]
            assert [i.name for i in question_sets.list_question_files(session, settings, "tenant-a")] == [
                "a-questions.json"
            ]
    finally:
        database.dispose()
    assert stored_question_names(settings, "tenant-a") == ["a-questions.json"]
    assert stored_question_file(settings, "a-questions.json", DEFAULT_TENANT) is None


def test_a_file_another_replica_imported_or_wrote_first_keeps_the_database_version(tmp_path, shared_url):
    first = Settings(_env_file=None, data_dir=tmp_path / "replica-1", database_url=shared_url)
    second = Settings(_env_file=None, data_dir=tmp_path / "replica-2", database_url=shared_url)
    (second.data_dir / "files").mkdir(parents=True)
    (second.data_dir / "files" / "handbook.json").write_bytes(b'[{"question": "An older copy?"}]')
    with TestClient(create_app(first)) as one:
        assert one.post("/admin/questions", files={"file": ("handbook.json", OLD_BYTES)}).status_code == 201
    with TestClient(create_app(second)) as two:
        assert two.get("/admin/questions/handbook.json/download").content == OLD_BYTES
        assert [f["name"] for f in two.get("/admin/questions").json()] == ["handbook.json"]


def test_a_link_out_of_the_old_folder_stops_the_import_with_its_name(settings, tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_bytes(OLD_BYTES)
    files = settings.data_dir / "files"
    files.mkdir(parents=True)
    (files / "handbook.json").write_bytes(OLD_BYTES)
    (files / "link.json").symlink_to(outside)
    database = Database.from_settings(settings)
    try:
        refused = pytest.raises(PathOutsideDataDirError, match=r"'link\.json' in .* points outside it")
        with refused, database.session() as session:
            question_sets.list_question_files(session, settings)
        (files / "link.json").unlink()
        with database.session() as session:
            assert [info.name for info in question_sets.list_question_files(session, settings)] == ["handbook.json"]
    finally:
        database.dispose()


def test_the_cli_lists_validates_and_adds_question_files_and_says_where_they_live(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(data_dir))
    get_settings.cache_clear()
    try:
        settings = get_settings()
        _old_data_folder(settings)
        runner = CliRunner()
        listed = runner.invoke(cli_app, ["questions", "list"], catch_exceptions=False)
        assert listed.exit_code == 0, listed.stdout
        assert "3 question files in the database (" in listed.stdout and str(data_dir / "files") not in listed.stdout
        validated = runner.invoke(
            cli_app, ["questions", "validate", "lines.jsonl", "--documents", str(tmp_path), "--json"]
        )
        assert json.loads(validated.stdout)["file"] == "lines.jsonl"
        missing = runner.invoke(cli_app, ["questions", "validate", "none.json"])
        assert missing.exit_code == 2 and "No question file 'none.json' in the database" in missing.stderr

        # A file put in the folder now is not read: `questions add` stores it (validated, as an upload is).
        late = tmp_path / "late.json"
        late.write_bytes(OLD_BYTES)
        added = runner.invoke(cli_app, ["questions", "add", str(late)], catch_exceptions=False)
        assert added.exit_code == 0 and "stored late.json (2 questions" in added.stdout, added.stdout
        assert stored_question_file(settings, "late.json") == OLD_BYTES
        again = runner.invoke(cli_app, ["questions", "add", str(late)])
        assert again.exit_code == 1 and "already exists" in again.stderr
        lines = tmp_path / "lines.jsonl"
        lines.write_bytes(b'{"question": "Replaced?"}\n')
        replaced = runner.invoke(cli_app, ["questions", "add", str(lines), "--name", "late.jsonl", "--json"])
        assert json.loads(replaced.stdout)["replaced"] is False and json.loads(replaced.stdout)["question_count"] == 1
        bad = tmp_path / "bad.json"
        bad.write_text('{"questions": [{"id": 1}]}')
        refused = runner.invoke(cli_app, ["questions", "add", str(bad)])
        assert refused.exit_code == 1 and "'question' must be a non-empty string" in refused.stderr
        assert stored_question_file(settings, "bad.json") is None
    finally:
        get_settings.cache_clear()


# --------------------------------------------------------------------------- what a benchmark records


@pytest.mark.model
def test_a_benchmark_on_an_imported_file_records_its_name_and_questions_as_from_the_folder(settings):
    """An Experiment records a question file by name (``config.question_set``) and its questions with their placed
    evidence (no hash of the file: the file's own is ``question_files.content_hash``): the same values whether the
    questions come from a file imported from the old folder or are given inline."""
    (settings.data_dir / "files").mkdir(parents=True)
    (settings.data_dir / "files" / "handbook-questions.json").write_bytes(OLD_BYTES)
    with TestClient(create_app(settings)) as client:
        document_id = processed_handbook(client)
        body = {"document_id": document_id, "strategies": ["recursive"]}
        from_file = client.post(
            "/benchmarks", params={"wait": "true"}, json={**body, "question_set": "handbook-questions.json"}
        )
        assert from_file.status_code == 200, from_file.text
        inline = client.post("/benchmarks", params={"wait": "true"}, json={**body, "questions": SET["questions"]})
        assert inline.status_code == 200, inline.text
    recorded, given = from_file.json(), inline.json()
    assert recorded["config"]["question_set"] == "handbook-questions.json" and given["config"]["question_set"] is None
    assert recorded["questions"] == given["questions"]
    assert [q["id"] for q in recorded["questions"]] == ["leave", "ticket"]
    assert stored_question_file(settings, "handbook-questions.json") == OLD_BYTES
