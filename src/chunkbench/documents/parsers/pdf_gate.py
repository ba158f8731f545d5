"""Text-layer Gate (docs/ingestion.md): which pages of a PDF are scans; whether the PDF is scanned, too short or kept.

The gate tells two things apart that both have little text: a scan (pages that are images, with no text layer, so
OCR would help) and a short document (a memo header, a small table: its text is what it is). Every outcome names
what was found: pages, characters (letters and digits) and images.

* Scanned pages: images cover at least ``pdf_scan_min_image_coverage`` of the page and it has fewer than
  ``pdf_min_median_chars_per_page`` characters.
* Scanned PDF (``scanned_pdf``, 422, unless OCR is on): more than half of its pages are scanned (the median
  rule), or its other pages hold fewer than ``pdf_min_total_chars`` characters in all.
* Mixed PDF (a few scanned pages among text pages): kept, with a warning naming the scanned pages whose content is
  missing; with OCR on they are read instead.
* Too little text (``too_little_text``, 422): fewer than ``pdf_min_real_chars`` characters in the whole text kept.
  A short PDF above that floor is kept, with a warning when it is under ``pdf_min_total_chars``.
"""

from __future__ import annotations

from chunkbench.config import Settings
from chunkbench.documents.parsers.pdf_reader import PageFacts
from chunkbench.errors import ScannedPdfError, TooLittleTextError

_OCR_ADVICE = (
    "Run OCR on it first (for example `ocrmypdf {name} {stem}-ocr.pdf`) and upload the result, or turn on "
    "chunkbench's own OCR (CHUNKBENCH_OCR=on, with Tesseract installed) to read scanned pages."
)


def scanned_pages(facts: list[PageFacts], settings: Settings) -> list[int]:
    """Indexes of the pages that are scans: mostly image, with (almost) no text layer."""
    return [
        index
        for index, page in enumerate(facts)
        if page.images
        and page.image_coverage >= settings.pdf_scan_min_image_coverage
        and page.chars < settings.pdf_min_median_chars_per_page
    ]


def _page_list(indexes: list[int]) -> str:
    """Page numbers (1-based) of 0-based indexes, runs joined: ``1–3, 7``."""
    runs: list[list[int]] = []
    for number in sorted(index + 1 for index in indexes):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _pages(indexes: list[int]) -> str:
    return f"page{'' if len(indexes) == 1 else 's'} {_page_list(indexes)}"


def _scans_found(facts: list[PageFacts], scans: list[int]) -> str:
    """``3 of 3 pages are images with no text layer (0 characters)``, the pages named when not all."""
    chars = sum(facts[index].chars for index in scans)
    which = "" if len(scans) == len(facts) else f" ({_pages(scans)})"
    verb = "is an image" if len(scans) == 1 else "are images"
    layer = "no text layer" if chars == 0 else "almost no text layer"
    return f"{len(scans)} of {_count(len(facts), 'page')}{which} {verb} with {layer} ({_count(chars, 'character')})"


def refuse_scanned(name: str, facts: list[PageFacts], scans: list[int], settings: Settings) -> str:
    """Without OCR: a scanned PDF raises :class:`ScannedPdfError`; a mixed one gives the warning that names the
    scanned pages whose content is left out."""
    found = _scans_found(facts, scans)
    scanned = set(scans)
    others = [page for index, page in enumerate(facts) if index not in scanned]
    text_chars = sum(page.chars for page in others)
    majority = 2 * len(scans) > len(facts)
    if majority or text_chars < settings.pdf_min_total_chars:
        if not others:
            reason = ""
        elif majority:
            reason = ": more than half of its pages"
        else:
            reason = (
                f", and its other {_count(len(others), 'page')} {'holds' if len(others) == 1 else 'hold'} "
                f"{_count(text_chars, 'character')}, fewer than CHUNKBENCH_PDF_MIN_TOTAL_CHARS="
                f"{settings.pdf_min_total_chars}"
            )
        stem = name[:-4] if name.lower().endswith(".pdf") else name
        raise ScannedPdfError(
            f"'{name}' looks scanned: {found}{reason}. " + _OCR_ADVICE.format(name=name, stem=stem),
            pages=len(facts),
            scanned_pages=[index + 1 for index in scans],
            chars_found=sum(page.chars for page in facts),
            images=sum(page.images for page in facts),
            min_total_chars=settings.pdf_min_total_chars,
            min_median_chars_per_page=settings.pdf_min_median_chars_per_page,
            min_image_coverage=settings.pdf_scan_min_image_coverage,
        )
    its, them = ("its", "it") if len(scans) == 1 else ("their", "them")
    return f"'{name}': {found}; {its} content is left out. Turn on OCR (CHUNKBENCH_OCR=on) to read {them}."


def ocr_note(name: str, scans: list[int], settings: Settings) -> str:
    """The warning that says which pages' text came from OCR."""
    return (
        f"'{name}': {_pages(scans)} read by OCR (Tesseract, {settings.ocr_languages}); "
        "OCR text can hold recognition errors."
    )


def check_text(name: str, facts: list[PageFacts], settings: Settings, *, ocr_indexes: list[int]) -> list[str]:
    """The floor: fewer real characters than ``pdf_min_real_chars`` raise :class:`TooLittleTextError`; a text
    under ``pdf_min_total_chars`` is kept with a warning saying so."""
    chars = sum(page.chars for page in facts)
    found = f"{_count(chars, 'character')} (letters and digits) on {_count(len(facts), 'page')}"
    if chars >= settings.pdf_min_real_chars:
        if chars < settings.pdf_min_total_chars:
            return [f"'{name}' is short: {found}; it is kept as it is."]
        return []
    if ocr_indexes:
        found += f", OCR of {_pages(ocr_indexes)} included"
    # Images below the scan coverage: the reason a page without text was not taken for a scan.
    small = sum(page.images for page in facts if page.image_coverage < settings.pdf_scan_min_image_coverage)
    if small:
        found += (
            f"; {'its image covers' if small == 1 else f'its {small} images cover'} too little of a page to be a "
            f"scan (under CHUNKBENCH_PDF_SCAN_MIN_IMAGE_COVERAGE={settings.pdf_scan_min_image_coverage:g})"
        )
    raise TooLittleTextError(
        f"'{name}' has too little text to index: {found}, fewer than CHUNKBENCH_PDF_MIN_REAL_CHARS="
        f"{settings.pdf_min_real_chars}. Upload a version with more text, or lower CHUNKBENCH_PDF_MIN_REAL_CHARS "
        "to keep files this short.",
        pages=len(facts),
        chars_found=chars,
        images=sum(page.images for page in facts),
        min_real_chars=settings.pdf_min_real_chars,
        ocr_pages=[index + 1 for index in ocr_indexes],
    )
