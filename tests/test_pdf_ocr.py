"""OCR of scanned PDF pages with the real Tesseract (CHUNKBENCH_OCR=on), on image-only PDFs made with Pillow:
the words come back, the document records ``ocr`` and its pages, missing language packs are typed errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.documents.parsers import parse_document
from chunkbench.errors import OcrUnavailableError, TooLittleTextError
from chunkbench.text.normalize import normalize_text
from docgen import pdfs

TESSERACT = shutil.which("tesseract")
pytestmark = pytest.mark.skipif(TESSERACT is None, reason="needs Tesseract (make test installs tesseract-ocr)")


def _languages() -> set[str]:
    if TESSERACT is None:
        return set()
    listed = subprocess.run([TESSERACT, "--list-langs"], capture_output=True, text=True, check=False)
    return set((listed.stdout + listed.stderr).split())


@pytest.fixture
def ocr(settings: Settings) -> Settings:
    return settings.model_copy(update={"ocr": True, "ocr_languages": "eng"})


@pytest.fixture
def scan(tmp_path: Path) -> Path:
    return pdfs.make_scan_pdf(tmp_path, [pdfs.render_scan(pdfs.SCAN_TITLE, pdfs.SCAN_LINES)])


def test_a_scanned_page_comes_back_with_its_words_and_its_title_as_a_heading(scan: Path, ocr: Settings) -> None:
    result = parse_document(scan, ocr)
    assert result.plain_text == f"{pdfs.SCAN_TITLE}\n\n{' '.join(pdfs.SCAN_LINES)}"
    assert result.tree.headings() == [(1, pdfs.SCAN_TITLE)]  # the larger line, by the font rule
    assert result.ocr_pages == [1]
    assert result.warnings == ["'scan.pdf': page 1 read by OCR (Tesseract, eng); OCR text can hold recognition errors."]


def test_only_the_scanned_page_of_a_mixed_pdf_is_read_and_it_stays_in_its_place(tmp_path: Path, ocr: Settings) -> None:
    result = parse_document(pdfs.make_mixed_pdf(tmp_path, "ttst"), ocr)
    assert result.ocr_pages == [3]
    text = result.plain_text
    assert text.index("Text page 2.") < text.index("nine hundred crates") < text.index("Text page 4.")


def test_a_blank_scan_read_by_ocr_is_too_little_text(tmp_path: Path, ocr: Settings) -> None:
    with pytest.raises(TooLittleTextError) as caught:
        parse_document(pdfs.make_image_pdf(tmp_path, pages=3), ocr)
    assert "0 characters (letters and digits) on 3 pages, OCR of pages 1–3 included" in caught.value.message
    assert caught.value.details["ocr_pages"] == [1, 2, 3]


def test_a_missing_language_pack_is_a_typed_error_naming_the_package(scan: Path, ocr: Settings) -> None:
    with pytest.raises(OcrUnavailableError) as caught:
        parse_document(scan, ocr.model_copy(update={"ocr_languages": "eng+chi_tra_vert"}))
    error = caught.value
    assert error.status_code == 503 and error.details["missing_languages"] == ["chi_tra_vert"]
    assert "sudo apt-get install tesseract-ocr-chi-tra-vert" in error.message
    assert "CHUNKBENCH_OCR_LANGUAGES=eng+chi_tra_vert" in error.message


@pytest.mark.skipif("fas" not in _languages(), reason="needs tesseract-ocr-fas")
def test_a_farsi_scan_is_read_right_to_left_with_its_zwnj(tmp_path: Path, ocr: Settings) -> None:
    farsi = pdfs.make_scan_pdf(tmp_path, [pdfs.render_scan(None, pdfs.FA_SCAN_LINES, rtl=True)], name="fa.pdf")
    result = parse_document(farsi, ocr.model_copy(update={"ocr_languages": "fas"}))
    assert result.plain_text == normalize_text(" ".join(pdfs.FA_SCAN_LINES))
    assert "\u200c" in result.plain_text


def test_the_api_refuses_a_scan_with_ocr_off_and_reads_it_with_ocr_on(
    client: TestClient, settings: Settings, scan: Path
) -> None:
    def upload():
        return client.post("/documents", files={"file": (scan.name, scan.read_bytes())})

    settings.ocr = False
    refused = upload()
    assert (refused.status_code, refused.json()["error"]) == (422, "scanned_pdf")
    assert "CHUNKBENCH_OCR=on" in refused.json()["message"]

    settings.ocr, settings.ocr_languages = True, "eng"
    created = upload()
    assert created.status_code == 201
    document = created.json()["document"]
    assert (document["ocr"], document["ocr_pages"]) == (True, [1])
    detail = client.get(f"/documents/{document['id']}").json()
    assert (detail["ocr"], detail["ocr_pages"]) == (True, [1])
    assert "nine hundred crates of apples" in detail["markdown_preview"]
    listed = client.get("/documents").json()["items"]
    assert [(item["ocr"], item["ocr_pages"]) for item in listed] == [(True, [1])]


def test_the_cli_reads_a_scan_with_ocr_on_from_the_environment_and_shows_its_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan: Path
) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CHUNKBENCH_OCR", "on")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        ingested = runner.invoke(app, ["ingest", str(scan), "--json"], catch_exceptions=False)
        assert ingested.exit_code == 0, ingested.stdout
        shown = runner.invoke(app, ["documents", "show", "scan.pdf"], catch_exceptions=False)
        assert "OCR on pages 1" in shown.stdout and "nine hundred crates" in shown.stdout
    finally:
        get_settings.cache_clear()
