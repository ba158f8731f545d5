"""E-mail (.eml) on real mails written with the stdlib ``email`` package: headers, bodies, charsets, attachments
ingested as documents of their own (parent, source keys, corpora, re-ingest, delete); Outlook .msg files (laid out
as [MS-OXMSG] says, in a compound file pycfb writes) read the same way."""

from __future__ import annotations

import io
import json
from email.message import EmailMessage
from pathlib import Path

import docx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.documents import library
from chunkbench.documents.discovery import SourceFile
from chunkbench.documents.ingest import ingest_paths
from chunkbench.documents.ingest_results import IngestOutcome
from chunkbench.documents.parsers import parse_document
from chunkbench.errors import CorruptDocumentError, UnsupportedFileTypeError
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from docgen import office, pdfs
from docgen.offsets import assert_exact_offsets
from docgen.outlook import MsgAttachment, MsgMessage, write_msg

TENANT = "default"


def _mail(subject: str = "Quarterly figures", **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = headers.get("sender", "Ana Silva <ana@example.com>")
    message["To"] = "Bo Berg <bo@example.com>"
    message["Cc"] = "team@example.com"
    message["Date"] = "Tue, 01 Dec 2026 10:00:00 +0000"
    message["Subject"] = subject
    return message


def _write(path: Path, message: EmailMessage) -> Path:
    path.write_bytes(message.as_bytes())
    return path


def _docx_bytes() -> bytes:
    document = docx.Document()
    document.add_heading("Claims policy", level=1)
    document.add_paragraph("Claims are paid within 30 days of approval.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.fixture
def lo_settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")


def test_plain_mail_headers_subject_body_and_quoted_reply(tmp_path, lo_settings):
    message = _mail()
    message.set_content(
        "Hello Bo,\n\nThe figures for Q3 are in: revenue grew 12 percent.\n\n"
        "> On Monday, Bo wrote:\n> Could you send the Q3 figures?\n"
    )
    result = parse_document(_write(tmp_path / "figures.eml", message), lo_settings)

    assert result.tree.root.heading == "Quarterly figures"
    assert result.tree.headings() == [(1, "Quarterly figures")]
    assert result.heading_source == "email"
    section = result.tree.root.children[0]
    assert [child.text for child in section.children] == [
        "From: Ana Silva <ana@example.com>\nTo: Bo Berg <bo@example.com>\nCc: team@example.com\n"
        "Date: Tue, 01 Dec 2026 10:00:00 +0000",
        "Hello Bo,",
        "The figures for Q3 are in: revenue grew 12 percent.",
        "> On Monday, Bo wrote:\n> Could you send the Q3 figures?",
    ]
    quoted = section.children[-1]
    assert result.markdown[quoted.start_index : quoted.end_index].startswith("> On Monday")
    assert result.markdown[section.start_index : section.end_index] == result.markdown
    assert_exact_offsets(result)
    assert result.attachments == []


def test_html_only_mail_goes_through_the_html_parser(tmp_path, lo_settings):
    message = _mail("Release notes")
    message.set_content(
        "<html><body><h1>Version 2.0</h1><p>New <b>search</b> page.</p><ul><li>faster</li><li>offline</li></ul>"
        "<script>alert(1)</script></body></html>",
        subtype="html",
    )
    result = parse_document(_write(tmp_path / "notes.eml", message), lo_settings)

    # The body's own headings sit one level below the subject.
    assert result.tree.headings() == [(1, "Release notes"), (2, "Version 2.0")]
    assert "## Version 2.0\n\nNew **search** page.\n\n- faster\n- offline" in result.markdown
    assert "alert" not in result.markdown
    assert_exact_offsets(result)


def test_alternative_mail_prefers_the_plain_part(tmp_path, lo_settings):
    message = _mail("Lunch")
    message.set_content("Plain: lunch at noon.")
    message.add_alternative("<html><body><p>HTML: lunch at noon.</p></body></html>", subtype="html")
    result = parse_document(_write(tmp_path / "lunch.eml", message), lo_settings)
    assert "Plain: lunch at noon." in result.markdown
    assert "HTML:" not in result.markdown


def test_non_utf8_charset_and_encoded_words_are_decoded(tmp_path, lo_settings):
    message = _mail("Größe der Lieferung – Überblick")
    message.set_content("Die Größe ist 3 m², Preis 12 €.", charset="iso-8859-15", cte="quoted-printable")
    raw = message.as_bytes()
    assert b"Gr=F6=DFe" in raw  # really written as ISO-8859-15 quoted-printable, not UTF-8
    result = parse_document(_write(tmp_path / "lieferung.eml", message), lo_settings)
    assert result.tree.root.heading == "Größe der Lieferung – Überblick"
    assert "Die Größe ist 3 m2, Preis 12 €." in result.markdown  # NFKC: ² → 2, as every parser normalises


def test_attachments_nested_mail_and_inline_image(tmp_path, lo_settings):
    message = _mail("Board pack")
    message.set_content("Attached: the report, the policy and a note.")
    message.add_related(b"\x89PNG\r\n\x1a\nfake", maintype="image", subtype="png", cid="<logo>")
    pdf = pdfs.make_structured_pdf(tmp_path, chapters=1)
    message.add_attachment(pdf.read_bytes(), maintype="application", subtype="pdf", filename="report.pdf")
    message.add_attachment(_docx_bytes(), maintype="application", subtype="octet-stream", filename="../policy.docx")
    message.add_attachment("Remember the deadline.", filename="note.txt")
    inner = _mail("Earlier thread", sender="Cy <cy@example.com>")
    inner.set_content("The first draft is ready.")
    message.add_attachment(inner, filename="thread.eml")
    result = parse_document(_write(tmp_path / "pack.eml", message), lo_settings)

    assert [a.filename for a in result.attachments] == ["report.pdf", "policy.docx", "note.txt", "thread.eml"]
    assert result.attachments[0].data == pdf.read_bytes()
    assert result.attachments[2].data.decode().strip() == "Remember the deadline."
    (tmp_path / "attached.eml").write_bytes(result.attachments[3].data)
    attached_mail = parse_document(tmp_path / "attached.eml", lo_settings)
    assert attached_mail.tree.root.heading == "Earlier thread"
    assert (
        "From: Cy <cy@example.com>" in attached_mail.markdown and "The first draft is ready." in attached_mail.markdown
    )
    assert any("1 inline image" in warning for warning in result.warnings)
    assert "Attached: the report" in result.markdown


def test_text_without_headers_is_not_a_mail(tmp_path, lo_settings):
    path = tmp_path / "notes.eml"
    path.write_text("Just some notes, no headers at all.\n")
    with pytest.raises(UnsupportedFileTypeError, match=r"named like an e-mail \(\.eml\) but its content is not one"):
        parse_document(path, lo_settings)


def _outlook_pack() -> MsgMessage:
    thread = MsgMessage(
        "Earlier thread",
        sender_name="Cy",
        sender_email="cy@example.com",
        body="The first draft is ready.",
        attachments=[MsgAttachment("draft.txt", b"Draft text v1.")],
    )
    return MsgMessage(
        "Quarterly figures",
        cc="Team",
        body="Hello Bo,\r\n\r\nThe figures are in.\r\n\r\n> On Monday, Bo wrote:\r\n> Send them\r\n",
        attachments=[
            MsgAttachment("note.txt", b"Remember the deadline.", "text/plain"),
            MsgAttachment("logo.png", b"\x89PNG\r\n\x1a\n", "image/png", content_id="logo@example.com"),
        ],
        attached_messages=[thread],
    )


def test_msg_reads_like_an_eml(tmp_path, lo_settings):
    result = parse_document(write_msg(tmp_path / "figures.msg", _outlook_pack()), lo_settings)

    assert result.tree.root.heading == "Quarterly figures"
    assert result.markdown == (
        "# Quarterly figures\n\nFrom: Ana Silva <ana@example.com>\nTo: Bo Berg\nCc: Team\n"
        "Date: Tue, 01 Dec 2026 10:00:00 +0000\n\nHello Bo,\n\nThe figures are in.\n\n"
        "> On Monday, Bo wrote:\n> Send them"
    )
    assert_exact_offsets(result)
    # The inline picture is skipped; the attached mail is handed on as an .eml, its own attachment inside it.
    assert [a.filename for a in result.attachments] == ["note.txt", "Earlier thread.eml"]
    assert any("1 inline image" in warning for warning in result.warnings)
    (tmp_path / "thread.eml").write_bytes(result.attachments[1].data)
    thread = parse_document(tmp_path / "thread.eml", lo_settings)
    assert thread.tree.root.heading == "Earlier thread"
    assert "From: Cy <cy@example.com>" in thread.markdown
    assert [(a.filename, a.data) for a in thread.attachments] == [("draft.txt", b"Draft text v1.")]


OUTLOOK = Path(__file__).parent / "fixtures" / "outlook"  # written by Outlook (msg_parser's test files, BSD-2)


def test_msg_files_written_by_outlook(tmp_path, lo_settings):
    outer = parse_document(OUTLOOK / "outer.msg", lo_settings)
    assert outer.markdown == "# outer subject\n\nTo: outer@foo.bar\nDate: Tue, 15 Nov 2016 23:29:05 +0000\n\nOuter body"
    assert_exact_offsets(outer)
    (attached,) = outer.attachments
    assert attached.filename == "test.eml"
    (tmp_path / "test.eml").write_bytes(attached.data)
    assert parse_document(tmp_path / "test.eml", lo_settings).markdown == (
        "# test\n\nTo: test@foobar.com\nDate: Tue, 15 Nov 2016 23:28:26 +0000\n\nbody"
    )

    notice = parse_document(OUTLOOK / "other.msg", lo_settings)
    assert notice.tree.root.heading == "投递状态通知 (Failure Notice)"
    assert "From: Mail Delivery Subsystem <mailer-daemon@tjdpf.org.cn>" in notice.markdown
    assert "The recipients is locked. (User Locked)" in notice.markdown
    assert_exact_offsets(notice)
    (bounced,) = notice.attachments
    assert bounced.filename == "default_attachment.eml"
    (tmp_path / "bounced.eml").write_bytes(bounced.data)
    inner = parse_document(tmp_path / "bounced.eml", lo_settings)
    assert inner.tree.headings() == [(1, "回复:转发:反馈·北京 2017年12月02-03日 销售")]  # NFKC: ： → :
    assert [a.filename for a in inner.attachments] == ["北京 2017年12月02-03日 销售主管 确认n.pdf"]


def test_msg_with_an_ansi_html_body(tmp_path, lo_settings):
    message = MsgMessage(
        "Größe der Lieferung",
        html="<html><body><h1>Überblick</h1><p>Preis 12 € für das Café.</p><script>x()</script></body></html>",
        codepage=1252,
    )
    result = parse_document(write_msg(tmp_path / "lieferung.msg", message), lo_settings)
    assert result.tree.headings() == [(1, "Größe der Lieferung"), (2, "Überblick")]
    assert result.markdown.endswith("## Überblick\n\nPreis 12 € für das Café.")
    assert_exact_offsets(result)


def test_other_ole_files_named_msg_are_refused(tmp_path, lo_settings):
    doc = office.make_fake_ole(tmp_path / "report.msg", "WordDocument", b"\xec\xa5" + bytes(30))
    with pytest.raises(CorruptDocumentError, match="not an Outlook message"):
        parse_document(doc, lo_settings)
    truncated = tmp_path / "cut.msg"
    truncated.write_bytes(write_msg(tmp_path / "whole.msg", _outlook_pack()).read_bytes()[:1500])
    with pytest.raises(CorruptDocumentError, match="damaged Outlook message"):
        parse_document(truncated, lo_settings)


def _ingest(settings: Settings, path: Path, key: str, corpus: str | None = None):
    database = Database.from_settings(settings)
    try:
        (result,) = ingest_paths(database, settings, [SourceFile(path, key)], tenant_id=TENANT, corpus=corpus)
        return result
    finally:
        database.dispose()


def _pack(tmp_path: Path, note: str = "Remember the deadline.") -> EmailMessage:
    message = _mail("Board pack")
    message.set_content("Attached: the policy, a note, an archive and a thread.")
    message.add_attachment(_docx_bytes(), maintype="application", subtype="octet-stream", filename="policy.docx")
    message.add_attachment(note, filename="note.txt")
    message.add_attachment(b"PK\x03\x04 not really", maintype="application", subtype="zip", filename="data.zip")
    inner = _mail("Earlier thread")
    inner.set_content("The first draft is ready.")
    inner.add_attachment("Draft text v1.", filename="draft.txt")
    message.add_attachment(inner, filename="thread.eml")
    return message


def test_ingest_stores_attachments_as_documents_with_a_parent(tmp_path, settings):
    mail = _write(tmp_path / "pack.eml", _pack(tmp_path))
    result = _ingest(settings, mail, "inbox/pack.eml", corpus="board")

    assert result.outcome is IngestOutcome.CREATED
    by_key = {a.source_key: a for a in result.attachments}
    assert list(by_key) == [
        "inbox/pack.eml//policy.docx",
        "inbox/pack.eml//note.txt",
        "inbox/pack.eml//data.zip",
        "inbox/pack.eml//thread.eml",
    ]
    assert by_key["inbox/pack.eml//data.zip"].outcome is IngestOutcome.FAILED
    assert by_key["inbox/pack.eml//data.zip"].error.code == "unsupported_file_type"
    assert any(w.startswith("Attachment 'data.zip' was not ingested") for w in result.warnings)
    thread = by_key["inbox/pack.eml//thread.eml"]
    assert [a.source_key for a in thread.attachments] == ["inbox/pack.eml//thread.eml//draft.txt"]

    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            repo = DocumentRepository(session, TENANT)
            mail_row = repo.get_by_source_key("inbox/pack.eml")
            policy = repo.get_by_source_key("inbox/pack.eml//policy.docx")
            draft = repo.get_by_source_key("inbox/pack.eml//thread.eml//draft.txt")
            thread_row = repo.get_by_source_key("inbox/pack.eml//thread.eml")
            assert policy.parent_id == mail_row.id and thread_row.parent_id == mail_row.id
            assert draft.parent_id == thread_row.id
            assert policy.mime_type.endswith("wordprocessingml.document") and policy.heading_count == 1
            assert policy.parsed_text == "# Claims policy\n\nClaims are paid within 30 days of approval."
            # Attachments join the mail's corpus, nested ones too.
            members = CorpusRepository(session, TENANT).corpora_of
            assert members(policy.id) == members(draft.id) == members(mail_row.id) == ["board"]
            assert repo.get_by_source_key("inbox/pack.eml//data.zip") is None
    finally:
        database.dispose()


def test_reingest_replaces_attachments_and_unchanged_lists_them(tmp_path, settings):
    mail = _write(tmp_path / "pack.eml", _pack(tmp_path))
    first = _ingest(settings, mail, "pack.eml")
    again = _ingest(settings, mail, "pack.eml")
    assert again.outcome is IngestOutcome.UNCHANGED
    assert [a.outcome for a in again.attachments] == [IngestOutcome.UNCHANGED] * 3  # the failed zip is not stored
    old_note = next(a for a in first.attachments if a.filename == "note.txt").document.id

    changed = _pack(tmp_path, note="The deadline moved to Friday.")
    changed.replace_header("Subject", "Board pack (v2)")
    replaced = _ingest(settings, _write(tmp_path / "pack.eml", changed), "pack.eml")
    assert replaced.outcome is IngestOutcome.REPLACED
    note = next(a for a in replaced.attachments if a.filename == "note.txt")
    assert note.outcome is IngestOutcome.REPLACED and note.replaced_id == old_note
    assert old_note in replaced.removed_attachment_ids
    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            repo = DocumentRepository(session, TENANT)
            assert repo.get_optional(old_note) is None
            keys = sorted(row.source_key for row in repo.list(limit=100)[0])
            assert keys == [
                "pack.eml",
                "pack.eml//note.txt",
                "pack.eml//policy.docx",
                "pack.eml//thread.eml",
                "pack.eml//thread.eml//draft.txt",
            ]
            assert "Friday" in repo.get_by_source_key("pack.eml//note.txt").parsed_text
    finally:
        database.dispose()


def test_attachments_left_without_their_mail_are_replaced_not_a_conflict(tmp_path, settings):
    mail = _write(tmp_path / "pack.eml", _pack(tmp_path))
    _ingest(settings, mail, "pack.eml")
    database = Database.from_settings(settings)
    try:
        with database.session() as session:  # the mail's row alone goes (parent_id is SET NULL on its attachments)
            repo = DocumentRepository(session, TENANT)
            repo.delete(repo.get_by_source_key("pack.eml"))
        again = _ingest(settings, mail, "pack.eml")
        assert again.outcome is IngestOutcome.CREATED
        assert {a.outcome for a in again.attachments if a.document is not None} == {IngestOutcome.REPLACED}
        with database.session() as session:
            rows = DocumentRepository(session, TENANT).list(limit=100)[0]
            assert len(rows) == 5 and all(row.parent_id is not None for row in rows if "//" in row.source_key)
    finally:
        database.dispose()


def test_a_real_file_key_can_never_be_an_attachment_key(tmp_path, settings):
    path = tmp_path / "x.txt"
    path.write_text("hello there")
    assert _ingest(settings, path, "inbox/pack.eml//x.txt").source_key == "inbox/pack.eml/x.txt"
    assert library.attachment_source_key("inbox/pack.eml", "x.txt") == "inbox/pack.eml//x.txt"


def _process(client: TestClient, document_id: str) -> None:
    response = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"}, json={"strategies": ["fixed_size"]}
    )
    assert response.status_code == 200, response.text


def _points(client: TestClient) -> int:
    return sum(c["points"] for c in client.get("/admin/qdrant/collections").json())


@pytest.mark.model
def test_api_upload_lists_attachments_and_delete_takes_them_with_their_vectors(client, tmp_path):
    message = _mail("Contract")
    message.set_content("The signed contract is attached.")
    message.add_attachment("The supplier delivers within ten working days of each order.", filename="contract.txt")
    response = client.post("/documents", files={"file": ("contract.eml", message.as_bytes())})
    assert response.status_code == 201, response.text
    body = response.json()
    (attachment,) = body["attachments"]
    assert attachment["source_key"] == "contract.eml//contract.txt"
    assert attachment["outcome"] == "created"
    assert attachment["document"]["parent_id"] == body["document"]["id"]
    assert attachment["document"]["mime_type"] == "text/plain"
    detail = client.get(f"/documents/{attachment['document']['id']}").json()
    assert detail["markdown_preview"] == "The supplier delivers within ten working days of each order."

    _process(client, attachment["document"]["id"])
    assert _points(client) > 0
    # Re-uploading a changed mail replaces the attachment: its old vectors go with it.
    message.replace_header("Subject", "Contract (signed)")
    again = client.post("/documents", files={"file": ("contract.eml", message.as_bytes())}).json()
    assert again["outcome"] == "replaced"
    assert again["attachments"][0]["replaced_id"] == attachment["document"]["id"]
    assert _points(client) == 0

    new_attachment = again["attachments"][0]["document"]["id"]
    _process(client, new_attachment)
    assert _points(client) > 0
    assert client.delete(f"/documents/{again['document']['id']}").status_code == 204
    assert client.get(f"/documents/{new_attachment}").status_code == 404
    assert _points(client) == 0


def test_msg_ingest_stores_the_attached_mail_and_its_attachment(tmp_path, settings):
    result = _ingest(settings, write_msg(tmp_path / "figures.msg", _outlook_pack()), "mail/figures.msg")
    assert result.document.mime_type == "application/vnd.ms-outlook"
    assert [a.source_key for a in result.attachments] == [
        "mail/figures.msg//note.txt",
        "mail/figures.msg//Earlier thread.eml",
    ]
    (thread,) = [a for a in result.attachments if a.filename.endswith(".eml")]
    assert thread.document.parent_id == result.document.id
    assert [(a.source_key, a.outcome) for a in thread.attachments] == [
        ("mail/figures.msg//Earlier thread.eml//draft.txt", IngestOutcome.CREATED)
    ]
    assert thread.attachments[0].document.parent_id == thread.document.id


@pytest.fixture
def cli_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")  # the table's long source keys unwrapped
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def test_cli_ingest_lists_attachments_under_their_mail(cli_data_dir, tmp_path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    _write(folder / "pack.eml", _pack(tmp_path))
    runner = CliRunner()
    table = runner.invoke(app, ["ingest", str(folder)], catch_exceptions=False)
    assert table.exit_code == 0  # a failed attachment does not fail the mail
    assert "  ↳ pack.eml//note.txt" in table.stdout and "    ↳ pack.eml//thread.eml//draft.txt" in table.stdout
    assert "1 file: 1 ingested, 0 refused" in table.stdout and "attachments: 4 ingested, 1 refused" in table.stdout
    # Again: the mail is unchanged, and so are the attachments it stored.
    (mail,) = json.loads(runner.invoke(app, ["ingest", str(folder), "--json"], catch_exceptions=False).stdout)
    assert mail["outcome"] == "unchanged"
    assert [(a["source_key"], a["outcome"]) for a in mail["attachments"]] == [
        ("pack.eml//note.txt", "unchanged"),
        ("pack.eml//policy.docx", "unchanged"),
        ("pack.eml//thread.eml", "unchanged"),
    ]
    assert mail["attachments"][2]["attachments"][0]["source_key"] == "pack.eml//thread.eml//draft.txt"


def test_mails_nested_hundreds_deep_are_refused(tmp_path, lo_settings):
    inner = "Subject: innermost\n\nbody\n"
    for level in range(500):
        boundary = f"b{level}"
        inner = (
            f'Subject: level {level}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{boundary}"\n\n'
            f"--{boundary}\nContent-Type: text/plain\n\ntext {level}\n--{boundary}\nContent-Type: message/rfc822\n\n"
            f"{inner}\n--{boundary}--\n"
        )
    path = tmp_path / "deep.eml"
    path.write_text(inner)
    with pytest.raises(CorruptDocumentError, match="nests mails inside mails too deeply"):
        parse_document(path, lo_settings)
