"""Generators of test PDFs (fpdf2, Pillow, pypdf) and of the DOCX sources LibreOffice turns into PDFs."""

from __future__ import annotations

import random
from pathlib import Path

import docx
from docx.oxml import OxmlElement
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfReader, PdfWriter

FARSI_FONT = Path("/usr/share/fonts/truetype/noto/NotoNaskhArabic-Regular.ttf")
LATIN_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

# Farsi sample: ZWNJ (U+200C) inside می‌خواهم, کتاب‌ها, آن‌ها, نرم‌افزار; digits and a Latin run.
FA_HEADING_1 = "فصل ۱: مقدمه"
FA_HEADING_2 = "فصل ۲: روش‌ها"
FA_PARAGRAPH_1 = "من می‌خواهم این کتاب‌ها را بخوانم و آن‌ها را به دوستانم بدهم."
FA_PARAGRAPH_2 = "در سال ۱۴۰۲ نسخه 3.5 از نرم‌افزار PDF Reader منتشر شد."
FA_PARAGRAPH_3 = "ماده‌های این قانون برای همه‌ی کارمندان اجرا می‌شود و هیچ استثنایی ندارد."

LOREM = (
    "The committee reviewed the proposal in detail and agreed that the measurements should be "
    "repeated under controlled conditions before any conclusion is drawn about the results. "
)

TABLE_ROWS = [
    ["Name", "Quantity", "Unit price"],
    ["Apples", "12", "0.50"],
    ["Pears", "7", "0.80"],
    ["Plums", "30", "0.15"],
]


def structured_headings(chapters: int) -> list[tuple[int, str]]:
    """The ``(level, text)`` headings :func:`make_structured_pdf` writes, in order."""
    headings: list[tuple[int, str]] = []
    for c in range(1, chapters + 1):
        headings.append((1, f"Chapter {c} Overview of topic {c}"))
        for s in range(1, 3):
            headings.append((2, f"{c}.{s} Method part {s}"))
            headings.append((3, f"{c}.{s}.1 Details of step {s}"))
    return headings


def make_structured_pdf(
    out_dir: Path,
    *,
    chapters: int = 3,
    paragraphs_per_section: int = 2,
    outline: bool = False,
    running_header: bool = True,
    name: str | None = None,
) -> Path:
    """fpdf2 PDF: H1 18 pt bold, H2 14 pt bold, H3 11 pt bold, body 11 pt; header/footer with page numbers.

    Each chapter starts a page. ``outline=True`` also writes bookmarks for every heading.
    """
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_title("Structured test document")

    def header() -> None:
        if running_header:
            pdf.set_font("Helvetica", size=8)
            pdf.cell(0, 6, "ACME Corp - Internal report", align="C", new_x="LMARGIN", new_y="NEXT")

    def footer() -> None:
        if running_header:
            pdf.set_y(-15)
            pdf.set_font("Helvetica", size=8)
            pdf.cell(0, 6, f"Page {pdf.page_no()}", align="C")

    pdf.header = header  # type: ignore[method-assign]
    pdf.footer = footer  # type: ignore[method-assign]
    styles = {1: 18, 2: 14, 3: 11}
    for level, text in structured_headings(chapters):
        if level == 1:
            pdf.add_page()
        if outline:
            pdf.start_section(text, level=level - 1)
        pdf.set_font("Helvetica", "B", styles[level])
        pdf.ln(3)
        pdf.multi_cell(0, styles[level] * 0.6, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        pdf.set_font("Helvetica", size=11)
        for p in range(paragraphs_per_section):
            pdf.multi_cell(0, 5.5, f"Paragraph {p + 1} of {text}. " + LOREM * 3, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
    path = out_dir / (name or f"structured-{chapters}{'-outline' if outline else ''}.pdf")
    pdf.output(str(path))
    return path


def make_numbered_plain_pdf(out_dir: Path) -> Path:
    """fpdf2 PDF where every line has the same size and weight: only numbering can reveal headings."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    lines = [
        "Chapter 1 General provisions",
        LOREM * 2,
        "1.1 Scope",
        LOREM * 2,
        "1.2 Definitions",
        "1. This sentence starts with a number but it is an ordinary sentence of the body text.",
        LOREM * 2,
        "Chapter 2 Obligations",
        LOREM * 2,
        "2.1 Duties of the parties",
        LOREM * 2,
    ]
    for text in lines:
        pdf.multi_cell(0, 5.5, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    path = out_dir / "numbered-plain.pdf"
    pdf.output(str(path))
    return path


def make_hyphenated_pdf(out_dir: Path) -> Path:
    """fpdf2 PDF with words broken across lines by a hyphen, and a multi-line paragraph."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for line in [
        "This paragraph contains an exam-",
        "ple of a hyphenated word and a well-",
        "known compound that stays hyphen-",
        "ated only when it has to.",
    ]:
        pdf.cell(0, 5.5, line, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(8)
    pdf.multi_cell(0, 5.5, "A second paragraph follows after a gap. " + LOREM, new_x="LMARGIN", new_y="NEXT")
    path = out_dir / "hyphenated.pdf"
    pdf.output(str(path))
    return path


def make_farsi_fpdf(out_dir: Path) -> Path:
    """fpdf2 PDF of Farsi text shaped with HarfBuzz (right-aligned), heading in a bigger size."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.add_font("naskh", "", str(FARSI_FONT))
    # Noto Naskh Arabic has no Latin letters: DejaVu Sans draws the Latin run.
    pdf.add_font("dejavu", "", str(LATIN_FONT))
    pdf.set_fallback_fonts(["dejavu"])
    pdf.set_text_shaping(True)
    for heading, paragraphs in [
        (FA_HEADING_1, [FA_PARAGRAPH_1, FA_PARAGRAPH_2]),
        (FA_HEADING_2, [FA_PARAGRAPH_3]),
    ]:
        pdf.set_font("naskh", size=18)
        pdf.cell(0, 12, heading, align="R", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("naskh", size=12)
        for text in paragraphs:
            pdf.multi_cell(0, 8, text, align="R", new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
    path = out_dir / "farsi-fpdf.pdf"
    pdf.output(str(path))
    return path


def _right_to_left(paragraph) -> None:
    """Mark a python-docx paragraph and its runs as right-to-left, as Word does for Farsi."""
    ppr = paragraph._p.get_or_add_pPr()
    ppr.insert(0, OxmlElement("w:bidi"))
    for run in paragraph.runs:
        run._r.get_or_add_rPr().append(OxmlElement("w:rtl"))


def make_farsi_docx(out_dir: Path) -> Path:
    """DOCX with right-to-left Farsi headings and paragraphs (for a LibreOffice PDF)."""
    document = docx.Document()
    _right_to_left(document.add_heading(FA_HEADING_1, 1))
    _right_to_left(document.add_paragraph(FA_PARAGRAPH_1))
    _right_to_left(document.add_paragraph(FA_PARAGRAPH_2))
    _right_to_left(document.add_heading(FA_HEADING_2, 2))
    _right_to_left(document.add_paragraph(FA_PARAGRAPH_3))
    path = out_dir / "farsi-lo.docx"
    document.save(str(path))
    return path


def make_report_docx(out_dir: Path) -> Path:
    """DOCX with Heading 1/2/3, body paragraphs and a 3-column table (for a LibreOffice PDF)."""
    document = docx.Document()
    document.core_properties.title = "Quarterly Report"
    document.add_heading("Introduction", 1)
    document.add_paragraph(LOREM * 2)
    document.add_heading("Background", 2)
    document.add_paragraph(LOREM)
    document.add_heading("Earlier work", 3)
    document.add_paragraph(LOREM)
    document.add_heading("Results", 1)
    document.add_paragraph("The prices are listed in the table below.")
    table = document.add_table(rows=len(TABLE_ROWS), cols=len(TABLE_ROWS[0]))
    table.style = "Table Grid"
    for r, row in enumerate(TABLE_ROWS):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("The table ends here and the text goes on.")
    document.add_heading("Discussion", 2)
    document.add_paragraph(LOREM * 2)
    path = out_dir / "report.docx"
    document.save(str(path))
    return path


def strip_outline(source: Path, out_dir: Path) -> Path:
    """Copy of a PDF without its outline (bookmarks)."""
    writer = PdfWriter(clone_from=PdfReader(str(source)))
    if "/Outlines" in writer._root_object:
        del writer._root_object["/Outlines"]
    path = out_dir / f"{source.stem}-no-outline.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def make_image_pdf(out_dir: Path, pages: int = 3) -> Path:
    """Image-only PDF (what a scanner produces): no text layer at all."""
    images = [Image.new("RGB", (600, 800), (255, 255, 255 - 20 * i)) for i in range(pages)]
    path = out_dir / "scanned.pdf"
    images[0].save(path, "PDF", save_all=True, append_images=images[1:])
    return path


def make_tiny_text_pdf(out_dir: Path, pages: int = 3) -> Path:
    """A PDF with a page number and nothing else on each page: a real text layer under the floor of real characters."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for i in range(pages):
        pdf.add_page()
        pdf.cell(0, 10, f"Scan {i + 1}")
    path = out_dir / "tiny-text.pdf"
    pdf.output(str(path))
    return path


# What a scanner makes of a page: A4 at 300 dpi, body text of 10 pt (42 px), a larger title.
SCAN_SIZE = (2480, 3508)
SCAN_DPI = 300
SCAN_TITLE = "Quarterly Harvest Report"
SCAN_LINES = [
    "The orchard produced nine hundred crates of apples this",
    "season, more than in any year before. Pears were scarce",
    "because of the late frost in April.",
]
FA_SCAN_LINES = ["کتاب‌خانه مرکزی شهر هزاران کتاب دارد", "و هر روز برای همه باز است"]
# A memo header: a real text layer of 33 letters and digits on one page.
MEMO_LINES = ["MEMO", "To: Board", "From: Finance", "Re: Q3 figures"]


def render_scan(title: str | None, lines: list[str], rtl: bool = False) -> Image.Image:
    """A page of text as a scanner returns it: an image, with no text layer anywhere."""
    page = Image.new("L", SCAN_SIZE, 255)
    draw = ImageDraw.Draw(page)
    font_path = str(FARSI_FONT if rtl else LATIN_FONT)
    body = ImageFont.truetype(font_path, 42)
    entries = ([(title, ImageFont.truetype(font_path, 72))] if title else []) + [(line, body) for line in lines]
    y = 250
    for text, font in entries:
        if rtl:  # right-aligned, shaped right to left (Pillow with libraqm)
            draw.text((SCAN_SIZE[0] - 200, y), text, font=font, fill=0, anchor="ra", direction="rtl", language="fa")
        else:
            draw.text((200, y), text, font=font, fill=0)
        y += round(font.size * 1.6)
    return page


def make_scan_pdf(out_dir: Path, pages: list[Image.Image], name: str = "scan.pdf") -> Path:
    """An image-only PDF made with Pillow, one image per page (what a scanner without OCR writes)."""
    path = out_dir / name
    pages[0].save(path, "PDF", save_all=True, append_images=pages[1:], resolution=SCAN_DPI)
    return path


def make_short_text_pdf(out_dir: Path, lines: list[str], name: str = "memo.pdf", logo: bool = False) -> Path:
    """One page with a short real text layer (a memo header), optionally under a small logo image."""
    pdf = FPDF()
    pdf.add_page()
    if logo:  # 25 × 25 mm: about 1 % of an A4 page
        pdf.image(Image.new("RGB", (200, 200), (30, 80, 160)), x=10, y=10, w=25, h=25)
        pdf.set_y(40)
    pdf.set_font("Helvetica", size=11)
    for line in lines:
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    path = out_dir / name
    pdf.output(str(path))
    return path


def make_mixed_pdf(out_dir: Path, kinds: str, name: str = "mixed.pdf") -> Path:
    """Pages by ``kinds``: ``t`` a page of real text (its number in it), ``s`` a scanned page (a full-page image of
    text); ``"ttst"`` is text, text, scan, text."""
    pdf = FPDF()
    for number, kind in enumerate(kinds, start=1):
        pdf.add_page()
        if kind == "s":
            pdf.image(render_scan(SCAN_TITLE, SCAN_LINES), x=0, y=0, w=pdf.w, h=pdf.h)
        else:  # words shuffled per page, or the pages' lines would be taken for running headers
            words = (LOREM * 2).split()
            random.Random(number).shuffle(words)
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, f"Text page {number}. {' '.join(words)}.")
    path = out_dir / name
    pdf.output(str(path))
    return path


def make_encrypted_pdf(source: Path, out_dir: Path, password: str = "secret") -> Path:
    """Copy of ``source`` that needs a user password to open."""
    writer = PdfWriter(clone_from=PdfReader(str(source)))
    writer.encrypt(password)
    path = out_dir / "encrypted.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def make_truncated_pdf(source: Path, out_dir: Path) -> Path:
    """The first half of the bytes of ``source``: a download cut short."""
    data = source.read_bytes()
    path = out_dir / "truncated.pdf"
    path.write_bytes(data[: len(data) // 2])
    return path


def make_random_pdf(out_dir: Path) -> Path:
    """Random bytes named ``.pdf``."""
    path = out_dir / "random.pdf"
    path.write_bytes(random.Random(7).randbytes(4096))
    return path
