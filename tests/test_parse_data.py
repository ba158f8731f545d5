"""CSV, TSV, JSON, JSON Lines and XML on real files written with the stdlib's csv and json and with lxml: sections,
tables with their header row, records, element structure, exact offsets, and hostile inputs (XXE, billion laughs,
invalid JSON) refused with typed errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import py3langid
import pytest
from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.library import detect_language
from chunkbench.documents.parsers import parse_document
from chunkbench.embedding.languages import UNDETERMINED
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError, UnsupportedFileTypeError
from chunkbench.models import ParseResult
from test_parse_office import assert_exact_offsets, paragraphs, sections

# ---------------------------------------------------------------------------------------------- CSV / TSV


def write_csv(path: Path, rows: list[list[str]], encoding: str = "utf-8", **dialect: str) -> Path:
    with path.open("w", newline="", encoding=encoding) as handle:
        csv.writer(handle, **dialect).writerows(rows)  # type: ignore[arg-type]
    return path


PEOPLE = [
    ["name", "team", "note"],
    ["Ada", "Compilers", "likes; semicolons, and commas"],
    ["", "", ""],
    ["Alan", "Crypto", 'said "hello"\nthen left'],
]


def test_csv_is_one_section_with_a_header_kept_table(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(write_csv(tmp_path / "people.csv", PEOPLE), settings)
    assert result.tree.headings() == [(1, "people")]
    assert result.tree.root.heading == "people"
    assert paragraphs(sections(result)[0]) == [
        "| name | team | note |\n"
        "| --- | --- | --- |\n"
        "| Ada | Compilers | likes; semicolons, and commas |\n"
        '| Alan | Crypto | said "hello" then left |'
    ]
    assert_exact_offsets(result)


def test_csv_dialect_is_sniffed(tmp_path: Path, settings: Settings) -> None:
    # Excel in a comma-decimal locale: semicolons between fields, commas inside numbers, quotes where needed.
    rows = [["Produkt", "Preis", "Menge"], ["Äpfel", "1,99", "3"], ["Birnen; grün", "2,49", "5"]]
    path = write_csv(tmp_path / "preise.csv", rows, encoding="cp1252", delimiter=";")
    result = parse_document(path, settings)
    assert paragraphs(sections(result)[0]) == [
        "| Produkt | Preis | Menge |\n| --- | --- | --- |\n| Äpfel | 1,99 | 3 |\n| Birnen; grün | 2,49 | 5 |"
    ]
    assert result.warnings and result.warnings[0].startswith("Decoded as windows-1252")


def test_long_csv_blocks_repeat_the_header(tmp_path: Path, settings: Settings) -> None:
    rows = [["id", "city"], *([str(n), f"city {n}"] for n in range(1, 76))]
    result = parse_document(write_csv(tmp_path / "cities.csv", rows), settings)
    blocks = paragraphs(sections(result)[0])
    assert len(blocks) == 2 and all(block.startswith("| id | city |\n| --- | --- |\n") for block in blocks)
    assert blocks[1].split("\n")[2] == "| 51 | city 51 |"
    assert_exact_offsets(result)


def test_tsv_reads_tabs(tmp_path: Path, settings: Settings) -> None:
    path = write_csv(tmp_path / "scores.tsv", [["team", "score"], ["red, blue", "3"]], delimiter="\t")
    result = parse_document(path, settings)
    assert result.markdown == "# scores\n\n| team | score |\n| --- | --- |\n| red, blue | 3 |"


def test_csv_hostile_inputs(tmp_path: Path, settings: Settings) -> None:
    (tmp_path / "blank.csv").write_text(",,\n , ,\n")
    with pytest.raises(EmptyDocumentError, match="no cells with values"):
        parse_document(tmp_path / "blank.csv", settings)
    (tmp_path / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    with pytest.raises(UnsupportedFileTypeError, match="named like a CSV file"):
        parse_document(tmp_path / "image.csv", settings)
    (tmp_path / "huge-field.csv").write_text('a\n"' + "x" * 200_000 + '"\n')
    with pytest.raises(CorruptDocumentError, match="not valid delimited text"):
        parse_document(tmp_path / "huge-field.csv", settings)


# ---------------------------------------------------------------------------------------------- JSON / JSONL

ARTICLES = [
    {"id": "kb-1", "title": "Reset a password", "body": "Open Settings.\nChoose Security.", "tags": ["account"]},
    {"id": "kb-2", "author": {"name": "Ada", "team": "Support"}, "steps": [{"do": "Sign in"}, {"do": "Click Help"}]},
    {"views": 12, "public": True, "archived": None},
]


def test_json_records_are_sections_with_field_lines(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "kb.json"
    path.write_text(json.dumps(ARTICLES, indent=2))
    result = parse_document(path, settings)
    assert result.tree.headings() == [(1, "Reset a password"), (1, "kb-2"), (1, "Record 3")]
    first, second, third = (paragraphs(section) for section in sections(result))
    assert first == ["id: kb-1\ntitle: Reset a password\nbody: Open Settings. Choose Security.\ntags: account"]
    assert second == ["id: kb-2\nauthor.name: Ada\nauthor.team: Support\nsteps[0].do: Sign in\nsteps[1].do: Click Help"]
    assert third == ["views: 12\npublic: true\narchived: null"]
    assert result.heading_source == "records"
    assert_exact_offsets(result)


def test_a_json_object_has_a_section_per_key_and_its_records_below(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"space": {"name": "Help centre", "lang": "fa"}, "articles": ARTICLES[:2]}))
    result = parse_document(path, settings)
    assert result.tree.headings() == [(1, "space"), (1, "articles"), (2, "Reset a password"), (2, "kb-2")]
    assert paragraphs(sections(result)[0]) == ["name: Help centre\nlang: fa"]
    assert_exact_offsets(result)


def test_jsonl_lines_are_records(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "tickets.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in ARTICLES[:2]) + "\n")
    result = parse_document(path, settings)
    assert result.tree.headings() == [(1, "Reset a password"), (1, "kb-2")]
    assert_exact_offsets(result)


def test_invalid_json_is_a_400_naming_line_and_column(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"title": "ok"},\n  {"title": "missing comma" "body": 1}\n]')
    with pytest.raises(CorruptDocumentError) as caught:
        parse_document(path, settings)
    assert caught.value.status_code == 400
    assert caught.value.message == (
        "'broken.json' is not valid JSON: Expecting ',' delimiter at line 3, column 29. "
        "Fix the file there (or export it again)."
    )
    assert caught.value.details == {"line": 3, "column": 29}
    lines = tmp_path / "broken.jsonl"
    lines.write_text('{"title": "one"}\n\n{"title": "two",}\n')
    with pytest.raises(CorruptDocumentError, match=r"at line 3, column 17") as caught:
        parse_document(lines, settings)
    assert caught.value.details["line"] == 3


def test_json_empty_and_not_json(tmp_path: Path, settings: Settings) -> None:
    (tmp_path / "empty.json").write_text("[]")
    with pytest.raises(EmptyDocumentError, match="holds no values"):
        parse_document(tmp_path / "empty.json", settings)
    (tmp_path / "prose.json").write_text("This is not JSON at all.")
    with pytest.raises(UnsupportedFileTypeError, match="named like a JSON file"):
        parse_document(tmp_path / "prose.json", settings)
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CorruptDocumentError, match="too deeply"):
        parse_document(tmp_path / "deep.json", settings)


# ---------------------------------------------------------------------------------------------- XML


def make_catalogue(path: Path) -> Path:
    root = etree.Element("catalogue", nsmap={None: "urn:example:shop"})
    etree.SubElement(root, "title").text = "Spring catalogue"
    section = etree.SubElement(root, "section", name="Teas")
    for sku, (label, price) in enumerate([("Green tea", "4.50"), ("Black tea", "3.90")], start=1):
        product = etree.SubElement(section, "product", sku=f"T{sku}")
        etree.SubElement(product, "title").text = label
        etree.SubElement(product, "price", currency="EUR").text = price
        etree.SubElement(product, "organic")
    note = etree.SubElement(root, "note")
    note.text = "Prices include "
    etree.SubElement(note, "b").text = "VAT"
    etree.SubElement(note, "b").tail = " and shipping."
    path.write_bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))
    return path


def test_xml_elements_become_sections_and_leaf_lines(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(make_catalogue(tmp_path / "catalogue.xml"), settings)
    assert result.tree.headings() == [
        (1, "catalogue: Spring catalogue"),
        (2, "section: Teas"),
        (3, "product: Green tea"),
        (3, "product: Black tea"),
    ]
    assert result.tree.root.heading == "Spring catalogue"
    catalogue = sections(result)[0]
    assert paragraphs(catalogue) == ["title: Spring catalogue"]
    green, black = catalogue.children[1].children
    assert paragraphs(green) == ["title: Green tea\nprice (currency=EUR): 4.50"]
    # Document order is kept: text after a nested element's section falls under the last heading before it, as
    # it reads in the markdown. Mixed content (text with inline markup) is a paragraph of its own.
    assert paragraphs(black) == ["title: Black tea\nprice (currency=EUR): 3.90", "Prices include VAT and shipping."]
    assert result.heading_source == "elements"
    assert_exact_offsets(result)


def test_xhtml_goes_to_the_html_parser(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "page.xml"
    path.write_text(
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Guide</title></head>'
        "<body><h1>Install</h1><p>Run make.</p><h2>Usage</h2><p>Ask.</p></body></html>"
    )
    result = parse_document(path, settings)
    assert result.tree.headings() == [(1, "Install"), (2, "Usage")]
    assert result.heading_source == "html"


XXE = b"""<?xml version="1.0"?>
<!DOCTYPE note [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<note><body>&secret;</body></note>"""
BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<lolz><lol>&lol4;</lol></lolz>"""


@pytest.mark.parametrize("data", [XXE, BILLION_LAUGHS, XXE.decode().encode("utf-16")], ids=["xxe", "laughs", "utf16"])
def test_xml_entities_are_refused(tmp_path: Path, settings: Settings, data: bytes) -> None:
    path = tmp_path / "hostile.xml"
    path.write_bytes(data)
    with pytest.raises(CorruptDocumentError, match="declares XML entities") as caught:
        parse_document(path, settings)
    assert caught.value.status_code == 400


def test_malformed_xml_names_its_line(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "broken.xml"
    path.write_text("<root>\n  <item>one</item>\n  <item>two</itm>\n</root>")
    with pytest.raises(CorruptDocumentError, match=r"not well-formed XML: .*\(line 3, column \d+\)") as caught:
        parse_document(path, settings)
    assert caught.value.details["line"] == 3
    (tmp_path / "deep.xml").write_text("<a>" * 300 + "x" + "</a>" * 300)  # libxml2 stops at 256 levels
    with pytest.raises(
        CorruptDocumentError, match=r"Excessive depth in document: 256, .* \(line 1, column 771\)\. Fix"
    ):
        parse_document(tmp_path / "deep.xml", settings)
    (tmp_path / "empty.xml").write_text("<root><a/><b></b></root>")
    with pytest.raises(EmptyDocumentError, match="holds no text"):
        parse_document(tmp_path / "empty.xml", settings)
    (tmp_path / "prose.xml").write_text("Dear reader, this is no markup.")
    with pytest.raises(UnsupportedFileTypeError, match="named like an XML file"):
        parse_document(tmp_path / "prose.xml", settings)


# ---------------------------------------------------------------------------------------------- through the API


def _kb(path: Path) -> Path:
    path.write_text(json.dumps(ARTICLES))
    return path


def _kb_lines(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(record) for record in ARTICLES))
    return path


@pytest.mark.parametrize(
    ("name", "make", "mime_type", "first_heading"),
    [
        ("people.csv", lambda path: write_csv(path, PEOPLE), "text/csv", "people"),
        ("scores.tsv", lambda path: write_csv(path, PEOPLE, delimiter="\t"), "text/tab-separated-values", "scores"),
        ("kb.json", _kb, "application/json", "Reset a password"),
        ("kb.jsonl", _kb_lines, "application/x-ndjson", "Reset a password"),
        ("catalogue.xml", make_catalogue, "application/xml", "catalogue: Spring catalogue"),
    ],
)
def test_data_files_upload_through_the_documents_api(client, tmp_path, settings, name, make, mime_type, first_heading):
    path = make(tmp_path / name)
    response = client.post("/documents", files={"file": (name, path.read_bytes())})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert document["mime_type"] == mime_type
    detail = client.get(f"/documents/{document['id']}").json()
    assert detail["headings"][0]["heading"] == first_heading
    expected: ParseResult = parse_document(path, settings)
    assert client.get(f"/documents/{document['id']}/markdown").text == expected.markdown


@pytest.mark.parametrize(
    ("name", "data", "code", "says"),
    [
        ("hostile.xml", XXE, "corrupt_document", "declares XML entities"),
        ("broken.json", b'{"a": 1,}', "corrupt_document", "line 1, column 9"),
        ("empty.csv", b",\n,\n", "empty_document", "no cells with values"),
    ],
)
def test_hostile_data_uploads_are_4xx_and_leave_nothing(client, name, data, code, says):
    response = client.post("/documents", files={"file": (name, data)})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == code and says in response.json()["message"]
    assert client.get("/documents").json()["total"] == 0


def test_a_sheets_language_is_read_from_its_words_not_its_numbers() -> None:
    rows = "".join(f"| {n} | {n * 1.5:,.2f} | {n % 7}% | 2026-03-{n % 28 + 1:02d} |\n" for n in range(200))
    sheet = "# Sales by region\n\n| Region | Revenue | Growth | Reported on |\n| --- | --- | --- | --- |\n" + rows
    assert py3langid.classify(sheet[:4000])[0] != "en"  # what the whole text reads as: numbers, rules, pipes
    assert detect_language(sheet) == "en"
    assert detect_language(rows) == UNDETERMINED  # no words at all: no language to check a model against
    assert detect_language("  \n ") == UNDETERMINED  # documents.language_detection: no text is undetermined too
