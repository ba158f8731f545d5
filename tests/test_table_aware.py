"""table_aware: tables cut only between rows, each later part embedded and answered under its header; prose as
recursive cuts it. Documents are real DOCX, XLSX, CSV and HTML files parsed by chunkbench's parsers, and Chroma's
corpora; the answer context is read from the prompt the real query pipeline sends to the real local model
(tests/real_llm.py)."""

from __future__ import annotations

import csv
import re
import socket
from pathlib import Path

import docx
import openpyxl
import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.chunking.base import Chunk, ChunkingInput, default_strategies, validate_params
from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.chunking.strategies.table_aware import TableAwareParams, TableAwareStrategy
from chunkbench.chunking.tables import MarkdownTable, TableIndex, find_tables
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import ChunkingError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.storage.points import chunk_payload
from chunkbench.text.tokens import get_tokenizer

REPO = Path(__file__).resolve().parents[1]
CORPORA = DEFAULT_CHROMA_DIR / "corpora"
DOCX_HEADER = "Product | Price | Notes"
CSV_HEADER = "| id | name | city | remark |\n| --- | --- | --- | --- |"
LONG_NOTE = " ".join(f"word{i}" for i in range(400))


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network socket may connect: chunking reads nothing from a hub."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def _docx(path: Path, rows: int, *, long_row: int | None = None) -> Path:
    document = docx.Document()
    document.add_heading("Price list", 1)
    document.add_paragraph("The prices below are valid for the whole of 2024, taxes included. " * 3)
    table = document.add_table(rows=1, cols=3)
    for cell, text in zip(table.rows[0].cells, DOCX_HEADER.split(" | "), strict=True):
        cell.text = text
    for i in range(rows):
        cells = table.add_row().cells
        cells[0].text, cells[1].text = f"Item {i}", f"{i}.50 EUR"
        cells[2].text = LONG_NOTE if i == long_row else f"Ships in {i % 5 + 1} days. Colour {['red', 'blue'][i % 2]}."
    document.add_heading("Terms", 1)
    document.add_paragraph("Orders are shipped from Lyon. Returns are accepted within thirty days. " * 4)
    document.save(path)
    return path


def _csv(path: Path, rows: int) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "city", "remark"])
        for i in range(rows):
            writer.writerow([i, f"Customer {i}", ["Paris", "Oslo", "Lima"][i % 3], f"joined in {2000 + i % 20}"])
    return path


def _xlsx(path: Path, rows: int) -> Path:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Stock"
    sheet.append(["sku", "warehouse", "quantity"])
    for i in range(rows):
        sheet.append([f"SKU-{i:04d}", ["North", "South"][i % 2], i * 3])
    workbook.save(path)
    return path


def _html(path: Path, rows: int) -> Path:
    body = "".join(f"<tr><td>Team {i}</td><td>{i * 7} points</td><td>coach {i}</td></tr>" for i in range(rows))
    path.write_text(
        "<html><body><h1>League</h1><p>The standings after the last round of the season.</p>"
        f"<table><tr><th>Team</th><th>Score</th><th>Coach</th></tr>{body}</table><p>Next season starts in May.</p>"
        "</body></html>"
    )
    return path


def _parsed(path: Path, settings: Settings) -> ChunkingInput:
    result = parse_document(path, settings)
    return ChunkingInput(path.stem, path.name, result.markdown, result.tree)


def _corpus(text: str, name: str) -> ChunkingInput:
    """A Chroma corpus as one block (as test_chunking_strategies reads them)."""
    parsed = build_parse_result([Block("paragraph", text, markdown=text)])
    return ChunkingInput(name, f"{name}.md", parsed.markdown, parsed.tree)


def _rows_cut(markdown: str, chunks: list[Chunk]) -> set[tuple[int, int]]:
    """The table rows with a chunk boundary strictly inside them."""
    edges = {edge for chunk in chunks for edge in (chunk.start_index, chunk.end_index)}
    return {row for table in find_tables(markdown) for row in table.rows for edge in edges if row[0] < edge < row[1]}


def _assert_exact_spans(document: ChunkingInput, chunks: list[Chunk]) -> None:
    """Every chunk is its markdown span, chunks in order, and every non-space character is in some chunk."""
    text = document.markdown
    assert chunks
    covered = bytearray(len(text))
    for chunk in chunks:
        assert chunk.text == text[chunk.start_index : chunk.end_index]
        covered[chunk.start_index : chunk.end_index] = b"\1" * (chunk.end_index - chunk.start_index)
    assert [c.start_index for c in chunks] == sorted(c.start_index for c in chunks)
    assert [c.end_index for c in chunks] == sorted(c.end_index for c in chunks)
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))


def _parts_after_the_first(document: ChunkingInput, chunks: list[Chunk]) -> list[tuple[Chunk, MarkdownTable]]:
    """The chunks that start inside a table below its header rows, with their table."""
    tables = find_tables(document.markdown)
    return [(chunk, table) for chunk in chunks for table in tables if table.header_end <= chunk.start_index < table.end]


def test_fixed_size_and_recursive_with_overlap_cut_rows_and_table_aware_does_not(tmp_path, settings, offline):
    document = _parsed(_docx(tmp_path / "prices.docx", 80), settings)
    fixed = FixedSizeStrategy(FixedSizeParams(chunk_size=128, chunk_overlap=16)).chunk(document)
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=128, chunk_overlap=16)).chunk(document)
    # What users see today: token windows and carried overlap start in the middle of a row.
    assert len(_rows_cut(document.markdown, fixed)) > 10
    assert len(_rows_cut(document.markdown, recursive)) > 5
    strategy = TableAwareStrategy(TableAwareParams(chunk_size=128, chunk_overlap=16))
    chunks = strategy.chunk(document)
    assert _rows_cut(document.markdown, chunks) == set()
    assert strategy.run_details() == {
        "tables": 1, "tables_split": 1, "rows_cut_inside": 0, "headers_not_repeated": 0, "parts_over_size": 0
    }  # fmt: skip
    _assert_exact_spans(document, chunks)


@pytest.mark.parametrize(
    ("maker", "rows", "header"),
    [(_docx, 120, DOCX_HEADER), (_csv, 130, CSV_HEADER), (_html, 90, "Team | Score | Coach")],
    ids=["docx", "csv", "html"],
)
@pytest.mark.parametrize(("size", "overlap"), [(64, 0), (100, 20), (512, 50)])
def test_parsed_tables_are_cut_between_rows_under_their_header(
    tmp_path, settings, offline, maker, rows, header, size, overlap
):
    suffix = {"_docx": "docx", "_csv": "csv", "_html": "html"}[maker.__name__]
    document = _parsed(maker(tmp_path / f"table.{suffix}", rows), settings)
    strategy = TableAwareStrategy(TableAwareParams(chunk_size=size, chunk_overlap=overlap))
    chunks = strategy.chunk(document)
    _assert_exact_spans(document, chunks)
    assert _rows_cut(document.markdown, chunks) == set()
    parts = _parts_after_the_first(document, chunks)
    assert parts and strategy.run_details()["tables_split"] >= 1
    tokenizer = get_tokenizer()
    for chunk, table in parts:
        assert table.header(document.markdown) == header
        assert chunk.context_header == header
        assert chunk.embedding_text.startswith(header.split("\n")[0]) and chunk.embedding_text.endswith(chunk.text)
        assert tokenizer.count(chunk.embedding_text) <= size
    # A part that starts a table, or prose, is embedded as it is.
    for chunk in chunks:
        if all(chunk is not part for part, _ in parts):
            assert chunk.enriched_content is None and chunk.context_header is None
        assert chunk.token_count <= size


def test_xlsx_sheet_blocks_each_repeat_their_header(tmp_path, settings, offline):
    document = _parsed(_xlsx(tmp_path / "stock.xlsx", 140), settings)
    tables = find_tables(document.markdown)
    # The XLSX parser writes a sheet as blocks of 50 rows, each a table with its own header.
    assert len(tables) == 3 and {t.header(document.markdown) for t in tables} == {
        "| sku | warehouse | quantity |\n| --- | --- | --- |"
    }
    strategy = TableAwareStrategy(TableAwareParams(chunk_size=80))
    chunks = strategy.chunk(document)
    _assert_exact_spans(document, chunks)
    assert _rows_cut(document.markdown, chunks) == set()
    parts = _parts_after_the_first(document, chunks)
    assert len(parts) >= 6 and strategy.run_details()["tables_split"] == 3
    assert all(chunk.embedding_text.startswith("| sku | warehouse | quantity |\n| --- |") for chunk, _ in parts)
    # Every row of the sheet is in exactly one chunk (no overlap asked for): nothing lost, nothing doubled.
    found = re.findall(r"SKU-\d{4}", " ".join(chunk.text for chunk in chunks))
    assert found == [f"SKU-{i:04d}" for i in range(140)]


def test_a_row_longer_than_a_chunk_is_cut_at_cells_then_words_and_said(tmp_path, settings, offline):
    document = _parsed(_docx(tmp_path / "long.docx", 20, long_row=7), settings)
    text = document.markdown
    strategy = TableAwareStrategy(TableAwareParams(chunk_size=64))
    chunks = strategy.chunk(document)
    _assert_exact_spans(document, chunks)
    cut = _rows_cut(text, chunks)
    assert len(cut) == 1 and text[next(iter(cut))[0] :].startswith("Item 7 |")
    assert strategy.run_details()["rows_cut_inside"] == 1
    (row_start, row_end) = next(iter(cut))
    inside = [c for c in chunks if row_start <= c.start_index < row_end]
    # The short cells fit together, cut before the long cell's pipe; the long cell is cut between words.
    assert inside[0].text == "Item 7 | 7.50 EUR" and inside[1].text.startswith("| word0 word1")
    for chunk in inside[1:]:
        assert chunk.context_header == DOCX_HEADER
        assert text[chunk.start_index - 1].isspace() and (chunk.end_index == row_end or text[chunk.end_index] == " ")


def test_a_table_that_fits_stays_whole_with_its_prose_as_recursive_packs_it(tmp_path, settings, offline):
    document = _parsed(_docx(tmp_path / "small.docx", 4), settings)
    table = find_tables(document.markdown)[0]
    chunks = TableAwareStrategy(TableAwareParams(chunk_size=256)).chunk(document)
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=256)).chunk(document)
    assert [(c.start_index, c.end_index) for c in chunks] == [(c.start_index, c.end_index) for c in recursive]
    holder = next(c for c in chunks if c.start_index <= table.start < c.end_index)
    assert holder.end_index >= table.end and holder.start_index < table.start  # joined with the prose before it
    assert all(c.enriched_content is None for c in chunks)


@pytest.mark.parametrize("name", ["chatlogs", "state_of_the_union", "wikitexts"])
def test_prose_is_chunked_exactly_as_recursive(name, offline):
    document = _corpus((CORPORA / f"{name}.md").read_text(), name)
    assert find_tables(document.markdown) == []
    for size, overlap in [(200, 0), (400, 50)]:
        ours = TableAwareStrategy(TableAwareParams(chunk_size=size, chunk_overlap=overlap)).chunk(document)
        theirs = RecursiveStrategy(RecursiveParams(chunk_size=size, chunk_overlap=overlap)).chunk(document)
        assert [(c.start_index, c.end_index, c.token_count, c.heading_path) for c in ours] == [
            (c.start_index, c.end_index, c.token_count, c.heading_path) for c in theirs
        ]


def test_finance_corpus_tables_keep_their_rows(offline):
    document = _corpus((CORPORA / "finance.md").read_text(), "finance")
    text = document.markdown
    strategy = TableAwareStrategy(TableAwareParams(chunk_size=128, chunk_overlap=20))
    chunks = strategy.chunk(document)
    _assert_exact_spans(document, chunks)
    details = strategy.run_details()
    assert details["tables"] == 200 and details["parts_over_size"] == 0
    # Only rows too long for a chunk beside their table's header (and the overlap room) are cut, and the run says
    # how many.
    cut = _rows_cut(text, chunks)
    assert 0 < len(cut) == details["rows_cut_inside"] < 20
    tokenizer, index = get_tokenizer(), TableIndex(find_tables(text))
    for a, b in cut:
        header = index.at(a).header(text)
        assert tokenizer.count(f"{header}\n\n{text[a:b]}") > 128 - 20 - 4
    unrepeated = set()
    for chunk, table in _parts_after_the_first(document, chunks):
        if chunk.context_header is None:
            # A header over half a chunk is not repeated: its parts would hold almost no rows.
            assert tokenizer.count(table.header(text)) > 64 and chunk.enriched_content is None
            unrepeated.add(table.start)
        else:
            assert chunk.embedding_text.startswith(table.header(text))
    assert len(unrepeated) <= details["headers_not_repeated"] == 2
    # Text far from any table is chunked as recursive chunks it.
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=128, chunk_overlap=20)).chunk(document)
    tables = find_tables(text)
    far = [(c.start_index, c.end_index) for c in recursive if not _near_tables(c, tables)]
    ours = {(c.start_index, c.end_index) for c in chunks}
    assert len(far) > 100 and all(span in ours for span in far)


def _near_tables(chunk: Chunk, tables: list[MarkdownTable]) -> bool:
    return any(table.start - 2000 < chunk.end_index and chunk.start_index < table.end + 2000 for table in tables)


def test_registered_outside_the_default_set_with_recursive_parameters_only():
    assert "table_aware" not in default_strategies()  # named explicitly, for a corpus with tables
    assert validate_params("table_aware", {"chunk_size": 300}).model_dump() == {
        "chunk_size": 300, "chunk_overlap": 0, "min_chunk_tokens": 32
    }  # fmt: skip
    with pytest.raises(ChunkingError, match="separators"):
        validate_params("table_aware", {"separators": ["\n"]})


def test_the_header_travels_in_the_point_payload(tmp_path, settings, offline):
    document = _parsed(_csv(tmp_path / "people.csv", 60), settings)
    chunks = TableAwareStrategy(TableAwareParams(chunk_size=64)).chunk(document)
    part, _table = _parts_after_the_first(document, chunks)[0]
    payload = chunk_payload(part, tenant_id="t", model_id="m")
    assert payload["context_header"] == CSV_HEADER and payload["enriched_content"].startswith(CSV_HEADER)
    assert "context_header" not in chunk_payload(chunks[0], tenant_id="t", model_id="m")


@pytest.mark.model
def test_the_answer_prompt_shows_a_table_part_under_its_header(tmp_path, settings, real_llm):
    path = _docx(tmp_path / "prices.docx", 80)
    settings.llm_base_url, settings.llm_model, settings.llm_max_tokens = real_llm.url, real_llm.model, 128
    settings.llm_max_retries = 0
    with TestClient(create_app(settings)) as client:
        uploaded = client.post("/documents", files={"file": ("prices.docx", path.read_bytes())})
        assert uploaded.status_code in (200, 201), uploaded.text
        document_id = uploaded.json()["document"]["id"]
        processed = client.post(
            f"/documents/{document_id}/process",
            params={"wait": "true"},
            json={"strategies": ["table_aware"], "params": {"table_aware": {"chunk_size": 96}}},
        )
        assert processed.status_code == 200, processed.text
        response = client.post(
            "/queries",
            json={
                "document_id": document_id,
                "question": "What is the price of Item 61?",
                "strategy": "table_aware",
                "top_k": 1,
            },
        )
    assert response.status_code == 201, response.text
    body = response.json()
    [chat] = real_llm.chats
    assert body["answer_mode"] == "llm" and body["answer"] == chat.content.strip()
    source = body["sources"][0]
    assert "Item 61 | 61.50 EUR" in source["text"] and not source["text"].startswith(DOCX_HEADER)
    assert source["context_header"] == DOCX_HEADER
    prompt = chat.request.body["messages"][-1]["content"]
    # The LLM reads the header rows right above the part's rows, as one table.
    assert f"{DOCX_HEADER}\n{source['text']}" in prompt
