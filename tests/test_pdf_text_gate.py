"""Text-layer Gate on real generated PDFs: short is not scanned, scans are refused with what was found, mixed PDFs
keep their text pages, the floor of real characters, every threshold from Settings, and the same through the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.errors import OcrUnavailableError, ScannedPdfError, TooLittleTextError
from chunkbench.storage.schema import DocumentRow
from docgen import pdfs

MEMO_WARNING = "'memo.pdf' is short: 33 characters (letters and digits) on 1 page; it is kept as it is."


@pytest.fixture
def off(settings: Settings) -> Settings:
    """Settings with OCR off, whatever the environment says."""
    return settings.model_copy(update={"ocr": False})


def test_a_one_page_short_text_pdf_is_kept_as_it_is(tmp_path: Path, off: Settings) -> None:
    result = parse_document(pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES), off)
    assert result.plain_text == "MEMO To: Board From: Finance Re: Q3 figures"
    assert result.page_count == 1 and result.ocr_pages is None
    assert result.warnings == [MEMO_WARNING]


def test_a_small_logo_does_not_make_a_short_pdf_a_scan(tmp_path: Path, off: Settings) -> None:
    result = parse_document(pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES, logo=True), off)
    assert "From: Finance" in result.plain_text


def test_an_image_only_pdf_is_scanned_and_the_message_names_what_was_found(tmp_path: Path, off: Settings) -> None:
    scan = pdfs.make_scan_pdf(tmp_path, [pdfs.render_scan(pdfs.SCAN_TITLE, pdfs.SCAN_LINES)] * 3)
    with pytest.raises(ScannedPdfError) as caught:
        parse_document(scan, off)
    error = caught.value
    assert error.status_code == 422 and error.code == "scanned_pdf"
    found = "3 of 3 pages are images with no text layer (0 characters)"
    assert error.message.startswith(f"'scan.pdf' looks scanned: {found}.")
    assert "ocrmypdf scan.pdf scan-ocr.pdf" in error.message and "CHUNKBENCH_OCR=on" in error.message
    assert error.details == {
        "pages": 3, "scanned_pages": [1, 2, 3], "chars_found": 0, "images": 3, "min_total_chars": 100,
        "min_median_chars_per_page": 40, "min_image_coverage": 0.5,
    }  # fmt: skip


def test_a_pdf_below_the_floor_is_too_little_text(tmp_path: Path, off: Settings) -> None:
    with pytest.raises(TooLittleTextError) as caught:
        parse_document(pdfs.make_tiny_text_pdf(tmp_path, pages=3), off)  # "Scan 1" … "Scan 3"
    error = caught.value
    assert error.status_code == 422 and error.code == "too_little_text"
    assert error.message == (
        "'tiny-text.pdf' has too little text to index: 15 characters (letters and digits) on 3 pages, fewer than "
        "CHUNKBENCH_PDF_MIN_REAL_CHARS=20. Upload a version with more text, or lower CHUNKBENCH_PDF_MIN_REAL_CHARS "
        "to keep files this short."
    )
    assert error.details["chars_found"] == 15 and error.details["images"] == 0


def test_the_floor_comes_from_settings(tmp_path: Path, off: Settings) -> None:
    lenient = off.model_copy(update={"pdf_min_real_chars": 10})
    # Two pages: too few for "Scan N" to count as a running header.
    result = parse_document(pdfs.make_tiny_text_pdf(tmp_path, pages=2), lenient)
    assert result.plain_text == "Scan 1\n\nScan 2"
    strict = off.model_copy(update={"pdf_min_real_chars": 34})
    with pytest.raises(TooLittleTextError, match="33 characters"):
        parse_document(pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES), strict)


def test_a_page_without_text_but_with_a_small_image_is_too_little_text_naming_the_image(
    tmp_path: Path, off: Settings
) -> None:
    with pytest.raises(TooLittleTextError) as caught:
        parse_document(pdfs.make_short_text_pdf(tmp_path, [], name="logo-only.pdf", logo=True), off)
    assert "0 characters (letters and digits) on 1 page; its image covers too little of a page to be a scan" in (
        caught.value.message
    )
    assert caught.value.details["images"] == 1


def test_a_mixed_pdf_keeps_its_text_pages_and_names_the_scanned_one(tmp_path: Path, off: Settings) -> None:
    result = parse_document(pdfs.make_mixed_pdf(tmp_path, "ttst"), off)
    for number in (1, 2, 4):
        assert f"Text page {number}." in result.plain_text
    assert "orchard" not in result.plain_text and result.ocr_pages is None
    assert result.warnings == [
        "'mixed.pdf': 1 of 4 pages (page 3) is an image with no text layer (0 characters); its content is left "
        "out. Turn on OCR (CHUNKBENCH_OCR=on) to read it."
    ]


def test_a_pdf_that_is_mostly_scanned_is_refused(tmp_path: Path, off: Settings) -> None:
    with pytest.raises(ScannedPdfError) as caught:
        parse_document(pdfs.make_mixed_pdf(tmp_path, "tss"), off)
    assert "2 of 3 pages (pages 2–3) are images with no text layer (0 characters): more than half of its pages" in (
        caught.value.message
    )
    assert caught.value.details["scanned_pages"] == [2, 3] and caught.value.details["chars_found"] > 100


def test_scanned_pages_beside_too_little_text_are_refused(tmp_path: Path, off: Settings) -> None:
    demanding = off.model_copy(update={"pdf_min_total_chars": 2000})
    with pytest.raises(ScannedPdfError) as caught:
        parse_document(pdfs.make_mixed_pdf(tmp_path, "tts"), demanding)
    chars = caught.value.details["chars_found"]
    assert f"and its other 2 pages hold {chars} characters, fewer than CHUNKBENCH_PDF_MIN_TOTAL_CHARS=2000" in (
        caught.value.message
    )


def test_what_makes_a_page_a_scan_comes_from_settings(tmp_path: Path, off: Settings) -> None:
    memo = pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES, logo=True)
    # Any image makes a page with under 40 characters a scan: now the logo does.
    with pytest.raises(ScannedPdfError) as caught:
        parse_document(memo, off.model_copy(update={"pdf_scan_min_image_coverage": 0.0}))
    assert "1 of 1 page is an image with almost no text layer (33 characters)" in caught.value.message
    # Fewer characters needed per page than the memo has: a text page again.
    relaxed = off.model_copy(update={"pdf_scan_min_image_coverage": 0.0, "pdf_min_median_chars_per_page": 30})
    assert "Re: Q3 figures" in parse_document(memo, relaxed).plain_text


def test_ocr_on_without_tesseract_is_a_typed_error_naming_the_packages(tmp_path: Path, settings: Settings) -> None:
    scan = pdfs.make_scan_pdf(tmp_path, [pdfs.render_scan(pdfs.SCAN_TITLE, pdfs.SCAN_LINES)])
    missing = settings.model_copy(update={"ocr": True, "tesseract_binary": "no-such-tesseract"})
    with pytest.raises(OcrUnavailableError) as caught:
        parse_document(scan, missing)
    assert caught.value.status_code == 503 and caught.value.code == "ocr_unavailable"
    assert "sudo apt-get install tesseract-ocr tesseract-ocr-eng" in caught.value.message
    # A text PDF needs no OCR, so it does not need Tesseract either.
    assert parse_document(pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES), missing).page_count == 1


def _upload(client: TestClient, path: Path):
    return client.post("/documents", files={"file": (path.name, path.read_bytes())})


def _row_count(client: TestClient) -> int:
    with client.app.state.database.session() as session:
        return session.scalar(select(func.count()).select_from(DocumentRow))


def test_the_api_accepts_short_and_refuses_scanned_and_too_little(
    client: TestClient, settings: Settings, tmp_path: Path
) -> None:
    settings.ocr = False
    scan = _upload(client, pdfs.make_scan_pdf(tmp_path, [pdfs.render_scan(pdfs.SCAN_TITLE, pdfs.SCAN_LINES)]))
    assert (scan.status_code, scan.json()["error"]) == (422, "scanned_pdf")
    tiny = _upload(client, pdfs.make_tiny_text_pdf(tmp_path))
    assert (tiny.status_code, tiny.json()["error"]) == (422, "too_little_text")
    assert _row_count(client) == 0
    memo = _upload(client, pdfs.make_short_text_pdf(tmp_path, pdfs.MEMO_LINES))
    assert memo.status_code == 201
    document = memo.json()["document"]
    assert (document["ocr"], document["ocr_pages"]) == (False, None)
    assert memo.json()["warnings"] == [MEMO_WARNING]
