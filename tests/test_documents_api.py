"""Documents API through the real app: uploads, replacement, limits, errors, index-directory."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import docx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from chunkbench.app import create_app
from chunkbench.storage.schema import DocumentRow
from docgen import pdfs

MARKDOWN = "# Guide\n\nIntro paragraph.\n\n## Install\n\nRun make run.\n\n## Usage\n\nAsk a question.\n"


def _upload(client: TestClient, name: str, data: bytes):
    return client.post("/documents", files={"file": (name, data)})


def _row_count(client: TestClient) -> int:
    with client.app.state.database.session() as session:
        return session.scalar(select(func.count()).select_from(DocumentRow))


def _docx_bytes(heading: str = "Policy") -> bytes:
    document = docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph("Claims are paid within 30 days.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_upload_returns_tree_markdown_and_metadata(client):
    response = _upload(client, "guide.md", MARKDOWN.encode())
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["outcome"] == "created"
    document = body["document"]
    assert (document["status"], document["mime_type"], document["heading_count"]) == (
        "parsed",
        "text/markdown",
        3,
    )
    assert document["language"] == "und"  # eight words: too few to tell (English at 0.38, below 0.8)
    assert document["file_size"] == len(MARKDOWN.encode())

    detail = client.get(f"/documents/{document['id']}").json()
    assert [(h["level"], h["heading"]) for h in detail["headings"]] == [
        (1, "Guide"),
        (2, "Install"),
        (2, "Usage"),
    ]
    assert detail["markdown_preview"].startswith("# Guide")
    guide = detail["tree"]["root"]["children"][0]
    assert [child["heading"] for child in guide["children"][1:]] == ["Install", "Usage"]
    full = client.get(f"/documents/{document['id']}/markdown")
    assert full.headers["content-type"].startswith("text/markdown")
    assert "## Usage" in full.text


def test_preview_is_truncated_on_request(client):
    document_id = _upload(client, "guide.md", MARKDOWN.encode()).json()["document"]["id"]
    detail = client.get(f"/documents/{document_id}", params={"preview_chars": 7}).json()
    assert detail["markdown_preview"] == "# Guide"
    assert detail["markdown_truncated"] is True


def test_same_bytes_again_is_unchanged(client):
    first = _upload(client, "guide.md", MARKDOWN.encode()).json()
    again = _upload(client, "guide.md", MARKDOWN.encode())
    assert again.status_code == 200
    assert again.json()["outcome"] == "unchanged"
    assert again.json()["document"]["id"] == first["document"]["id"]
    assert _row_count(client) == 1


def test_same_filename_new_content_replaces_the_document(client):
    old_id = _upload(client, "policy.docx", _docx_bytes("Old")).json()["document"]["id"]
    response = _upload(client, "policy.docx", _docx_bytes("New"))
    assert response.status_code == 201
    body = response.json()
    assert (body["outcome"], body["replaced_id"]) == ("replaced", old_id)
    assert client.get(f"/documents/{old_id}").status_code == 404
    headings = client.get(f"/documents/{body['document']['id']}").json()["headings"]
    assert [h["heading"] for h in headings] == ["New"]
    assert _row_count(client) == 1


def test_identical_content_under_another_name_is_flagged(client):
    first_id = _upload(client, "a.md", MARKDOWN.encode()).json()["document"]["id"]
    body = _upload(client, "b.md", MARKDOWN.encode()).json()
    assert body["outcome"] == "created"
    assert body["duplicate_of"] == first_id


def test_failed_replacement_keeps_the_good_document(client):
    good_id = _upload(client, "policy.docx", _docx_bytes()).json()["document"]["id"]
    response = _upload(client, "policy.docx", b"PK\x03\x04 this is no zip")
    assert response.status_code == 400
    assert client.get(f"/documents/{good_id}").status_code == 200
    assert _row_count(client) == 1


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("notes.xlsx", b"anything", 415, "unsupported_file_type"),
        ("noextension", b"anything", 415, "unsupported_file_type"),
        ("fake.pdf", os.urandom(2048), 415, "unsupported_file_type"),
        ("empty.txt", b"", 400, "empty_document"),
        ("blank.md", b"  \n\n \t\n", 400, "empty_document"),
        ("broken.docx", b"PK\x03\x04" + os.urandom(512), 400, "corrupt_document"),
    ],
)
def test_bad_files_are_refused_and_leave_nothing(client, name, data, status, code):
    response = _upload(client, name, data)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code
    assert name in body["message"] or code == "corrupt_document"
    assert _row_count(client) == 0


def test_upload_over_the_size_limit_is_413(settings):
    settings.max_upload_mb = 0.001  # ~1 KB
    with TestClient(create_app(settings)) as client:
        response = _upload(client, "big.txt", b"word " * 1000)
        assert response.status_code == 413
        assert "CHUNKBENCH_MAX_UPLOAD_MB" in response.json()["message"]
        assert _row_count(client) == 0


def test_docx_zip_bomb_is_refused(client, settings):
    settings.max_docx_uncompressed_mb = 2
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as entry:
            block = b"\0" * (1 << 20)
            for _ in range(10):
                entry.write(block)
    response = _upload(client, "bomb.docx", buffer.getvalue())
    assert response.status_code == 400
    assert response.json()["error"] == "archive_bomb"
    assert _row_count(client) == 0


def test_directory_parts_of_the_client_filename_are_dropped(client):
    body = _upload(client, "../../etc/evil.md", MARKDOWN.encode()).json()
    assert body["document"]["filename"] == "evil.md"


def test_list_paginates_and_filters(client):
    for name in ("a.md", "b.md", "c.md"):
        _upload(client, name, f"# {name}\n\nbody".encode())
    page = client.get("/documents", params={"limit": 2}).json()
    assert (page["total"], len(page["items"])) == (3, 2)
    assert client.get("/documents", params={"status": "indexed"}).json()["total"] == 0
    assert client.get("/documents", params={"status": "bogus"}).status_code == 422


def test_list_filters_by_mime_type(client):
    _upload(client, "a.md", b"# A\n\nbody")
    _upload(client, "b.txt", b"plain body")
    _upload(client, "c.docx", _docx_bytes())
    word_and_text = client.get(
        "/documents",
        params={"mime_type": ["text/plain", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"]},
    ).json()
    assert (word_and_text["total"], sorted(d["filename"] for d in word_and_text["items"])) == (2, ["b.txt", "c.docx"])
    assert client.get("/documents", params={"mime_type": "application/pdf"}).json() == {
        "items": [], "total": 0, "limit": 100, "offset": 0,
    }  # fmt: skip


def test_delete_then_404(client):
    document_id = _upload(client, "a.md", MARKDOWN.encode()).json()["document"]["id"]
    assert client.delete(f"/documents/{document_id}").status_code == 204
    missing = client.get(f"/documents/{document_id}")
    assert missing.status_code == 404
    assert missing.json()["error"] == "document_not_found"
    assert client.delete(f"/documents/{document_id}").status_code == 404


def _stage(settings, relative: str, files: dict[str, bytes]) -> Path:
    folder = settings.data_dir / relative
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_index_directory_ingests_good_files_and_reports_bad_ones(client, settings):
    _stage(
        settings,
        "inbox",
        {
            "guide.md": MARKDOWN.encode(),
            "nested/policy.docx": _docx_bytes(),
            "nested/page.html": b"<html><body><h1>Hi</h1><p>There</p></body></html>",
            "broken.pdf": b"%PDF-1.7\n garbage",
            "empty.txt": b"",
            "ignored.xyz": b"not even looked at",
            ".hidden/secret.md": b"# secret",
        },
    )
    response = client.post("/documents/index-directory", json={"path": "inbox"})
    assert response.status_code == 200, response.text
    body = response.json()

    def reason(result):
        return (result["error"] or {}).get("error") or (result["skip_reason"] or {}).get("code")

    outcomes = {r["source_key"]: (r["outcome"], reason(r)) for r in body["results"]}
    assert outcomes == {
        ".hidden": ("skipped", "hidden"),
        "broken.pdf": ("failed", "corrupt_document"),
        "empty.txt": ("skipped", "empty"),
        "guide.md": ("created", None),
        "ignored.xyz": ("skipped", "unsupported_type"),
        "nested/page.html": ("created", None),
        "nested/policy.docx": ("created", None),
    }
    assert [r["source_key"] for r in body["results"]] == sorted(outcomes)  # path order
    assert (body["ingested"], body["failed"], body["skipped"]) == (3, 1, 3)
    assert body["summary"]["line"] == "7 files: 3 ingested, 1 refused, 1 unsupported, 1 hidden, 1 empty"
    assert _row_count(client) == 3
    again = client.post("/documents/index-directory", json={"path": "inbox"}).json()
    assert (again["ingested"], again["unchanged"]) == (0, 3)


@pytest.mark.parametrize("path", ["..", "../..", "inbox/../../", "/etc", "/"])
def test_index_directory_refuses_paths_outside_the_data_dir(client, settings, path):
    _stage(settings, "inbox", {"a.md": b"# a"})
    response = client.post("/documents/index-directory", json={"path": path})
    assert response.status_code == 400
    assert response.json()["error"] == "path_outside_data_dir"


def test_index_directory_refuses_a_symlink_that_escapes(client, settings, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("# a")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "link").symlink_to(outside)
    response = client.post("/documents/index-directory", json={"path": "link"})
    assert response.status_code == 400


def test_index_directory_missing_folder_is_404(client):
    response = client.post("/documents/index-directory", json={"path": "nowhere"})
    assert response.status_code == 404


def test_openapi_documents_the_routes(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/documents", "/documents/{document_id}", "/documents/index-directory"} <= set(paths)
    assert client.get("/docs").status_code == 200


def test_hostile_pdfs_get_their_own_status_and_leave_nothing(client, tmp_path):
    source = pdfs.make_structured_pdf(tmp_path, chapters=1, name="source.pdf")
    cases = {
        "scan.pdf": (pdfs.make_image_pdf(tmp_path), 422, "scanned_pdf"),
        "locked.pdf": (pdfs.make_encrypted_pdf(source, tmp_path), 400, "encrypted_document"),
        "cut.pdf": (pdfs.make_truncated_pdf(source, tmp_path), 400, "corrupt_document"),
    }
    for name, (path, status, code) in cases.items():
        response = _upload(client, name, path.read_bytes())
        assert (response.status_code, response.json()["error"]) == (status, code), name
    assert _row_count(client) == 0
    assert _upload(client, "source.pdf", source.read_bytes()).status_code == 201


def test_doc_without_libreoffice_is_415_naming_the_package(client, settings):
    settings.libreoffice_binary = "no-such-soffice"
    ole_header = bytes.fromhex("D0CF11E0A1B11AE1") + b"\0" * 504
    response = _upload(client, "old.doc", ole_header)
    assert response.status_code == 415
    assert response.json()["error"] == "converter_unavailable"
    assert "libreoffice-writer-nogui" in response.json()["message"]


def test_formats_lists_every_type_the_server_ingests_with_its_parser(client):
    formats = {f["suffix"]: f for f in client.get("/documents/formats").json()}
    assert list(formats) == sorted(formats)  # by suffix
    assert {".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".eml", ".epub", ".rst", ".org", ".py", ".rs"} <= set(formats)
    assert formats[".pdf"]["mime_type"] == "application/pdf" and formats[".pdf"]["kind"] == "text"
    assert formats[".rs"]["kind"] == "code" and formats[".md"]["verbatim"] is True
    assert ".exe" not in formats
    # what it lists is what an upload accepts, and a type it does not list is refused
    assert client.post("/documents", files={"file": ("notes.org", b"* Plan\nShip it.\n")}).status_code == 201
    refused = client.post("/documents", files={"file": ("tool.exe", b"MZ")})
    assert refused.status_code == 415 and ".pptx" in refused.json()["message"]
