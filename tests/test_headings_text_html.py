"""Headings in plain text (keywords, numbering, capitals, markdown marks) and in HTML without h1–h6 (bold or larger
paragraphs), on real files through the parsers and once through the upload API."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chunkbench.chunking.base import ChunkingInput
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.models import DocumentTree, NodeType, ParseResult
from test_parse_html_text import assert_offsets_consistent

BODY = (
    "It was the best of times and the worst of times, and the people of the town went\n"
    "about their business as if nothing at all had changed since the spring before.\n"
)

# A novel as Project Gutenberg prints it: a contents list (no headings), parts, chapters with their title on the
# next line or alone, a chapter line over its first paragraph.
NOVEL = f"""The Project Gutenberg eBook of A Tale

*** START OF THE PROJECT GUTENBERG EBOOK A TALE ***

Contents

 CHAPTER I.     Down the Hole
 CHAPTER II.    The Pool of Tears
 CHAPTER III.   A Caucus-Race

PART ONE: 1805

CHAPTER I.
Down the Hole

{BODY}
CHAPTER II

The Pool of Tears

{BODY}
PART TWO

CHAPTER III
{BODY}
*** END OF THE PROJECT GUTENBERG EBOOK A TALE ***
"""


def _write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def _parse(tmp_path: Path, settings: Settings, name: str, text: str) -> ParseResult:
    return parse_document(_write(tmp_path, name, text), settings)


def _section(result: ParseResult, heading: str):
    return next(node for node in result.tree.root.iter_nodes() if node.heading == heading)


def test_txt_chapters_and_parts_in_order_with_levels(tmp_path: Path, settings: Settings) -> None:
    result = _parse(tmp_path, settings, "tale.txt", NOVEL)
    assert result.heading_source == "text_rules"
    assert result.tree.headings() == [
        (1, "PART ONE: 1805"),
        (2, "CHAPTER I. Down the Hole"),  # the title on the next line belongs to the heading
        (2, "CHAPTER II"),
        (1, "PART TWO"),
        (2, "CHAPTER III"),
    ]
    # The contents list stays a paragraph before the first part, and each chapter holds its own text.
    front = [child.text for child in result.tree.root.children if child.node_type is NodeType.PARAGRAPH]
    assert "CHAPTER I. Down the Hole\nCHAPTER II. The Pool of Tears\nCHAPTER III. A Caucus-Race" in front
    chapter_two = _section(result, "CHAPTER II")
    assert [child.text for child in chapter_two.children] == ["The Pool of Tears", BODY.strip()]
    # "CHAPTER III" stood over its first paragraph, in one block: the heading is cut from it.
    assert _section(result, "CHAPTER III").children[0].text == BODY.strip()
    assert_offsets_consistent(result)


def test_txt_farsi_chapters_with_persian_and_latin_digits(tmp_path: Path, settings: Settings) -> None:
    text = (
        "فصل ۱: مقدمه\n\nاین کتاب دربارهٔ تاریخ شهر است و از آغاز آن می‌گوید.\n\n"
        "ماده ۲\nکارگر حق دارد هر سال یک ماه مرخصی بگیرد.\n\n"
        "فصل 2 - روش‌ها\n\nروش‌های این پژوهش در این فصل آمده‌اند.\n\n"
        "فصل‌های این کتاب را به ترتیب بخوانید.\n"
    )
    result = _parse(tmp_path, settings, "fa.txt", text)
    # Chapters above articles; "فصل‌های ..." (the word "chapters" in a sentence) is no heading.
    assert result.tree.headings() == [(1, "فصل ۱: مقدمه"), (2, "ماده ۲"), (1, "فصل 2 - روش‌ها")]
    assert _section(result, "ماده ۲").node_type is NodeType.ARTICLE
    assert _section(result, "ماده ۲").children[0].text == "کارگر حق دارد هر سال یک ماه مرخصی بگیرد."
    assert "فصل‌های این کتاب را به ترتیب بخوانید." in result.plain_text


def test_txt_capitals_headings_between_blank_lines(tmp_path: Path, settings: Settings) -> None:
    text = (
        "TERMS OF SERVICE\n\nThese terms govern your use of the service.\n\n"
        "PAYMENT\n\nYou pay every month in advance.\n\n"
        "We told NASA about it\n\n"  # not all capitals
        "THE END OF THE WORLD AS WE KNOW IT IS HERE.\n\n"  # a shouted sentence
        "OK\n\n"  # too short to tell
        "PAYMENT TERMS\nNET 30 DAYS\nLATE FEE 2%\nCALL US\n"  # a block of several lines
    )
    result = _parse(tmp_path, settings, "terms.txt", text)
    assert result.tree.headings() == [(1, "TERMS OF SERVICE"), (1, "PAYMENT")]
    assert [child.text for child in _section(result, "PAYMENT").children] == [
        "You pay every month in advance.",
        "We told NASA about it",
        "THE END OF THE WORLD AS WE KNOW IT IS HERE.",
        "OK",
        "PAYMENT TERMS\nNET 30 DAYS\nLATE FEE 2%\nCALL US",
    ]


def test_txt_numbered_headings_but_not_numbered_lists(tmp_path: Path, settings: Settings) -> None:
    text = (
        "1. Introduction\n\nThis report looks at the year.\n\n"
        "1.1 Background\n\nThe company grew.\n\n"
        "1.2 Scope\n\nOnly the main office is covered.\n\n"
        "2. Findings\n\nWhat we found:\n\n"
        "1. Sales rose\n\n2. Costs fell\n\n"  # a list after a colon, items one after another
        "1. This line starts with a number but it is an ordinary sentence of the body text of the report.\n\n"
        "3. buy milk\n\n"  # lower case after the number: a list item
        "1 2 3 4 5\n\n"  # a line of numbers
        "1 | Alice | 30\n2 | Bob | 41\n\n"  # table rows
        "3. Results of the two thousand and twenty three survey of all our offices across the country\n\n"  # long
        "A final note.\n"
    )
    result = _parse(tmp_path, settings, "report.txt", text)
    assert result.tree.headings() == [
        (1, "1. Introduction"),
        (2, "1.1 Background"),
        (2, "1.2 Scope"),
        (1, "2. Findings"),
    ]
    findings = [child.text for child in _section(result, "2. Findings").children]
    assert findings[:3] == ["What we found:", "1. Sales rose", "2. Costs fell"]
    assert "1 | Alice | 30\n2 | Bob | 41" in findings


def test_txt_keyword_line_over_wrapped_prose_is_no_heading(tmp_path: Path, settings: Settings) -> None:
    text = (
        "Section 3 applies to all employees hired\nafter the first of January, as the act says.\n\n"
        "Article 5 - Leave\n1. Every employee gets 25 days.\n2. Unused days expire.\n\n"
        "Part 2\nof the agreement was signed later, by both parties.\n\n"
        "Book a flight\n"
    )
    result = _parse(tmp_path, settings, "act.txt", text)
    assert result.tree.headings() == [(1, "Article 5 - Leave")]
    article = _section(result, "Article 5 - Leave")
    assert article.children[0].text == "1. Every employee gets 25 days.\n2. Unused days expire."
    # The false "Part 2" heading rejoins its paragraph.
    assert "Part 2\nof the agreement was signed later, by both parties." in result.plain_text


def test_txt_markdown_marks(tmp_path: Path, settings: Settings) -> None:
    text = (
        "Install Guide\n=============\n\nRead this first.\n\n"
        "## Requirements ##\nPython 3.11 or newer.\n\n"
        "Usage\n-----\n\nRun the tool.\n\n"
        "### Notes\nSEE THE FAQ\n\n"  # text under a markdown heading, not a capitals heading
        "# set the path\n# then run\nPATH=/opt/bin\n"  # shell comments, not headings
    )
    result = _parse(tmp_path, settings, "guide.txt", text)
    assert result.tree.headings() == [(1, "Install Guide"), (2, "Requirements"), (2, "Usage"), (3, "Notes")]
    assert _section(result, "Notes").children[0].text == "SEE THE FAQ"
    assert _section(result, "Requirements").children[0].text == "Python 3.11 or newer."
    assert "# set the path\n# then run\nPATH=/opt/bin" in result.plain_text
    assert_offsets_consistent(result)


def test_txt_without_headings_is_unchanged(tmp_path: Path, settings: Settings) -> None:
    result = _parse(tmp_path, settings, "plain.txt", f"{BODY}\n{BODY}")
    assert result.heading_source == "none" and result.tree.headings() == []
    assert result.paragraph_count == 2


# An SEC 10-K the way EDGAR filings mark headings: <font size>, inline font-size and font-weight, <b> — no h1–h6.
FILING = """<html><head><title>acme-10k</title></head><body>
<div style="text-align:center"><font size="5"><b>UNITED STATES SECURITIES AND EXCHANGE COMMISSION</b></font></div>
<p align="center"><font size="4"><b>FORM 10-K</b></font></p>
<table><tr><td><b>Item</b></td><td><b>Page</b></td></tr><tr><td>Business</td><td>3</td></tr></table>
<p style="font-size:14pt; font-weight:bold">PART I</p>
<div><span style="font-family:'Times New Roman';font-size:10pt;font-weight:700">Item 1. Business</span></div>
<div><span style="font-size:10pt;font-weight:400">Acme Corporation designs, manufactures and sells anvils, rockets and
other equipment to customers worldwide, through its own stores and online.</span></div>
<div style="font-size:10pt"><span style="font-weight:700">Overview</span> of our strategy: we grow rocket sales
while we keep the margins of anvils, which we expect to remain stable for several years.</div>
<p><font size="2"><b>Item 1A. Risk Factors</b></font></p>
<p><font size="2">Our business depends on a few customers. The loss of any one of them could reduce our
revenue materially and harm the results of our operations.</font></p>
<div style="font: bold 10pt Times New Roman">Item 7. Management's Discussion</div>
<div style="font-size:10pt">Net sales increased 5% compared to the prior year because of higher rocket volumes
and price increases that took effect in the second quarter of the year.</div>
<div style="font-size:1.5em"><span style="font-weight:normal">PART II</span></div>
<p style="font-size:10pt">Other information of the registrant follows in the exhibits filed with this report.</p>
<p style="font-size:10pt;text-align:center">12</p>
</body></html>
"""


def test_html_bold_and_large_paragraphs_become_headings(tmp_path: Path, settings: Settings) -> None:
    result = _parse(tmp_path, settings, "acme-10k.htm", FILING)
    assert result.heading_source == "html_style"
    # Levels by size, bold before regular at equal size: 18 pt, 18 pt regular (1.5em), 14 pt, 13.5 pt, 10 pt bold.
    assert result.tree.headings() == [
        (1, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"),
        (4, "FORM 10-K"),
        (3, "PART I"),
        (5, "Item 1. Business"),
        (5, "Item 1A. Risk Factors"),
        (5, "Item 7. Management's Discussion"),
        (2, "PART II"),
    ]
    business = _section(result, "Item 1. Business")
    # Partly bold is no heading; neither is the bold table or the page number.
    assert [child.text.split()[0] for child in business.children] == ["Acme", "Overview"]
    assert "Item | Page" in result.plain_text and "\n\n12" in result.markdown
    assert_offsets_consistent(result)


def test_html_font_sizes_in_every_unit(tmp_path: Path, settings: Settings) -> None:
    body = "<p>Ordinary text of the page, at the size the browser shows by default, long enough to be body.</p>"
    candidates = [
        '<p style="font-size:32px">Pixels</p>',  # 24 pt
        '<div style="font-size:150%"><p>Percent</p></div>',  # 18 pt
        '<p style="font-size:x-large">Keyword</p>',  # 18 pt
        '<p><font size="+1">Relative font</font></p>',  # size 4: 13.5 pt
        "<p><big>Big tag</big></p>",  # 14.4 pt
        '<p style="font-size:1.25rem">Rem</p>',  # 15 pt
        '<p style="font-weight:600">Semibold</p>',  # 12 pt bold
        '<p><b>Bold <span style="font-weight:normal">not all</span></b></p>',  # not wholly bold
        '<p style="font-size:10pt"><b>Small bold</b></p>',  # bold below the body size
    ]
    page = "<html><body>" + "".join(candidate + body for candidate in candidates) + "</body></html>"
    result = _parse(tmp_path, settings, "units.html", page)
    assert result.tree.headings() == [
        (1, "Pixels"),
        (2, "Percent"),
        (2, "Keyword"),
        (5, "Relative font"),
        (4, "Big tag"),
        (3, "Rem"),
        (6, "Semibold"),
    ]


def test_html_with_real_headings_ignores_styles(tmp_path: Path, settings: Settings) -> None:
    page = (
        "<html><body><h1>Policy</h1><p><b>Bold note</b></p><p>Staff get paid leave every year, as agreed.</p>"
        "<h2>Leave</h2><p style='font-size:30px'>Big text</p><p>Twenty five days a year for everyone.</p></body></html>"
    )
    result = _parse(tmp_path, settings, "policy.html", page)
    assert result.heading_source == "html"
    assert result.tree.headings() == [(1, "Policy"), (2, "Leave")]


def test_html_everything_bold_says_nothing(tmp_path: Path, settings: Settings) -> None:
    lines = ["First short line", "Second short line", "Third one", "A fourth"]
    page = "<html><body><b>" + "".join(f"<p>{line}</p>" for line in lines) + "</b></body></html>"
    result = _parse(tmp_path, settings, "bold.html", page)
    assert result.heading_source == "none" and result.tree.headings() == []


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("tale.txt", NOVEL, ("text_rules", 5, "CHAPTER II")),
        ("acme-10k.htm", FILING, ("html_style", 7, "Item 1A. Risk Factors")),
    ],
)
def test_uploaded_documents_keep_their_headings(
    client: TestClient, name: str, content: str, expected: tuple[str, int, str]
) -> None:
    source, count, heading = expected
    response = client.post("/documents", files={"file": (name, content.encode())})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert document["heading_count"] == count
    detail = client.get(f"/documents/{document['id']}", params={"preview_chars": 0}).json()
    assert detail["heading_source"] == source
    assert heading in [entry["heading"] for entry in detail["headings"]]
    # Structure-aware chunking now sees the sections: a chunk under the heading carries it in its path.
    stored = ChunkingInput(document["id"], name, detail["markdown_preview"], DocumentTree.from_dict(detail["tree"]))
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=64)).chunk(stored)
    assert any(heading in chunk.heading_path for chunk in chunks)
