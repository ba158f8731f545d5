"""Parser throughput: our PdfParser vs raw pypdfium2 text extraction, DOCX parser vs raw python-docx."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fixture generators live with the tests

from chunkbench.config import Settings  # noqa: E402
from docgen import pdfs  # noqa: E402

RESULTS = ROOT / "perf" / "results" / "parse.json"
REPEATS = 5
PDF_CHAPTERS = 55  # ≈ 110 pages
DOCX_PARAGRAPHS = 5000


def best_of(func: Callable[[], object], repeats: int = REPEATS) -> float:
    """Fastest wall time of ``repeats`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def raw_pdfium(path: Path) -> int:
    """Raw pypdfium2 text extraction: ``get_text_range()`` on every page."""
    pdf = pdfium.PdfDocument(path)
    try:
        total = 0
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            total += len(textpage.get_text_range())
            textpage.close()
            page.close()
        return total
    finally:
        pdf.close()


def make_docx(out_dir: Path, paragraphs: int) -> Path:
    """A large DOCX: a Heading 1 every 50 paragraphs, a Heading 2 every 10."""
    import docx

    document = docx.Document()
    for index in range(paragraphs):
        if index % 50 == 0:
            document.add_heading(f"Chapter {index // 50 + 1}", 1)
        elif index % 10 == 0:
            document.add_heading(f"Section {index // 10 + 1}", 2)
        document.add_paragraph(f"Paragraph {index}. " + pdfs.LOREM)
    path = out_dir / "large.docx"
    document.save(str(path))
    return path


def raw_docx(path: Path) -> int:
    """Raw python-docx: iterate every paragraph's text."""
    import docx

    return sum(len(p.text) for p in docx.Document(str(path)).paragraphs)


def main() -> None:
    """Generate the inputs, time everything, print a table and write ``perf/results/parse.json``."""
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp:
        work = Path(tmp)
        settings = Settings(_env_file=None, data_dir=work / "data")
        pdf_path = pdfs.make_structured_pdf(work, chapters=PDF_CHAPTERS, name="bench.pdf")
        pdf = pdfium.PdfDocument(pdf_path)
        pages = len(pdf)
        pdf.close()

        from chunkbench.documents.parsers.pdf import PdfParser

        parser = PdfParser()
        parsed = parser.parse(pdf_path, settings)
        raw_s = best_of(lambda: raw_pdfium(pdf_path))
        ours_s = best_of(lambda: parser.parse(pdf_path, settings))
        results["pdf"] = {
            "pages": pages,
            "headings": len(parsed.tree.headings()),
            "heading_source": parsed.heading_source,
            "raw_pypdfium2_pages_per_s": round(pages / raw_s, 1),
            "ours_pages_per_s": round(pages / ours_s, 1),
            "ratio": round(raw_s / ours_s, 3),
        }

        docx_path = make_docx(work, DOCX_PARAGRAPHS)
        try:
            from chunkbench.documents.parsers import parse_document
        except ImportError as exc:
            results["docx"] = {"skipped": f"DOCX parser not available yet ({exc})"}
        else:
            parsed_docx = parse_document(docx_path, settings)
            raw_docx_s = best_of(lambda: raw_docx(docx_path), 3)
            ours_docx_s = best_of(lambda: parse_document(docx_path, settings), 3)
            results["docx"] = {
                "paragraphs": DOCX_PARAGRAPHS,
                "parsed_paragraphs": parsed_docx.paragraph_count,
                "raw_python_docx_paragraphs_per_s": round(DOCX_PARAGRAPHS / raw_docx_s, 1),
                "ours_paragraphs_per_s": round(DOCX_PARAGRAPHS / ours_docx_s, 1),
                "ratio": round(raw_docx_s / ours_docx_s, 3),
            }

    print(f"{'format':<6} {'unit':<11} {'raw':>10} {'ours':>10} {'ratio':>7}")
    pdf_row = results["pdf"]
    print(
        f"{'PDF':<6} {'pages/s':<11} {pdf_row['raw_pypdfium2_pages_per_s']:>10} "
        f"{pdf_row['ours_pages_per_s']:>10} {pdf_row['ratio']:>7}  "
        f"({pdf_row['pages']} pages, {pdf_row['headings']} headings via {pdf_row['heading_source']})"
    )
    docx_row = results["docx"]
    if "skipped" in docx_row:
        print(f"DOCX   {docx_row['skipped']}")
    else:
        print(
            f"{'DOCX':<6} {'paras/s':<11} {docx_row['raw_python_docx_paragraphs_per_s']:>10} "
            f"{docx_row['ours_paragraphs_per_s']:>10} {docx_row['ratio']:>7}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"written {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
