"""The LlamaIndex adapters on Chroma's five corpora: exact offsets, sizes, the Boundary model, no network."""

from __future__ import annotations

import socket
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from itertools import pairwise
from pathlib import Path

import pytest

from chunkbench.chunking import entry_points
from chunkbench.chunking.adapters.llamaindex import (
    LlamaIndexMarkdown,
    LlamaIndexSemantic,
    LlamaIndexSemanticParams,
    LlamaIndexSentence,
    LlamaIndexSentenceParams,
)
from chunkbench.chunking.base import Chunk, ChunkingInput, register_strategy, validate_params
from chunkbench.chunking.library_strategies import info
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import boundary_embedder
from chunkbench.errors import ChunkingError, MissingExtraError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries
from chunkbench.text.tokens import get_tokenizer

CORPORA = sorted((DEFAULT_CHROMA_DIR / "corpora").glob("*.md"))
STRATEGIES = (LlamaIndexSentence, LlamaIndexSemantic, LlamaIndexMarkdown)
# The semantic splitter embeds every sentence (three times, with buffer_size=1): a slice of each corpus is enough.
SEMANTIC_SLICE = 20_000

pytestmark = pytest.mark.skipif(len(CORPORA) != 5, reason=f"Chroma's five corpora are not in {DEFAULT_CHROMA_DIR}")


@pytest.fixture(scope="module", autouse=True)
def _registered() -> Iterator[None]:
    """The adapters registered as their entry points would register them, undone after the module."""
    with isolated_registries():
        for cls in STRATEGIES:
            register_strategy(cls)
        yield


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with sockets beyond this machine refused: a download attempt fails the test."""
    real_connect = socket.socket.connect

    def refuse(sock: socket.socket, address: object) -> None:
        # Loopback stays open: the test database may be a local PostgreSQL server.
        host = address[0] if isinstance(address, tuple) else None
        if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network access attempted during a test: {address!r}")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_the_network_is_refused_in_these_tests() -> None:
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("203.0.113.7", 443), timeout=1)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> list[ChunkingInput]:
    """Chroma's corpora parsed by chunkbench, as production chunks them."""
    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("parse"))
    parsed = [(path, parse_document(path, settings)) for path in CORPORA]
    return [ChunkingInput(path.stem, path.name, result.markdown, result.tree) for path, result in parsed]


def plain(text: str, name: str = "sample") -> ChunkingInput:
    tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))
    return ChunkingInput(name, f"{name}.md", text, tree)


def assert_exact_in_order(document: ChunkingInput, chunks: list[Chunk], *, overlapping: bool = False) -> None:
    """Every chunk is the markdown at its offsets, chunks run in order, and every non-space character is in one."""
    markdown = document.markdown
    assert chunks, document.document_name
    covered = bytearray(len(markdown))
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_index == index
        assert chunk.text == markdown[chunk.start_index : chunk.end_index]
        assert chunk.text.strip()
        covered[chunk.start_index : chunk.end_index] = b"\1" * len(chunk.text)
    for before, after in pairwise(chunks):
        assert before.start_index < after.start_index
        if not overlapping:
            assert before.end_index <= after.start_index
    missed = [char for char, seen in zip(markdown, covered, strict=True) if not seen and not char.isspace()]
    assert missed == [], f"{document.document_name}: {len(missed)} characters in no chunk"


# --------------------------------------------------------------------------- SentenceSplitter


@pytest.mark.parametrize(("chunk_size", "chunk_overlap"), [(256, 32), (1024, 200)])
def test_sentence_splitter_chunks_are_exact_and_within_chunk_size(
    corpora: list[ChunkingInput], chunk_size: int, chunk_overlap: int
) -> None:
    params = LlamaIndexSentenceParams(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    tokenizer = get_tokenizer()
    for document in corpora:
        strategy = LlamaIndexSentence(params)
        chunks = strategy.chunk(document)
        assert_exact_in_order(document, chunks, overlapping=True)
        # LlamaIndex counts with the cl100k tokenizer it is given: every chunk fits, recounted whole.
        assert max(tokenizer.count(chunk.text) for chunk in chunks) <= chunk_size
        # Most chunks are filled close to the limit: the size is really the one given, not LlamaIndex's default.
        assert sorted(c.token_count for c in chunks)[len(chunks) // 2] > chunk_size // 2
        details = strategy.run_details()
        assert details["library"] == "llama-index-core" and details["library_version"]
        assert details["text_differed"] == 0  # LlamaIndex strips chunks, never rewrites them
        assert all(chunk.text == chunk.text.strip() for chunk in chunks)


def test_sentence_splitter_overlap_repeats_the_end_of_the_previous_chunk(corpora: list[ChunkingInput]) -> None:
    document = next(d for d in corpora if d.document_name == "state_of_the_union.md")
    without = LlamaIndexSentence(LlamaIndexSentenceParams(chunk_size=200, chunk_overlap=0)).chunk(document)
    overlapped = LlamaIndexSentence(LlamaIndexSentenceParams(chunk_size=200, chunk_overlap=60)).chunk(document)
    assert all(a.end_index <= b.start_index for a, b in pairwise(without))
    shared = [a.end_index - b.start_index for a, b in pairwise(overlapped)]
    assert sum(1 for length in shared if length > 0) > len(shared) // 2
    assert len(overlapped) > len(without)


def test_paragraph_separator_is_the_first_cut(capsys: pytest.CaptureFixture[str]) -> None:
    # 9, 7 and 4 cl100k tokens: no two paragraphs fit in 10, each one does, so each is a chunk of its own.
    text = "Alpha one. Alpha two. Alpha three.@@Beta one. Beta two.@@Gamma one."
    chunks = LlamaIndexSentence(
        LlamaIndexSentenceParams(chunk_size=10, chunk_overlap=0, paragraph_separator="@@")
    ).chunk(plain(text))
    assert [chunk.text for chunk in chunks] == [
        "Alpha one. Alpha two. Alpha three.",
        "@@Beta one. Beta two.",
        "@@Gamma one.",
    ]
    # LlamaIndex's node path prints a notice to stdout under 50 tokens: it would land in the CLI's JSON output.
    assert capsys.readouterr().out == ""


def test_a_chunk_size_below_one_character_is_a_typed_error() -> None:
    # One CJK character is several cl100k tokens here: LlamaIndex cannot cut below it.
    with pytest.raises(ChunkingError, match="Raise chunk_size"):
        LlamaIndexSentence(LlamaIndexSentenceParams(chunk_size=1, chunk_overlap=0)).chunk(plain("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 鬱 鬱"))


def test_parameters_are_validated_with_the_field_named() -> None:
    with pytest.raises(ChunkingError, match=r"chunk_overlap \(200\) must be less than chunk_size \(100\)"):
        validate_params("llamaindex_sentence", {"chunk_size": 100})
    with pytest.raises(ChunkingError, match="breakpoint_percentile_threshold"):
        validate_params("llamaindex_semantic", {"breakpoint_percentile_threshold": 101})
    with pytest.raises(ChunkingError, match="header_path_separator"):
        validate_params("llamaindex_markdown", {"header_path_separator": "/"})


# --------------------------------------------------------------------------- SemanticSplitterNodeParser


class CountingBoundary:
    """The production Boundary embedder (bundled MiniLM), counting the texts it is asked to embed."""

    def __init__(self, data_dir: Path) -> None:
        settings = Settings(_env_file=None, data_dir=data_dir)
        self._embedder = boundary_embedder(get_spec("all-MiniLM-L6-v2"), 0.3, settings)
        self.model_id = self._embedder.model_id
        self.threshold = self._embedder.threshold
        self.texts = 0

    def embed(self, texts: list[str]):
        self.texts += len(texts)
        return self._embedder.embed(texts)


@pytest.mark.model
def test_semantic_splitter_cuts_with_the_boundary_model(corpora: list[ChunkingInput], tmp_path: Path) -> None:
    boundary = CountingBoundary(tmp_path)
    for corpus in corpora:
        document = plain(corpus.markdown[:SEMANTIC_SLICE], corpus.document_id)
        before = boundary.texts
        cuts = {}
        for threshold in (95, 70):
            params = LlamaIndexSemanticParams(breakpoint_percentile_threshold=threshold)
            strategy = LlamaIndexSemantic(params, boundary=boundary)
            chunks = strategy.chunk(document)
            assert_exact_in_order(document, chunks)
            details = strategy.run_details()
            assert details["boundary_model_id"] == "all-MiniLM-L6-v2" and details["text_differed"] == 0
            cuts[threshold] = {chunk.start_index for chunk in chunks}
        # Every sentence group went through MiniLM, once per run.
        assert boundary.texts - before > 2 * 50
        # A lower percentile is a lower distance threshold: it keeps every cut and adds some.
        assert cuts[95] < cuts[70], corpus.document_name


def test_semantic_splitter_needs_the_boundary_model() -> None:
    with pytest.raises(ChunkingError, match="needs Boundary model embeddings"):
        LlamaIndexSemantic(LlamaIndexSemanticParams())


# --------------------------------------------------------------------------- MarkdownNodeParser


def test_markdown_parser_gives_one_chunk_per_header_section(tmp_path: Path) -> None:
    source = tmp_path / "guide.md"
    source.write_text(
        "# Guide\n\nIntro text.\n\n## Install\n\nRun the installer.\n\n```sh\n# not a header\nmake\n```\n\n"
        "## Use\n\nOpen the app.\n",
        encoding="utf-8",
    )
    result = parse_document(source, Settings(_env_file=None, data_dir=tmp_path / "data"))
    document = ChunkingInput("guide", "guide.md", result.markdown, result.tree)
    strategy = LlamaIndexMarkdown()
    chunks = strategy.chunk(document)
    assert_exact_in_order(document, chunks)
    assert [chunk.text.splitlines()[0] for chunk in chunks] == ["# Guide", "## Install", "## Use"]
    assert "# not a header" in chunks[1].text  # a '#' line inside a code fence starts no section
    assert [chunk.heading_path for chunk in chunks] == [["Guide"], ["Guide", "Install"], ["Guide", "Use"]]
    assert strategy.run_details()["text_differed"] == 0


def test_markdown_parser_rewritten_header_is_mapped_back_and_counted() -> None:
    # MarkdownNodeParser writes a header back as '#' * level + ' ' + its text: a tab after the marks is lost.
    document = plain("#\tFirst\nSome text.\n\n## Second\nMore text.")
    strategy = LlamaIndexMarkdown()
    chunks = strategy.chunk(document)
    assert [(chunk.start_index, chunk.end_index) for chunk in chunks] == [(0, 18), (20, 40)]
    assert chunks[0].text == "#\tFirst\nSome text."
    assert strategy.run_details()["text_differed"] == 1


def test_markdown_parser_on_the_corpora_keeps_every_character(corpora: list[ChunkingInput]) -> None:
    for document in corpora:
        assert_exact_in_order(document, LlamaIndexMarkdown().chunk(document))


# --------------------------------------------------------------------------- through the API


@pytest.mark.model
def test_processed_through_the_api_into_exact_indexed_chunks(client, corpora: list[ChunkingInput]) -> None:
    text = next(d for d in corpora if d.document_name == "state_of_the_union.md").markdown[:SEMANTIC_SLICE]
    upload = client.post("/documents", files={"file": ("speech.md", text.encode())})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["document"]["id"]
    body = {
        "strategies": ["llamaindex_sentence", "llamaindex_semantic"],
        "params": {"llamaindex_sentence": {"chunk_size": 128, "chunk_overlap": 16}},
    }
    response = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["failed"] == [] and response.json()["status"] == "indexed"
    markdown = client.get(f"/documents/{document_id}/markdown").text
    for strategy in ("llamaindex_sentence", "llamaindex_semantic"):
        preview = client.get(f"/admin/chunks/{document_id}", params={"strategy": strategy, "limit": 1000}).json()
        assert len(preview["chunks"]) > 3, strategy
        for chunk in preview["chunks"]:
            assert markdown[chunk["start_index"] : chunk["end_index"]] == chunk["text"]
        assert preview["run"]["details"]["library"] == "llama-index-core"
    # The processing service handed the semantic splitter its Boundary model.
    semantic = client.get(f"/admin/chunks/{document_id}", params={"strategy": "llamaindex_semantic"}).json()
    assert semantic["run"]["details"]["boundary_model_id"] == "all-MiniLM-L6-v2"


# --------------------------------------------------------------------------- listing


def test_an_empty_document_has_no_chunks_and_embeds_nothing(tmp_path: Path) -> None:
    boundary = CountingBoundary(tmp_path)
    for text in ("", "  \n\n "):
        document = plain(text)
        assert LlamaIndexSentence().chunk(document) == []
        assert LlamaIndexSemantic(boundary=boundary).chunk(document) == []
        assert LlamaIndexMarkdown().chunk(document) == []
    assert boundary.texts == 0


def test_a_missing_library_is_a_400_naming_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index", None)  # not importable, as without the extra
    for cls in STRATEGIES:
        with pytest.raises(MissingExtraError) as raised:
            cls(boundary=None)
        assert raised.value.status_code == 400
        assert "Install it with: pip install 'chunkbench[llamaindex]'" in raised.value.message


def test_the_entry_points_declared_in_pyproject_load_these_classes() -> None:
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    table = declared["project"]["entry-points"]["chunkbench.strategies"]
    for cls in STRATEGIES:
        entry = metadata.EntryPoint(str(cls.name), table[str(cls.name)], entry_points.GROUP)
        with isolated_registries():
            # The loader's own checks: a concrete strategy whose name is the entry point's.
            assert entry_points._load_one(entry) == cls.name
        assert entry.load() is cls


def test_listing_names_the_library_and_its_install_command() -> None:
    for cls in STRATEGIES:
        listed = info(cls)
        assert listed is not None and listed.available
        assert listed.library == "llama-index-core"
        assert listed.install == "pip install 'chunkbench[llamaindex]'"
    assert LlamaIndexSentence.size_params == {"chunk_size": 0}
    assert LlamaIndexSemantic.needs_boundary and not LlamaIndexSentence.needs_boundary
