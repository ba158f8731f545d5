"""The code_aware strategy on real source files: cuts at definitions, exact offsets, symbol paths, prose fallback."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tree_sitter import Parser

from chunkbench.chunking.base import Chunk, ChunkingInput, default_strategies, strategy_class, validate_params
from chunkbench.chunking.strategies.code_aware import CodeAwareParams, CodeAwareStrategy
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.parsers.code_languages import grammar
from chunkbench.errors import ChunkingError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import NodeType, ParseResult, TreeNode
from chunkbench.text.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
CODE = Path(__file__).parent / "data" / "code"
REAL = CODE / "real"  # real files from published projects: tests/data/code/real/SOURCES.tsv
# This project's own recursive.py, frozen as the tests were written against it (the live file is refactored at will).
OWN = REAL / "recursive.py"
FILES = [REAL / name for name in sorted(p.name for p in REAL.iterdir() if p.suffix != ".tsv")]
CHROMA = DEFAULT_CHROMA_DIR / "corpora"


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunking code reaches no server (a grammar or tokenizer download would fail here)."""

    def refuse(*_args, **_kwargs):
        raise OSError("network access is blocked in test_code_aware")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def _parsed(path: Path, settings: Settings) -> ParseResult:
    return parse_document(path, settings)


def _input(path: Path, result: ParseResult) -> ChunkingInput:
    return ChunkingInput(path.stem, path.name, result.markdown, result.tree, code_language=result.code_language)


def _chunks(path: Path, settings: Settings, **params) -> tuple[ParseResult, list[Chunk], CodeAwareStrategy]:
    result = _parsed(path, settings)
    strategy = CodeAwareStrategy(CodeAwareParams(**params))
    return result, strategy.chunk(_input(path, result)), strategy


def _sections(node: TreeNode) -> list[TreeNode]:
    found = []
    for child in node.children:
        if child.node_type == NodeType.SECTION:
            found += [child, *_sections(child)]
    return found


@pytest.mark.parametrize("size", [96, 512])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_chunk_is_an_exact_slice_in_order_covering_the_whole_source(path: Path, size: int, settings: Settings):
    result, chunks, strategy = _chunks(path, settings, chunk_size=size)
    text = result.markdown
    assert result.kind == "code" and strategy.run_details() == {
        "mode": "tree-sitter",
        "code_language": result.code_language,
    }
    assert chunks and [c.chunk_index for c in chunks] == list(range(len(chunks)))
    covered = [False] * len(text)
    previous_end = 0
    for chunk in chunks:
        assert chunk.text == text[chunk.start_index : chunk.end_index] and chunk.text == chunk.text.strip()
        assert chunk.start_index >= previous_end, "chunks are in order and never overlap"
        assert chunk.token_count == count_tokens(chunk.text) <= size
        assert chunk.heading_path and chunk.heading_path[0] == path.stem
        previous_end = chunk.end_index
        covered[chunk.start_index : chunk.end_index] = [True] * (chunk.end_index - chunk.start_index)
    missing = [i for i, character in enumerate(text) if not character.isspace() and not covered[i]]
    assert missing == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_definition_that_fits_is_never_cut(path: Path, settings: Settings):
    # The parser's outline (its own tree-sitter reading: each definition with its doc comments and decorators).
    size = 256
    result, chunks, _ = _chunks(path, settings, chunk_size=size)
    text = result.markdown
    fitting = [s for s in _sections(result.tree.root) if count_tokens(text[s.start_index : s.end_index]) <= size]
    assert len(fitting) >= 3
    for section in fitting:
        holders = [c for c in chunks if c.start_index <= section.start_index and section.end_index <= c.end_index]
        assert holders, f"{section.heading!r} was cut"
    # And every definition starts no later than the chunk holding its first line: it is not glued to a neighbour's
    # tail.
    starts = {c.start_index for c in chunks}
    long = [s for s in _sections(result.tree.root) if count_tokens(text[s.start_index : s.end_index]) > size]
    for section in long:
        assert any(section.start_index <= start < section.end_index for start in starts), section.heading


def _holding(chunks: list[Chunk], needle: str) -> Chunk:
    return next(c for c in chunks if needle in c.text)


def test_decorators_doc_comments_and_attributes_stay_with_their_definition(settings: Settings):
    _, chunks, _ = _chunks(OWN, settings, chunk_size=256, min_chunk_tokens=0)
    validator = _holding(chunks, "def _overlap_below_size")
    assert '@model_validator(mode="after")\n    def _overlap_below_size' in validator.text
    carry = _holding(chunks, "def _carry(")
    assert "@staticmethod\n    def _carry(" in carry.text
    assert carry.heading_path == ["recursive", "RecursiveStrategy", "_carry"]
    strategy = _holding(chunks, "class RecursiveStrategy(ChunkingStrategy):")
    assert strategy.text.startswith("@register_strategy\nclass RecursiveStrategy")

    _, rust, _ = _chunks(REAL / "main.rs", settings, chunk_size=256, min_chunk_tokens=0)
    render = _holding(rust, "fn render_markdown(")
    assert render.text.startswith("/// Output an HTML page for the errors in `err_map` to `output_path`.")
    annotated = _holding(rust, "// By default, mdbook doesn't consider code blocks as Rust ones")
    assert "fn add_rust_attribute_on_codeblock(" in annotated.text

    _, java, _ = _chunks(REAL / "Parser.java", settings, chunk_size=128, min_chunk_tokens=0)
    # processToken is longer than 128 tokens: its first piece still opens with its Javadoc.
    first = _holding(java, "protected void processToken(Token token, String value)")
    assert first.text.startswith("/**\n   * Process a token.")
    assert first.heading_path == ["Parser", "Parser", "processToken"]


def _statement_starts(path: Path, text: str, function: str, language: str) -> tuple[int, int, set[int]]:
    """The span of ``function`` and the start of every statement (or comment) inside it, at any depth."""
    data = text.encode()
    assert data == text.encode("ascii", "strict")  # byte offsets are character offsets in this file
    root = Parser(grammar(language)).parse(data).root_node
    stack, target = [root], None
    while stack and target is None:
        node = stack.pop()
        name = node.child_by_field_name("name")
        if node.type == "function_definition" and name is not None and name.text.decode() == function:
            target = node
        stack += node.children
    assert target is not None
    starts = set()
    stack = [target]
    while stack:
        node = stack.pop()
        if node.parent is not None and node.parent.type in ("block", "module") and node.is_named:
            starts.add(node.start_byte)
        stack += node.children
    return target.start_byte, target.end_byte, starts


def test_a_long_function_is_split_at_statement_boundaries_only(settings: Settings):
    path = REAL / "textwrap.py"
    result, chunks, _ = _chunks(path, settings, chunk_size=256)
    start, end, statements = _statement_starts(path, result.markdown, "_wrap_chunks", "python")
    assert count_tokens(result.markdown[start:end]) > 3 * 256
    pieces = [c for c in chunks if start <= c.start_index < end]
    assert len(pieces) >= 4
    assert pieces[0].start_index == start and pieces[-1].end_index == end
    for piece in pieces:
        assert piece.heading_path == ["textwrap", "TextWrapper", "_wrap_chunks"]
        assert piece is pieces[0] or piece.start_index in statements, piece.text[:80]
    # Statements are packed up to the size, not one per chunk.
    assert pieces[0].token_count > 128


def test_a_statement_longer_than_a_chunk_is_cut_at_line_breaks(settings: Settings):
    # textwrap.TextWrapper's docstring alone is over 64 tokens: it is the one statement cut inside, at lines.
    result, chunks, _ = _chunks(REAL / "textwrap.py", settings, chunk_size=64)
    text = result.markdown
    docstring = text.index('    """\n    Object for wrapping/filling text.')
    closing = text.index('"""', docstring + 8) + 3
    inside = [c for c in chunks if docstring < c.start_index < closing]
    assert inside
    for chunk in inside:
        assert text[chunk.start_index - 1] == "\n" or text[: chunk.start_index].endswith((" ", "\t")), chunk.text
        line_start = text.rfind("\n", 0, chunk.start_index) + 1
        assert text[line_start : chunk.start_index].strip() == "", "a cut inside a statement falls at a line start"


@pytest.mark.parametrize(
    ("path", "needle", "expected"),
    [
        (REAL / "Parser.java", "public interface Grammar", ["Parser", "Parser", "Grammar"]),
        (REAL / "Parser.java", "MatchRule(Token... tokens)", ["Parser", "Parser", "MatchRule", "MatchRule"]),
        (REAL / "Renderer.ts", "public buildDom(): HTMLElement[]", ["Renderer", "Renderer", "buildDom"]),
        (REAL / "proxy.go", "func (p *Proxy) closeOnIdle(", ["proxy", "Proxy", "closeOnIdle"]),
        (REAL / "spine.js", "\tfirst() {", ["spine", "Spine", "first"]),
        (REAL / "main.rs", "fn parse_args()", ["main", "parse_args"]),
        # Small files: a size under the impl or class, so their methods are chunks of their own.
        (CODE / "matrix.rs", "pub fn identity(n: usize)", ["matrix", "Matrix", "identity"]),
        (CODE / "RateLimiter.java", "void refill(double at", ["RateLimiter", "RateLimiter", "Bucket", "refill"]),
        (OWN, "def trim(self, spans", ["recursive", "_Cutter", "trim"]),
    ],
)
def test_symbol_paths_name_module_class_and_method(path: Path, needle: str, expected: list[str], settings: Settings):
    # min_chunk_tokens 0 and a small size: every definition is a chunk of its own (or cut into pieces).
    size = 160 if path.parent == REAL or path == OWN else 40
    _, chunks, _ = _chunks(path, settings, chunk_size=size, min_chunk_tokens=0)
    assert _holding(chunks, needle).heading_path == expected


def test_small_definitions_and_imports_merge_up_to_the_size(settings: Settings):
    path = REAL / "spine.js"
    result, merged, _ = _chunks(path, settings, chunk_size=512, min_chunk_tokens=64)
    _, alone, _ = _chunks(path, settings, chunk_size=512, min_chunk_tokens=0)
    imports = result.markdown.count("\nimport ") + 1
    assert sum(c.text.startswith("import ") for c in alone) == imports == 4
    assert merged[0].text.count("import ") == imports and merged[0].heading_path == ["spine"]
    assert len(merged) < len(alone)
    for chunk in merged:
        assert chunk.token_count <= 512
    # Merged chunks name the innermost symbol holding all of them.
    # A short run (a commented-out method) takes in the next definition; a definition of its own size takes in
    # nothing after it.
    pair = _holding(merged, "// insert(section, index) {")
    assert "\tremove(section) {" in pair.text and pair.heading_path == ["spine", "Spine"]
    assert _holding(alone, "\tremove(section) {").heading_path == ["spine", "Spine", "remove"]
    assert not any("\tfirst() {" in c.text and "\tlast() {" in c.text for c in merged)


@pytest.mark.parametrize(("path", "comment"), [(OWN, "#"), (REAL / "proxy.go", "//"), (REAL / "Renderer.ts", "//")])
def test_prefix_symbol_changes_only_the_embedded_text(path: Path, comment: str, settings: Settings):
    _, plain, _ = _chunks(path, settings, chunk_size=200)
    _, prefixed, _ = _chunks(path, settings, chunk_size=200, prefix_symbol=True)
    assert [(c.start_index, c.end_index, c.text, c.heading_path, c.token_count) for c in plain] == [
        (c.start_index, c.end_index, c.text, c.heading_path, c.token_count) for c in prefixed
    ]
    for before, after in zip(plain, prefixed, strict=True):
        assert before.enriched_content is None and before.embedding_text == before.text
        assert after.embedding_text == f"{comment} path: {'.'.join(after.heading_path)}\n{after.text}"


def test_prose_and_a_language_without_a_grammar_fall_back_to_recursive_and_say_so(tmp_path: Path, settings: Settings):
    prose = CHROMA / "state_of_the_union.md" if CHROMA.exists() else CODE / "onboarding.txt"
    result = _parsed(prose, settings)
    strategy = CodeAwareStrategy(CodeAwareParams(chunk_size=300))
    document = _input(prose, result)
    chunks = strategy.chunk(document)
    assert strategy.run_details() == {"mode": "recursive", "fallback_reason": "not source code"}
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=300)).chunk(document)
    assert [(c.start_index, c.end_index, c.heading_path) for c in chunks] == [
        (c.start_index, c.end_index, c.heading_path) for c in recursive
    ]
    assert {c.strategy_name for c in chunks} == {"code_aware"}

    sql = tmp_path / "schema.sql"
    sql.write_text(
        "CREATE TABLE orders (\n  id integer primary key,\n  total numeric\n);\n\n"
        "CREATE FUNCTION order_total(o integer) RETURNS numeric AS $$\n  SELECT total FROM orders WHERE id = o;\n"
        "$$ LANGUAGE sql;\n",
        encoding="utf-8",
    )
    result, chunks, strategy = _chunks(sql, settings, chunk_size=300)
    assert result.kind == "code" and result.code_language == "sql"
    assert strategy.run_details() == {"mode": "recursive", "fallback_reason": "no tree-sitter grammar for sql"}
    assert "".join(c.text for c in chunks).replace("\n", "") == result.markdown.replace("\n", "")


def test_bad_parameters_are_refused_with_a_message_naming_the_field():
    with pytest.raises(ChunkingError, match="chunk_size"):
        validate_params("code_aware", {"chunk_size": 4})
    with pytest.raises(ChunkingError, match="chunk_overlap"):
        validate_params("code_aware", {"chunk_overlap": 10})
    assert "code_aware" not in default_strategies()  # named explicitly, for a code corpus
    assert strategy_class("code_aware").size_params == {"chunk_size": 24}


def test_hostile_and_empty_sources_never_crash(tmp_path: Path, settings: Settings):
    empty = CodeAwareStrategy().chunk(ChunkingInput("e", "empty.py", "", _parsed(CODE / "server.go", settings).tree))
    assert empty == []
    cases = {
        "broken.rs": "fn main( {\n    let x = ;\n}\n}}}\nimpl {\n",
        "unicode.py": 'def grüße():\n    """Sagt «hallo» 👋."""\n    return "ß" * 3\n\n\nclass Ünïcode:\n    x = "é"\n',
        "one_line.js": "x" * 20000,
    }
    for name, source in cases.items():
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        result, chunks, _ = _chunks(path, settings, chunk_size=64)
        for chunk in chunks:
            assert chunk.text == result.markdown[chunk.start_index : chunk.end_index]
            assert chunk.token_count <= 64
        assert "".join(re.sub(r"\s", "", c.text) for c in chunks) == re.sub(r"\s", "", result.markdown), name
    _, chunks, _ = _chunks(tmp_path / "unicode.py", settings, chunk_size=64, min_chunk_tokens=0)
    assert [c.heading_path for c in chunks] == [["unicode", "grüße"], ["unicode", "Ünïcode"]]


@pytest.mark.model
def test_processing_a_code_document_stores_the_symbol_path_in_the_payload(client: TestClient, tmp_path: Path):
    source = tmp_path / "Renderer.ts"
    shutil.copy(REAL / "Renderer.ts", source)
    uploaded = client.post("/documents", files={"file": ("Renderer.ts", source.read_bytes())})
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["document"]["id"]
    processed = client.post(
        f"/documents/{document_id}/process",
        params={"wait": "true"},
        json={"strategies": ["code_aware"], "params": {"code_aware": {"chunk_size": 200, "prefix_symbol": True}}},
    )
    assert processed.status_code == 200, processed.text
    preview = client.get(f"/admin/chunks/{document_id}", params={"strategy": "code_aware", "limit": 1000})
    assert preview.status_code == 200, preview.text
    chunks = preview.json()["chunks"]
    build = next(c for c in chunks if "public buildDom()" in c["text"])
    assert build["heading_path"] == ["Renderer", "Renderer", "buildDom"]
    assert preview.json()["run"]["details"]["mode"] == "tree-sitter"
