"""docling's HybridChunker on chunkbench's Document Tree: exact spans, whole table rows, headings, no network."""

from __future__ import annotations

import re
import socket
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from itertools import pairwise
from pathlib import Path

import docx
import pytest

from chunkbench.chunking import entry_points
from chunkbench.chunking.adapters.docling import DoclingHybrid, DoclingHybridParams, docling_document
from chunkbench.chunking.base import Chunk, ChunkingInput, register_strategy, validate_params
from chunkbench.chunking.library_strategies import info
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.errors import ChunkingError, MissingExtraError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries

CORPORA = sorted((DEFAULT_CHROMA_DIR / "corpora").glob("*.md"))
# docling warns when it drops headings longer than max_tokens, or a table header before a row too wide for it: the
# corpora hold both; what the chunks become is what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore:Headers and captions:UserWarning", "ignore:Prefix omitted:UserWarning")
ROWS = [("City", "Population", "Area")] + [(f"City {n}", str(1000 * n), f"{n}.5 km2") for n in range(12)]


@pytest.fixture(scope="module", autouse=True)
def _registered() -> Iterator[None]:
    """The adapter registered as its entry point would register it, undone after the module."""
    with isolated_registries():
        register_strategy(DoclingHybrid)
        yield


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sockets beyond this machine refused: docling's default tokenizer (a hub download) would fail the test."""
    real_connect = socket.socket.connect

    def refuse(sock: socket.socket, address: object) -> None:
        # Loopback stays open: the test database may be a local PostgreSQL server.
        host = address[0] if isinstance(address, tuple) else None
        if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network access attempted during a test: {address!r}")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)


def heading_lines(document: ChunkingInput) -> list[tuple[int, int]]:
    """The span of every section's heading line."""
    markdown = document.markdown
    spans = []
    for node in document.tree.root.iter_nodes():
        if node.node_type in (NodeType.SECTION, NodeType.ARTICLE):
            end = markdown.find("\n", node.start_index)
            spans.append((node.start_index, len(markdown) if end < 0 else end))
    return spans


def assert_exact_in_order(document: ChunkingInput, chunks: list[Chunk]) -> None:
    """Chunks are the markdown at their offsets, in order, never overlapping, and only heading lines (docling's
    context, not its text) are left out."""
    markdown = document.markdown
    assert chunks, document.document_name
    covered = bytearray(len(markdown))
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_index == index
        assert chunk.text == markdown[chunk.start_index : chunk.end_index] and chunk.text.strip()
        covered[chunk.start_index : chunk.end_index] = b"\1" * len(chunk.text)
    for before, after in pairwise(chunks):
        assert before.end_index <= after.start_index
    for start, end in heading_lines(document):
        covered[start:end] = b"\1" * (end - start)
    missed = "".join(char for char, seen in zip(markdown, covered, strict=True) if not seen and not char.isspace())
    assert missed == "", f"{document.document_name}: {missed[:200]!r} in no chunk"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> list[ChunkingInput]:
    if len(CORPORA) != 5:
        pytest.skip(f"Chroma's five corpora are not in {DEFAULT_CHROMA_DIR}")
    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("parse"))
    parsed = [(path, parse_document(path, settings)) for path in CORPORA]
    return [ChunkingInput(path.stem, path.name, result.markdown, result.tree) for path, result in parsed]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ChunkingInput:
    """A DOCX with headings, a paragraph, a 13-row table, a bullet list and a long closing section, parsed."""
    folder = tmp_path_factory.mktemp("docx")
    document = docx.Document()
    document.add_heading("Report", 1)
    document.add_paragraph("The opening paragraph explains the figures that follow. " * 3)
    document.add_heading("Figures", 2)
    table = document.add_table(rows=0, cols=3)
    for row in ROWS:
        for cell, value in zip(table.add_row().cells, row, strict=True):
            cell.text = value
    document.add_paragraph("First point", style="List Bullet")
    document.add_paragraph("Second point", style="List Bullet")
    document.add_heading("Notes", 2)
    document.add_paragraph(" ".join(f"Closing note number {n} is about the harbour." for n in range(60)))
    path = folder / "report.docx"
    document.save(path)
    result = parse_document(path, Settings(_env_file=None, data_dir=folder / "data"))
    return ChunkingInput("report", "report.docx", result.markdown, result.tree)


def table_span(document: ChunkingInput) -> tuple[int, int]:
    start = document.markdown.index("City | Population | Area")
    end = document.markdown.index("11.5 km2") + len("11.5 km2")
    return start, end


# --------------------------------------------------------------------------- a real DOCX


def test_the_document_tree_becomes_docling_items(report: ChunkingInput) -> None:
    from docling_core.types.doc import ListItem, SectionHeaderItem, TableItem, TextItem

    built = docling_document(report)
    items = [item for item, _level in built.document.iterate_items()]
    kinds = [type(item).__name__ for item in items]
    assert kinds == [
        "SectionHeaderItem", "TextItem", "SectionHeaderItem", "TableItem", "ListItem", "ListItem",
        "SectionHeaderItem", "TextItem",
    ]  # fmt: skip
    headers = [item for item in items if isinstance(item, SectionHeaderItem)]
    assert [(h.text, h.level) for h in headers] == [("Report", 1), ("Figures", 2), ("Notes", 2)]
    table = next(item for item in items if isinstance(item, TableItem))
    assert (table.data.num_rows, table.data.num_cols) == (13, 3)
    assert table.data.grid[5][1].text == "4000"
    assert [item.text for item in items if isinstance(item, ListItem)] == ["First point", "Second point"]
    # Each text item holds the markdown's own text at its node's offsets.
    for item in items:
        start, end = built.spans[item.self_ref]
        if type(item) is TextItem:
            assert item.text == report.markdown[start:end]
    assert report.markdown[slice(*built.spans[table.self_ref])] == report.markdown[slice(*table_span(report))]


def test_a_table_that_fits_is_one_chunk_with_all_its_rows(report: ChunkingInput) -> None:
    strategy = DoclingHybrid(DoclingHybridParams(max_tokens=512))
    chunks = strategy.chunk(report)
    assert_exact_in_order(report, chunks)
    start, end = table_span(report)
    holding = [chunk for chunk in chunks if chunk.start_index < end and start < chunk.end_index]
    assert len(holding) == 1 and holding[0].start_index <= start and end <= holding[0].end_index
    assert all(" | ".join(row) in holding[0].text for row in ROWS)
    assert holding[0].heading_path == ["Report", "Figures"]
    # Embedded as docling's contextualize() does: the headings, then the text.
    assert holding[0].enriched_content == f"Report\nFigures\n\n{holding[0].text}"
    details = strategy.run_details()
    assert details["library"] == "docling-core" and details["library_version"]


def test_a_table_too_long_is_cut_between_rows_with_the_header_left_out_of_the_span(report: ChunkingInput) -> None:
    strategy = DoclingHybrid(DoclingHybridParams(max_tokens=48))
    chunks = strategy.chunk(report)
    assert_exact_in_order(report, chunks)
    start, end = table_span(report)
    table_lines = report.markdown[start:end].split("\n")
    holding = [chunk for chunk in chunks if chunk.start_index < end and start < chunk.end_index]
    assert len(holding) >= 3
    for chunk in holding:
        inside = report.markdown[max(chunk.start_index, start) : min(chunk.end_index, end)]
        # Whole rows only: every line of the chunk inside the table is one of the table's rows.
        assert all(line in table_lines for line in inside.split("\n")), inside
    # docling repeats the header row before the later parts; the spans hold it once, at the table's top.
    assert sum(chunk.text.count("City | Population | Area") for chunk in holding) == 1
    assert strategy.run_details()["text_differed"] >= len(holding) - 1


def test_a_long_paragraph_is_cut_within_max_tokens(report: ChunkingInput) -> None:
    chunks = DoclingHybrid(DoclingHybridParams(max_tokens=64)).chunk(report)
    notes = [chunk for chunk in chunks if chunk.heading_path == ["Report", "Notes"]]
    assert len(notes) >= 4
    # max_tokens counts the headings docling puts in front ("Report\nNotes\n"): the text gets the rest.
    assert all(chunk.token_count <= 64 for chunk in notes)
    assert re.match(r"Closing note number 0 ", notes[0].text) and notes[-1].text.endswith(
        "number 59 is about the harbour."
    )
    # The parts follow one another, none found again inside the one before.
    assert all(a.end_index < b.start_index for a, b in pairwise(notes))


def test_merge_peers_joins_undersized_neighbours(report: ChunkingInput) -> None:
    merged = DoclingHybrid(DoclingHybridParams(max_tokens=512, merge_peers=True)).chunk(report)
    apart = DoclingHybrid(DoclingHybridParams(max_tokens=512, merge_peers=False)).chunk(report)
    assert len(merged) < len(apart)
    start, end = table_span(report)
    # Apart, the table and the list after it (same headings) are two chunks; merged, one.
    assert any(chunk.start_index == start and chunk.end_index == end for chunk in apart)
    assert any(chunk.start_index == start and chunk.end_index > end for chunk in merged)


def test_an_html_page_with_code_and_a_numbered_list(tmp_path: Path) -> None:
    code = "\n".join(f"print({n})  # line {n}" for n in range(80))
    page = tmp_path / "guide.html"
    page.write_text(
        f"<html><body><h1>Guide</h1><p>Intro.</p><pre><code class='language-python'>{code}</code></pre>"
        "<ol><li>one</li><li>two</li></ol><h2>End</h2><p>Bye.</p></body></html>",
        encoding="utf-8",
    )
    result = parse_document(page, Settings(_env_file=None, data_dir=tmp_path / "data"))
    document = ChunkingInput("guide", "guide.html", result.markdown, result.tree)
    kinds = [type(item).__name__ for item, _ in docling_document(document).document.iterate_items()]
    assert kinds == [
        "SectionHeaderItem",
        "TextItem",
        "CodeItem",
        "ListItem",
        "ListItem",
        "SectionHeaderItem",
        "TextItem",
    ]
    cut: dict[int, list[Chunk]] = {}
    for max_tokens in (32, 512):
        strategy = DoclingHybrid(DoclingHybridParams(max_tokens=max_tokens))
        cut[max_tokens] = chunks = strategy.chunk(document)
        assert_exact_in_order(document, chunks)
        assert chunks[-1].text == "Bye." and chunks[-1].heading_path == ["Guide", "End"]
        # docling writes the fence without its language ("```" for "```python"): counted, mapped all the same.
        assert strategy.run_details()["text_differed"] >= 1
    markdown = document.markdown
    code_start, code_end = markdown.index("print(0)"), markdown.index("# line 79") + len("# line 79")
    inside = [c for c in cut[32] if code_start < c.start_index < code_end or code_start < c.end_index < code_end]
    # At 32 tokens the code block is cut into many parts, each of whole lines of it.
    assert len(inside) > 20
    for chunk in inside:
        assert chunk.start_index <= code_start or markdown[chunk.start_index - 1] == "\n"
        assert chunk.end_index >= code_end or markdown[chunk.end_index] == "\n"


def test_an_empty_document_has_no_chunks() -> None:
    tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT))
    assert DoclingHybrid().chunk(ChunkingInput("empty", "empty.md", "", tree)) == []


@pytest.mark.model
def test_processed_through_the_api_into_exact_indexed_chunks_embedded_behind_their_headings(
    client, report: ChunkingInput
) -> None:
    upload = client.post("/documents", files={"file": ("report.md", report.markdown.encode())})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["document"]["id"]
    body = {"strategies": ["docling_hybrid"], "params": {"docling_hybrid": {"max_tokens": 48}}}
    response = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["failed"] == [] and response.json()["status"] == "indexed"
    markdown = client.get(f"/documents/{document_id}/markdown").text
    preview = client.get(f"/admin/chunks/{document_id}", params={"strategy": "docling_hybrid", "limit": 1000}).json()
    chunks = preview["chunks"]
    assert len(chunks) > 5
    for chunk in chunks:
        assert markdown[chunk["start_index"] : chunk["end_index"]] == chunk["text"]
        # What was embedded: the chunk behind its headings, read back as its context prefix.
        assert chunk["context_prefix"] == "\n".join(chunk["heading_path"])
    assert preview["run"]["params"]["max_tokens"] == 48
    assert preview["run"]["details"]["library"] == "docling-core"


def test_the_api_refuses_bad_parameters_before_any_work(client, report: ChunkingInput) -> None:
    upload = client.post("/documents", files={"file": ("report.md", report.markdown.encode())})
    document_id = upload.json()["document"]["id"]
    body = {"strategies": ["docling_hybrid"], "params": {"docling_hybrid": {"max_tokens": 2}}}
    response = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
    assert response.status_code == 400 and "max_tokens" in response.json()["message"]
    assert client.get(f"/documents/{document_id}").json()["status"] == "parsed"


# --------------------------------------------------------------------------- Chroma's corpora


@pytest.mark.parametrize("max_tokens", [128, 512])
def test_corpora_chunks_are_exact_and_in_order(corpora: list[ChunkingInput], max_tokens: int) -> None:
    for document in corpora:
        strategy = DoclingHybrid(DoclingHybridParams(max_tokens=max_tokens))
        chunks = strategy.chunk(document)
        assert_exact_in_order(document, chunks)
        headings = heading_lines(document)
        for chunk in chunks:
            crosses_heading = any(chunk.start_index < start < chunk.end_index for start, _ in headings)
            # The span's own cl100k count; docling counted its text ('\n' between items): they differ by a token or
            # two. A span across a heading docling dropped for its length holds that heading line as well.
            if not crosses_heading:
                assert chunk.token_count <= max_tokens + 2, (document.document_name, chunk.text[:200])


# --------------------------------------------------------------------------- parameters, availability


def test_parameters_are_validated_with_the_field_named() -> None:
    with pytest.raises(ChunkingError, match="max_tokens"):
        validate_params("docling_hybrid", {"max_tokens": 4})
    with pytest.raises(ChunkingError, match="tokenizer"):
        validate_params("docling_hybrid", {"tokenizer": "sentence-transformers/all-MiniLM-L6-v2"})


def test_a_missing_library_is_a_400_naming_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # semchunk not importable, as on an install without docling-core's chunking extra.
    monkeypatch.setitem(sys.modules, "semchunk", None)
    listed = info(DoclingHybrid)
    assert listed is not None and not listed.available and listed.version is None
    with pytest.raises(MissingExtraError) as raised:
        DoclingHybrid()
    assert raised.value.status_code == 400
    assert "pip install 'chunkbench[docling]'" in raised.value.message
    assert raised.value.details["install"] == "pip install 'chunkbench[docling]'"


def test_the_entry_point_declared_in_pyproject_loads_the_class() -> None:
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    value = declared["project"]["entry-points"]["chunkbench.strategies"]["docling_hybrid"]
    entry = metadata.EntryPoint("docling_hybrid", value, entry_points.GROUP)
    with isolated_registries():
        assert entry_points._load_one(entry) == "docling_hybrid"
    assert entry.load() is DoclingHybrid
    extras = declared["project"]["optional-dependencies"]
    assert extras["docling"] == ["docling-core[chunking]>=2.50"]


def test_listing_names_the_library() -> None:
    listed = info(DoclingHybrid)
    assert listed is not None and listed.available and listed.library == "docling-core"
    assert DoclingHybrid.size_params == {"max_tokens": 0}
