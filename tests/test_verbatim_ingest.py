"""Verbatim ingestion: a text or markdown file stored exactly as it is, so evidence offsets into the raw file stay
valid (what span-annotated datasets and the span evaluations need); the mode is part of "unchanged"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.documents import ingest
from chunkbench.documents.discovery import SourceFile
from chunkbench.documents.ingest_results import IngestOutcome
from chunkbench.errors import UnsupportedFileTypeError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT, DocumentRow

# Trailing spaces, a setext underline, a ligature NFKC would split, CRLF line ends, two blank lines.
RAW = "= Title = \r\nIntro line with trailing space \r\n=====\r\n\r\n\r\nThe ﬁrst *finding*   stays.\r\n"
TEXT = RAW.replace("\r\n", "\n")  # as Python's text mode reads it, which is what datasets' offsets count


def _ingest(database: Database, settings: Settings, path: Path, **options):
    (result,) = ingest.ingest_paths(database, settings, [SourceFile(path, path.name)], tenant_id=DEFAULT_TENANT,
                                     **options)  # fmt: skip
    return result


def test_verbatim_keeps_every_character_and_the_mode_decides_unchanged(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(RAW.encode("utf-8"))
    database = Database.from_settings(settings)
    try:
        parsed = _ingest(database, settings, path)
        verbatim = _ingest(database, settings, path, verbatim=True)
        again = _ingest(database, settings, path, verbatim=True)
        with database.session() as session:
            row = session.get(DocumentRow, verbatim.document.id)
            stored, source, headings = row.parsed_text, row.heading_source, row.heading_count
        assert parsed.outcome is IngestOutcome.CREATED
        # The same bytes in the other mode are parsed again: the stored text changes.
        assert verbatim.outcome is IngestOutcome.REPLACED and again.outcome is IngestOutcome.UNCHANGED
        assert stored == TEXT and (source, headings) == ("verbatim", 0)
        assert _ingest(database, settings, path).outcome is IngestOutcome.REPLACED  # and back
        pdf = tmp_path / "paper.pdf"
        pdf.write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        refused = _ingest(database, settings, pdf, verbatim=True)
        assert isinstance(refused.error, UnsupportedFileTypeError) and "verbatim" in refused.error.message
    finally:
        database.dispose()


def test_cli_ingest_verbatim(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        path = tmp_path / "notes.txt"
        path.write_bytes(RAW.encode("utf-8"))
        result = CliRunner().invoke(app, ["ingest", str(path), "--verbatim", "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        shown = CliRunner().invoke(app, ["documents", "show", "notes.txt", "--json"], catch_exceptions=False)
        document = json.loads(shown.stdout)
        assert document["markdown_preview"] == TEXT[: len(document["markdown_preview"])]
        assert document["heading_source"] == "verbatim"
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize("suffix", [".md", ".txt"])
def test_parse_document_verbatim_is_the_decoded_text(tmp_path: Path, suffix: str) -> None:
    from chunkbench.documents.parsers import parse_document

    path = tmp_path / f"doc{suffix}"
    path.write_bytes(RAW.encode("utf-16"))  # decoded (BOM) before anything else
    result = parse_document(path, Settings(_env_file=None, data_dir=tmp_path), verbatim=True)
    assert result.markdown == result.plain_text == TEXT and result.tree.root.end_index == len(TEXT)
    assert result.paragraph_count == 2
