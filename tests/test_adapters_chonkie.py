"""The chonkie adapters on real text: Chroma's five corpora, the real MiniLM Boundary model, real source code parsed
by tree-sitter grammars built from the grammar wheels, with network sockets blocked throughout."""

from __future__ import annotations

import ast
import importlib
import socket
import sys
import tomllib
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from chunkbench.chunking.adapters import grammars
from chunkbench.chunking.adapters.chonkie import (
    ChonkieCode,
    ChonkieCodeParams,
    ChonkieRecursive,
    ChonkieRecursiveParams,
    ChonkieSemantic,
    ChonkieSemanticParams,
    ChonkieSentence,
    ChonkieSentenceParams,
    ChonkieToken,
    ChonkieTokenParams,
    _characters_before,
)
from chunkbench.chunking.base import (
    Chunk,
    ChunkingInput,
    check_strategy,
    register_strategy,
    strategy_class,
    validate_params,
)
from chunkbench.chunking.library_strategies import info, library_version
from chunkbench.config import Settings
from chunkbench.documents.parsers.code_languages import grammar
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import boundary_embedder
from chunkbench.errors import ChunkingError, MissingExtraError, MissingGrammarError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries
from chunkbench.text.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]
CORPORA = sorted((DEFAULT_CHROMA_DIR / "corpora").glob("*.md"))
SEMANTIC_PREFIX = 20_000
CLASSES = (ChonkieToken, ChonkieSentence, ChonkieRecursive, ChonkieSemantic, ChonkieCode)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hub, no download: any network connection attempt fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"network connection attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def document(text: str, name: str = "corpus.md") -> ChunkingInput:
    tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))
    return ChunkingInput("doc1", name, text, tree)


def assert_exact(text: str, chunks: list[Chunk], *, contiguous: bool = False) -> None:
    """Each chunk is the text at its offsets, in document order, and together they cover every non-space
    character of the text."""
    assert chunks, "no chunks"
    covered = np.zeros(len(text), dtype=bool)
    previous = -1
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_index == index
        assert chunk.text == text[chunk.start_index : chunk.end_index]
        assert chunk.start_index > previous, "chunks run in document order"
        previous = chunk.start_index
        covered[chunk.start_index : chunk.end_index] = True
    missed = [i for i in np.flatnonzero(~covered) if not text[i].isspace()]
    assert not missed, f"{len(missed)} non-space characters in no chunk, first at {missed[0]}: {text[missed[0]]!r}"
    if contiguous:
        assert chunks[0].start_index == 0 and chunks[-1].end_index == len(text)
        assert all(a.end_index == b.start_index for a, b in pairwise(chunks))


# --------------------------------------------------------------------------- token, sentence, recursive


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.stem)
def test_token_chunks_are_exact_windows_of_at_most_chunk_size_tokens(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    strategy = ChonkieToken(ChonkieTokenParams(chunk_size=256, chunk_overlap=32))
    chunks = strategy.chunk(document(text))
    assert_exact(text, chunks)
    assert max(chunk.token_count for chunk in chunks) <= 256
    # All but the last window are full, and each repeats the end of the one before (the overlap).
    assert all(chunk.token_count >= 250 for chunk in chunks[:-1])
    assert all(b.start_index < a.end_index for a, b in pairwise(chunks))
    details = strategy.run_details()
    assert details == {"library": "chonkie", "library_version": library_version("chonkie"), "text_differed": 0}


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.stem)
def test_sentence_chunks_are_exact_and_end_at_sentence_ends(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    strategy = ChonkieSentence(ChonkieSentenceParams(chunk_size=300))
    chunks = strategy.chunk(document(text))
    assert_exact(text, chunks)
    assert strategy.run_details()["text_differed"] == 0
    # A chunk ends with a sentence delimiter (or the text's end), unless one sentence alone is over the size.
    ends = [chunk for chunk in chunks[:-1] if chunk.token_count <= 300]
    assert ends and all(chunk.text.endswith((".", "!", "?", "\n", ". ", "! ", "? ")) for chunk in ends)


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.stem)
def test_recursive_chunks_are_exact_contiguous_and_within_chunk_size(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    small = ChonkieRecursive(ChonkieRecursiveParams(chunk_size=128)).chunk(document(text))
    large = ChonkieRecursive(ChonkieRecursiveParams(chunk_size=512)).chunk(document(text))
    for chunks, size in ((small, 128), (large, 512)):
        assert_exact(text, chunks, contiguous=True)
        assert max(chunk.token_count for chunk in chunks) <= size
    assert len(small) > 2 * len(large)


MULTI_BYTE = (
    "这是一个测试句子，用于检查分块器。今天天气很好！我们去公园散步吧？" * 120
    + "من می\u200cخواهم کتاب\u200cها را بخوانم. نرخ رشد ۲.۵ درصد بود؟ " * 60
    + "Hello 👋🏽 world 🌍🌏 — naïve café 日本語テキスト. " * 60
)


def test_token_windows_that_split_a_character_keep_exact_offsets() -> None:
    # cl100k splits CJK characters and emoji across tokens: chonkie's own decoded windows would hold U+FFFD and
    # drift from the source; the windows are read from the source at their tokens' character offsets instead.
    for overlap in (0, 7):
        chunks = ChonkieToken(ChonkieTokenParams(chunk_size=37, chunk_overlap=overlap)).chunk(document(MULTI_BYTE))
        assert_exact(MULTI_BYTE, chunks, contiguous=overlap == 0)
        assert "\ufffd" not in "".join(chunk.text for chunk in chunks)
        # A character split between two windows goes whole to the later one: it may add a token there.
        assert max(chunk.token_count for chunk in chunks) <= 37 + 2


def test_recursive_chunks_of_unspaced_text_stay_in_place() -> None:
    chunks = ChonkieRecursive(ChonkieRecursiveParams(chunk_size=40)).chunk(document(MULTI_BYTE))
    # In order and exact, each at its own repeat of the text: a piece found at an earlier repeat would break order.
    for index, chunk in enumerate(chunks):
        assert chunk.text == MULTI_BYTE[chunk.start_index : chunk.end_index]
        assert index == 0 or chunk.start_index >= chunks[index - 1].end_index
    covered = sum(chunk.end_index - chunk.start_index for chunk in chunks)
    # Only characters split between two token windows at the last level are in no chunk (chonkie decodes each).
    assert len(MULTI_BYTE) - 100 < covered <= len(MULTI_BYTE)


def test_overlap_not_below_size_and_unknown_params_are_400s_naming_the_field() -> None:
    with pytest.raises(ValueError, match="chunk_overlap must be less than chunk_size"):
        ChonkieTokenParams(chunk_size=100, chunk_overlap=100)
    with isolated_registries():
        for cls in CLASSES:
            register_strategy(cls)
        with pytest.raises(ChunkingError, match="chunk_size") as caught:
            validate_params("chonkie_sentence", {"chunk_size": 0})
        assert caught.value.status_code == 400
        with pytest.raises(ChunkingError, match="recipe"):
            validate_params("chonkie_recursive", {"recipe": "markdown"})  # hub recipes are not offered
        with pytest.raises(ChunkingError, match="delim"):
            validate_params("chonkie_sentence", {"delim": [". ", ""]})
        assert validate_params("chonkie_sentence", {"delim": ["。"]}).delim == ["。"]
        with pytest.raises(ChunkingError, match="filter_polyorder"):
            validate_params("chonkie_semantic", {"filter_window": 3, "filter_polyorder": 3})


# --------------------------------------------------------------------------- semantic


class CountingBoundary:
    """The real MiniLM Boundary embedder, counting the texts it is asked to embed."""

    def __init__(self, settings: Settings) -> None:
        self._real = boundary_embedder(get_spec("all-MiniLM-L6-v2"), 0.5, settings)
        self.model_id = self._real.model_id
        self.threshold = self._real.threshold
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self._real.embed(texts)


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> CountingBoundary:
    # One data directory for the module: the second threshold reads the embeddings the first one cached.
    return CountingBoundary(Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("data")))


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.stem)
@pytest.mark.model
def test_semantic_chunks_are_exact_and_move_with_the_threshold(path: Path, minilm: CountingBoundary) -> None:
    text = path.read_text(encoding="utf-8")[:SEMANTIC_PREFIX]
    before = minilm.texts
    loose = ChonkieSemantic(ChonkieSemanticParams(threshold=0.5), boundary=minilm).chunk(document(text))
    assert minilm.texts > before + 20, "the sentences were embedded by the Boundary model"
    strict = ChonkieSemantic(ChonkieSemanticParams(threshold=0.8), boundary=minilm).chunk(document(text))
    for chunks in (loose, strict):
        assert_exact(text, chunks)
        assert max(chunk.token_count for chunk in chunks) <= 512
    # A higher similarity threshold cuts more often, at cuts the lower one did not make.
    assert len(strict) > len(loose)
    assert {c.start_index for c in strict} - {c.start_index for c in loose}


def test_semantic_needs_the_boundary_model() -> None:
    with pytest.raises(ChunkingError, match="needs Boundary model embeddings"):
        ChonkieSemantic(ChonkieSemanticParams())


# --------------------------------------------------------------------------- code


def top_level_definitions(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the module's functions and classes, decorators included (Python's ast)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            spans.append((starts[first - 1], starts[node.end_lineno]))
    return spans


def assert_definitions_whole(text: str, chunks: list[Chunk], definitions: list[tuple[int, int]], size: int) -> None:
    """No chunk boundary falls inside a definition that fits in half the chunk size (a larger one may be split)."""
    cuts = {chunk.start_index for chunk in chunks[1:]}
    small = [(s, e) for s, e in definitions if get_tokenizer().count(text[s:e]) <= size // 2]
    assert len(small) >= 2, "the source has small definitions to keep whole"
    split = [text[s:e].split("\n")[0] for s, e in small if any(s < cut < e for cut in cuts)]
    assert not split, f"definitions cut through: {split}"
    assert cuts & {s for s, _ in definitions}, "some chunks start at a definition"


@pytest.mark.parametrize(
    "source",
    ["src/chunkbench/chunking/library_strategies.py", "src/chunkbench/chunking/base.py"],
    ids=lambda s: Path(s).name,
)
def test_code_chunks_python_exactly_between_definitions(source: str) -> None:
    text = (ROOT / source).read_text(encoding="utf-8")
    assert any(ord(ch) > 127 for ch in text), "the source holds multi-byte characters (byte offsets converted)"
    strategy = ChonkieCode(ChonkieCodeParams(chunk_size=256))  # the language from the name's suffix
    chunks = strategy.chunk(document(text, Path(source).name))
    assert_exact(text, chunks, contiguous=True)
    assert strategy.run_details()["text_differed"] == 0, "chonkie's offsets, converted to characters, were exact"
    assert len(chunks) > 5
    assert_definitions_whole(text, chunks, top_level_definitions(text), 256)


def test_code_chunks_javascript_between_its_declarations() -> None:
    from tree_sitter import Parser

    path = ROOT / "src/chunkbench/web/static/api.js"
    text = path.read_text(encoding="utf-8")
    chunks = ChonkieCode(ChonkieCodeParams(chunk_size=128, language="javascript")).chunk(document(text, "api"))
    assert_exact(text, chunks, contiguous=True)
    data = text.encode("utf-8")
    characters = _characters_before(text)
    tree = Parser(grammar("javascript")).parse(data)
    declarations = [
        (int(characters[node.start_byte]), int(characters[node.end_byte]))
        for node in tree.root_node.children
        if node.type in {"function_declaration", "class_declaration", "lexical_declaration", "export_statement"}
    ]
    assert_definitions_whole(text, chunks, declarations, 128)


def test_byte_offsets_become_character_offsets() -> None:
    text = "ماده ۵: a\u200cb — ok"
    characters = _characters_before(text)
    for index in range(len(text) + 1):
        assert characters[len(text[:index].encode("utf-8"))] == index


@pytest.fixture
def grammar_folder(tmp_path: Path) -> Iterator[Path]:
    """A fresh grammar folder for the pack, the default one restored afterwards."""
    yield grammars.use_folder(tmp_path / "grammars")
    grammars.use_folder()


def test_grammar_built_from_the_wheel_into_an_empty_folder(grammar_folder: Path) -> None:
    import tree_sitter_language_pack as pack

    assert pack.downloaded_languages() == []
    text = (ROOT / "src/chunkbench/chunking/entry_points.py").read_text(encoding="utf-8")
    chunks = ChonkieCode(ChonkieCodeParams(chunk_size=200)).chunk(document(text, "entry_points.py"))
    assert_exact(text, chunks, contiguous=True)
    assert (grammar_folder / "libtree_sitter_python.so").is_file()
    assert pack.downloaded_languages() == ["python"]


def test_every_shipped_grammar_wheel_runs_the_code_chunker(grammar_folder: Path) -> None:
    import tree_sitter_language_pack as pack

    shipped = grammars.shipped_languages()
    assert {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "csharp", "cpp"} <= set(shipped)
    text = "first = 1\n" * 40 + "second = 2\n" * 40
    for language in shipped:
        chunks = ChonkieCode(ChonkieCodeParams(chunk_size=16, language=language)).chunk(document(text, "x"))
        assert len(chunks) > 3, language
        assert_exact(text, chunks, contiguous=True)
    assert set(shipped) <= set(pack.downloaded_languages())


def test_no_c_compiler_is_a_400_naming_the_compiler_and_the_download(
    grammar_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MissingGrammarError) as caught:
        ChonkieCode(ChonkieCodeParams(language="go")).chunk(document("package main\n\nfunc main() {}\n", "m.go"))
    assert caught.value.status_code == 400
    assert "apt-get install gcc" in caught.value.message
    assert """python -c "import tree_sitter_language_pack as t; t.download(['go'])\"""" in caught.value.message
    assert not list(grammar_folder.iterdir()), "nothing half-built is left"


def test_language_without_a_grammar_wheel_names_the_download_command(grammar_folder: Path) -> None:
    with pytest.raises(MissingGrammarError) as caught:
        ChonkieCode(ChonkieCodeParams()).chunk(document('main = putStrLn "hi"\n', "Main.hs"))
    message = caught.value.message
    assert caught.value.status_code == 400 and caught.value.code == "missing_grammar"
    assert """python -c "import tree_sitter_language_pack as t; t.download(['haskell'])\"""" in message
    assert "python" in message and "go" in message, "the languages that work are listed"


def test_unknown_file_suffix_asks_for_the_language_parameter() -> None:
    with pytest.raises(ChunkingError, match="set the 'language' parameter"):
        ChonkieCode(ChonkieCodeParams()).chunk(document("some text", "notes.unknownsuffix"))


# --------------------------------------------------------------------------- registration and availability


def test_entry_points_name_these_classes_with_their_library() -> None:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    entries = {k: v for k, v in table["entry-points"]["chunkbench.strategies"].items() if k.startswith("chonkie")}
    assert set(entries) == {cls.name for cls in CLASSES}
    assert table["optional-dependencies"]["chonkie"] == ["chonkie[semantic,code]>=1.5"]
    for name, value in entries.items():
        module, attribute = value.split(":")
        cls = getattr(importlib.import_module(module), attribute)
        check_strategy(cls)
        assert cls.name == name and cls.library == "chonkie" and cls.extra == "chonkie"
        assert cls.description.endswith(".") and cls.size_params == {"chunk_size": 0}
        assert all(field.description for field in cls.params_model.model_fields.values())
        assert info(cls).available and info(cls).install == "pip install 'chunkbench[chonkie]'"
    with isolated_registries():
        register_strategy(ChonkieToken)
        assert strategy_class("chonkie_token") is ChonkieToken
        assert ChonkieToken.expands_neighbours and not ChonkieToken.in_default_set


@pytest.mark.parametrize("missing", ["chonkie", "tree_sitter_language_pack"])
def test_missing_library_is_a_400_naming_the_extra(missing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # sys.modules[name] = None is how Python marks a module as not importable: find_spec and import both fail.
    monkeypatch.setitem(sys.modules, missing, None)
    affected = [cls for cls in CLASSES if missing in cls.modules]
    assert affected
    for cls in affected:
        assert not info(cls).available
        with pytest.raises(MissingExtraError) as caught:
            cls()
        assert caught.value.status_code == 400
        assert "pip install 'chunkbench[chonkie]'" in caught.value.message
    if missing == "tree_sitter_language_pack":
        assert info(ChonkieToken).available, "the other chonkie strategies still run"


# --------------------------------------------------------------------------- end to end


@pytest.mark.model
def test_processing_a_source_file_with_chonkie_code_and_token_through_the_app(client) -> None:
    source = (ROOT / "src/chunkbench/chunking/entry_points.py").read_text(encoding="utf-8")
    with isolated_registries():
        for cls in (ChonkieCode, ChonkieToken):
            register_strategy(cls)
        uploaded = client.post("/documents", files={"file": ("entry_points.py", source.encode())})
        assert uploaded.status_code == 201, uploaded.text
        document_id = uploaded.json()["document"]["id"]
        response = client.post(
            f"/documents/{document_id}/process",
            params={"wait": "true"},
            json={
                "strategies": ["chonkie_code", "chonkie_token"],
                "params": {"chonkie_code": {"chunk_size": 200}, "chonkie_token": {"chunk_size": 100}},
            },
        )
        assert response.status_code == 200, response.text
        assert response.json()["failed"] == []
        for strategy in ("chonkie_code", "chonkie_token"):
            preview = client.get(f"/admin/chunks/{document_id}", params={"strategy": strategy, "limit": 1000})
            assert preview.status_code == 200, preview.text
            chunks = preview.json()["chunks"]
            assert len(chunks) > 2
            assert all(source[c["start_index"] : c["end_index"]] == c["text"] for c in chunks)
        refused = client.post(
            f"/documents/{document_id}/process",
            params={"wait": "true"},
            json={"strategies": ["chonkie_code"], "params": {"chonkie_code": {"recipe": "x"}}},
        )
        assert refused.status_code == 400 and "recipe" in refused.text


def test_a_grammar_the_pack_downloaded_itself_is_linked_not_rebuilt(grammar_folder: Path, tmp_path: Path) -> None:
    """In a fresh process whose pack cache is ``tmp_path``: a grammar library already in the pack's own folder (as
    ``t.download`` leaves it; here one built from the wheel) is linked into chunkbench's folder, and used."""
    import os
    import subprocess

    import tree_sitter_language_pack as pack

    grammars.ensure("python", strategy="chonkie_code")  # a real grammar library, in this test's folder
    own = tmp_path / "cache" / "tree-sitter-language-pack" / f"v{pack.__version__}" / "libs"
    own.mkdir(parents=True)
    (own / "libtree_sitter_python.so").write_bytes((grammar_folder / "libtree_sitter_python.so").read_bytes())
    script = (
        "from chunkbench.chunking.adapters import grammars\n"
        "from chunkbench.chunking.adapters.chonkie import ChonkieCode\n"
        "from chunkbench.chunking.base import ChunkingInput\n"
        "from chunkbench.models import DocumentTree, NodeType, TreeNode\n"
        "text = 'def f():\\n    return 1\\n\\n\\ndef g():\\n    return 2\\n'\n"
        "tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))\n"
        "chunks = ChonkieCode().chunk(ChunkingInput('d', 'm.py', text, tree))\n"
        "linked = grammars.folder() / 'libtree_sitter_python.so'\n"
        "print(len(chunks), linked.is_symlink(), linked.resolve())\n"
    )
    env = {**os.environ, "TREE_SITTER_LANGUAGE_PACK_CACHE_DIR": str(tmp_path / "cache"), "PATH": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, is_link, target = done.stdout.split()
    assert int(count) >= 1 and is_link == "True"  # no compiler on PATH: linked, not built
    assert Path(target) == (own / "libtree_sitter_python.so").resolve()
