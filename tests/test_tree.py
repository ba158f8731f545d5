"""The shared Block → Document Tree builder and text normalisation."""

from __future__ import annotations

from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.models import DocumentTree, NodeType
from chunkbench.text.normalize import normalize_text

ZWNJ = "\u200c"


def test_normalisation_keeps_zwnj_and_maps_arabic_letters():
    raw = f"\u202bمي{ZWNJ}خواهم كتاب\u202c   را\u200f"
    assert normalize_text(raw) == f"می{ZWNJ}خواهم کتاب را"


def test_normalisation_folds_presentation_forms_and_drops_stray_zwnj():
    assert normalize_text("ﻻ ﺏ") == "لا ب"
    assert normalize_text(f"a {ZWNJ}b{ZWNJ}{ZWNJ}c{ZWNJ} d") == f"a b{ZWNJ}c d"


def test_blocks_nest_by_level_and_offsets_point_into_markdown():
    result = build_parse_result(
        [
            Block("heading", "Chapter 1", level=1),
            Block("paragraph", "Intro."),
            Block("heading", "Article 5", level=2),
            Block("paragraph", "Rule text.", markdown="**Rule** text."),
            Block("heading", "1.1 Scope", level=2),
            Block("paragraph", "   "),  # empty after normalisation: dropped
            Block("heading", "Chapter 2", level=1),
            Block("paragraph", "End."),
        ],
        title="Doc",
    )
    md = result.markdown
    assert md == "# Chapter 1\n\nIntro.\n\n## Article 5\n\n**Rule** text.\n\n## 1.1 Scope\n\n# Chapter 2\n\nEnd."
    root = result.tree.root
    assert [c.heading for c in root.children] == ["Chapter 1", "Chapter 2"]
    chapter1 = root.children[0]
    assert [c.node_type for c in chapter1.children] == [
        NodeType.PARAGRAPH,
        NodeType.ARTICLE,
        NodeType.SECTION,
    ]
    article = chapter1.children[1]
    assert md[article.start_index : article.end_index] == "## Article 5\n\n**Rule** text."
    assert md[chapter1.start_index : chapter1.end_index].endswith("## 1.1 Scope")
    paragraph = article.children[0]
    assert md[paragraph.start_index : paragraph.end_index] == "**Rule** text."
    assert paragraph.text == "Rule text."
    assert result.paragraph_count == 3
    assert (root.start_index, root.end_index) == (0, len(md))


def test_farsi_article_heading_and_deep_levels():
    result = build_parse_result(
        [Block("heading", "ماده ۵", level=1), Block("heading", "Deep", level=8), Block("paragraph", "x")]
    )
    assert result.markdown.splitlines()[2] == "###### Deep"  # markdown stops at six levels
    assert result.tree.headings() == [(1, "ماده ۵"), (8, "Deep")]
    assert result.tree.root.children[0].node_type is NodeType.ARTICLE


def test_tree_round_trips_through_json():
    result = build_parse_result([Block("heading", "A", level=1), Block("paragraph", "b")])
    assert DocumentTree.from_dict(result.tree.to_dict()) == result.tree
