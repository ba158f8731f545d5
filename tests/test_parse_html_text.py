"""HTML, Markdown and plain-text parsing on real files: structure, furniture removal, encodings."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.parsers.text import decode_text
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import NodeType, ParseResult

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Policy Page</title>
<style>body { color: red } .STYLE-TEXT {}</style><script>var secret = "SCRIPT-TEXT";</script></head>
<body>
<header><nav><a href="/">NAV-TEXT</a></nav>SITE-HEADER-TEXT</header>
Loose text before the article with <b>bold</b> words.
<main><article>
<header><h1>Leave Policy</h1></header>
<p>Staff get <a href="https://example.org/leave">paid leave</a> and <em>sick</em> days.<br>Second line.</p>
<div>Text in a div <span>with a span</span><div>an inner block</div>tail text of the div</div>
<h2>Entitlements</h2>
<ul><li>Annual leave</li><li>Sick leave<ul><li>With a note</li></ul></li></ul>
<ol start="3"><li>Third step</li><li><p>Fourth step</p></li></ol>
<p>Before the table.</p>
<table><tr><th>Kind</th><th>Days</th></tr><tr><td>Annual</td><td>25</td></tr>
<tr><td colspan="2">Subject to <table><tr><td>approval</td></tr></table></td></tr></table>
<p>After the table.</p>
<h3>Article 5</h3>
<blockquote><p>Quoted rule.</p></blockquote>
<pre><code class="language-python">def days():
    return 25</code></pre>
<dl><dt>Carry-over</dt><dd>Up to five days.</dd></dl>
<p hidden>HIDDEN-TEXT</p><div aria-hidden="true">ARIA-TEXT</div><p style="display: none">NONE-TEXT</p>
<!-- COMMENT-TEXT -->
<form><label>FORM-TEXT</label><input></form>
</article></main>
<aside>ASIDE-TEXT</aside><footer>FOOTER-TEXT</footer>
<noscript>NOSCRIPT-TEXT</noscript><template><p>TEMPLATE-TEXT</p></template>
<iframe src="x">IFRAME-TEXT</iframe><svg><text>SVG-TEXT</text></svg>
</body></html>
"""

MARKDOWN = """---
title: "Handbook: Leave"
tags: [hr]
---
Intro with *emphasis* and a [link](https://example.org).
Second line of the intro.

Setext Top
==========

## Lists

- alpha
- beta
  - beta nested

1. one
2. two

> a quoted line

```python
def days():
    return 25
```

| Kind | Days |
|------|------|
| Annual | 25 |

### ماده ۵

مي‌خواهم كتاب‌ها را بخوانم.

Subsection
----------

Last paragraph.
"""


def assert_offsets_consistent(result: ParseResult) -> None:
    """Sections start at their heading line; paragraphs span non-empty markdown inside the document."""
    for node in result.tree.root.iter_nodes():
        span = result.markdown[node.start_index : node.end_index]
        if node.node_type in (NodeType.SECTION, NodeType.ARTICLE):
            assert span.startswith(f"{'#' * min(node.heading_level or 1, 6)} {node.heading}")
        elif node.node_type is NodeType.PARAGRAPH:
            assert span.strip() and node.text
    assert result.tree.root.end_index == len(result.markdown)


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _paragraph(result: ParseResult, fragment: str) -> str:
    """The markdown of the paragraph node whose text contains ``fragment``."""
    node = next(
        node for node in result.tree.root.iter_nodes() if node.node_type is NodeType.PARAGRAPH and fragment in node.text
    )
    return result.markdown[node.start_index : node.end_index]


@pytest.fixture
def page(tmp_path: Path, settings: Settings) -> ParseResult:
    return parse_document(_write(tmp_path, "page.html", PAGE), settings)


def test_html_drops_page_furniture(page: ParseResult) -> None:
    for hidden in (
        "SCRIPT", "STYLE", "NAV", "SITE-HEADER", "FOOTER", "ASIDE", "HIDDEN", "ARIA", "NONE",
        "COMMENT", "FORM", "NOSCRIPT", "TEMPLATE", "IFRAME", "SVG",
    ):  # fmt: skip
        assert f"{hidden}-TEXT" not in page.markdown
        assert f"{hidden}-TEXT" not in page.plain_text


def test_html_headings_title_and_articles(page: ParseResult) -> None:
    assert page.tree.headings() == [(1, "Leave Policy"), (2, "Entitlements"), (3, "Article 5")]
    assert "# Leave Policy\n" in page.markdown and "\n### Article 5\n" in page.markdown
    assert page.tree.root.heading == "Policy Page"
    kinds = [node.node_type for node in page.tree.root.iter_nodes() if node.heading_level]
    assert kinds == [NodeType.SECTION, NodeType.SECTION, NodeType.ARTICLE]
    assert_offsets_consistent(page)


def test_html_text_outside_block_elements_is_kept(page: ParseResult) -> None:
    assert page.markdown.startswith("Loose text before the article with **bold** words.")
    assert "Text in a div with a span\n\nan inner block\n\ntail text of the div" in page.markdown


def test_html_inline_markup_in_markdown_only(page: ParseResult) -> None:
    assert "Staff get paid leave and sick days.\nSecond line." in page.plain_text
    markdown = _paragraph(page, "Staff get")
    assert "[paid leave](https://example.org/leave)" in markdown and "*sick*" in markdown


def test_html_lists_tables_quotes_code(page: ParseResult) -> None:
    assert "- Annual leave\n- Sick leave\n    - With a note" in page.markdown  # nesting kept
    assert "3. Third step\n4. Fourth step" in page.markdown
    table = "Kind | Days\nAnnual | 25\nSubject to approval"
    assert f"Before the table.\n\n{table}\n\nAfter the table." in page.markdown
    assert "> Quoted rule." in page.markdown
    assert "```python\ndef days():\n    return 25\n```" in page.markdown  # code indentation kept
    assert "Carry-over: Up to five days." in page.plain_text
    assert _paragraph(page, "Annual leave") == "- Annual leave\n- Sick leave\n    - With a note"


def test_html_meta_charset_windows_1256(tmp_path: Path, settings: Settings) -> None:
    body = "<html><head><meta http-equiv='Content-Type' content='text/html; charset=windows-1256'>"
    body += "</head><body><h1>ماده ۱</h1><p>من مي‌خواهم كتاب‌ها را بخوانم.</p></body></html>"
    result = parse_document(_write(tmp_path, "fa.html", body.replace("۱", "1").encode("cp1256")), settings)
    assert result.tree.headings() == [(1, "ماده 1")]
    assert "من می\u200cخواهم کتاب\u200cها را بخوانم." in result.plain_text
    assert result.tree.root.children[0].node_type is NodeType.ARTICLE


def test_html_meta_charset_latin1(tmp_path: Path, settings: Settings) -> None:
    body = '<html><head><meta charset="ISO-8859-1"><title>Caf\xe9</title></head>'
    body += "<body><p>cr\xe8me \x93br\xfbl\xe9e\x94</p>"
    result = parse_document(_write(tmp_path, "fr.html", body.encode("latin-1")), settings)
    assert result.plain_text == "crème “brûlée”"  # 0x93/0x94 are windows-1252 quotes, as browsers read them
    assert result.tree.root.heading == "Café"


def test_html_title_falls_back_to_first_h1(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(_write(tmp_path, "t.html", "<h2>Sub</h2><h1>Main</h1><p>x</p>"), settings)
    assert result.tree.root.heading == "Main"


def test_html_zwnj_entity_kept(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(_write(tmp_path, "z.html", "<p>می&zwnj;خواهم</p>"), settings)
    assert result.plain_text == "می\u200cخواهم"


@pytest.fixture
def handbook(tmp_path: Path, settings: Settings) -> ParseResult:
    return parse_document(_write(tmp_path, "handbook.md", MARKDOWN), settings)


def test_markdown_headings_and_front_matter(handbook: ParseResult) -> None:
    assert handbook.tree.headings() == [(1, "Setext Top"), (2, "Lists"), (3, "ماده ۵"), (2, "Subsection")]
    assert handbook.tree.root.heading == "Handbook: Leave"
    assert "tags:" not in handbook.markdown and not handbook.markdown.startswith("---")
    assert "\n# Setext Top\n" in handbook.markdown and "\n## Subsection\n" in handbook.markdown
    article = next(node for node in handbook.tree.root.iter_nodes() if node.heading == "ماده ۵")
    assert article.node_type is NodeType.ARTICLE
    assert_offsets_consistent(handbook)


def test_markdown_blocks_keep_their_source(handbook: ParseResult) -> None:
    assert _paragraph(handbook, "Intro with") == (
        "Intro with *emphasis* and a [link](https://example.org).\nSecond line of the intro."
    )
    assert "Intro with emphasis and a link. Second line of the intro." in handbook.plain_text
    assert _paragraph(handbook, "alpha").startswith("- alpha\n- beta\n")
    assert _paragraph(handbook, "one") == "1. one\n2. two"
    assert _paragraph(handbook, "quoted") == "> a quoted line"
    assert _paragraph(handbook, "Annual") == "| Kind | Days |\n|------|------|\n| Annual | 25 |"
    assert "Kind | Days\nAnnual | 25" in handbook.plain_text


def test_markdown_code_fence_kept(handbook: ParseResult) -> None:
    fence = _paragraph(handbook, "def days")
    assert fence.startswith("```python\ndef days():") and fence.endswith("```")
    assert "```" not in handbook.plain_text


def test_markdown_farsi_normalised(handbook: ParseResult) -> None:
    assert "می\u200cخواهم کتاب\u200cها را بخوانم." in handbook.markdown
    assert "ي" not in handbook.plain_text and "ك" not in handbook.plain_text


def test_markdown_title_from_first_h1(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(_write(tmp_path, "x.md", "intro\n\n# Real Title\n\n## Part\n\ntext\n"), settings)
    assert result.tree.root.heading == "Real Title"
    assert result.tree.headings() == [(1, "Real Title"), (2, "Part")]


def test_text_paragraphs(tmp_path: Path, settings: Settings) -> None:
    text = "First paragraph\nstill the first.\n\n\n  \nSecond paragraph.\r\n\r\nThird.\n"
    result = parse_document(_write(tmp_path, "notes.txt", text), settings)
    nodes = [node for node in result.tree.root.iter_nodes() if node.node_type is NodeType.PARAGRAPH]
    assert [node.text for node in nodes] == [
        "First paragraph\nstill the first.",
        "Second paragraph.",
        "Third.",
    ]
    assert result.paragraph_count == 3 and result.tree.headings() == []
    assert_offsets_consistent(result)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_text_unicode_encodings_with_bom(tmp_path: Path, settings: Settings, encoding: str) -> None:
    text = "Farsi: می‌خواهم\n\nکتاب‌ها"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    result = parse_document(_write(tmp_path, "u.txt", data), settings)
    assert result.plain_text == "Farsi: می\u200cخواهم\n\nکتاب\u200cها"


def test_text_bad_utf16_is_corrupt(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(CorruptDocumentError, match="UTF-16"):
        parse_document(_write(tmp_path, "bad.txt", b"\xff\xfe" + b"\x00\xd8a\x00"), settings)


def test_decode_text_ignores_a_wrong_declaration() -> None:
    assert decode_text("é".encode(), "no-such-charset") == "é"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("blank.txt", "  \n\n\t \n"),
        ("blank.md", "---\ntitle: x\n---\n\n   \n"),
        ("blank.html", "<html><head><title>T</title><script>x()</script></head><body> </body></html>"),
        ("rule.md", "---\n\n***\n"),
    ],
)
def test_whitespace_only_files_are_empty(tmp_path: Path, settings: Settings, name: str, content: str) -> None:
    with pytest.raises(EmptyDocumentError):
        parse_document(_write(tmp_path, name, content), settings)
