"""The LangChain, semchunk and semantic-text-splitter strategies (chunking/adapters/): exact spans of the markdown
on Chroma's five corpora, the same chunks as the libraries themselves, their parameters, and a missing library."""

from __future__ import annotations

import csv
import itertools
import re
import shutil
import socket
import tomllib
from importlib import import_module
from pathlib import Path

import pytest
import semantic_text_splitter
import semchunk
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

from chunkbench.benchmarking.chroma_reproduction import reproduce
from chunkbench.chunking.adapters.langchain import LangChainMarkdownHeader, LangChainRecursive, LangChainToken
from chunkbench.chunking.adapters.semchunk import Semchunk
from chunkbench.chunking.adapters.text_splitter import MarkdownSplitter, TextSplitter
from chunkbench.chunking.base import (
    Chunk,
    ChunkingInput,
    check_strategy,
    register_strategy,
    validate_params,
)
from chunkbench.chunking.library_strategies import LibraryStrategy, count_tokens, info
from chunkbench.chunking.strategies.fixed_size import FixedSizeStrategy
from chunkbench.errors import ChunkingError, MissingExtraError
from chunkbench.evaluation.chroma import CHROMA_CONFIGS, CHROMA_SEPARATORS, load_chroma, published_rows, select_configs
from chunkbench.evaluation.datasets import load_corpora
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS: list[type[LibraryStrategy]] = [
    LangChainRecursive,
    LangChainToken,
    LangChainMarkdownHeader,
    Semchunk,
    TextSplitter,
    MarkdownSplitter,
]
# At Chroma's 250-token size; markdown-header keeps sections whole (Chroma's corpora have almost no headings).
SIZED = {
    "langchain_recursive": {"chunk_size": 250, "chunk_overlap": 0, "separators": CHROMA_SEPARATORS},
    "langchain_token": {"chunk_size": 250, "chunk_overlap": 0},
    "langchain_markdown_header": {"chunk_size": 250},
    "semchunk": {"chunk_size": 250},
    "text_splitter": {"capacity": 250},
    "text_splitter_markdown": {"capacity": 250},
}
# Text where byte and character offsets part, and a cl100k token ends inside a character.
NON_ASCII = (
    "# گزارش سالانه\n\nاین یک متن فارسی است با نیم‌فاصله، و اعداد ۲.۵ و ۱۴۰۲. 🚀🚀 Émigré café naïve — “quoted”.\n\n"
    "## بخش دوم\n\nجمله‌ای دیگر برای آزمون. 日本語のテキストも少し。 Ещё один текст на русском языке.\n"
) * 6


def _document(text: str, name: str = "doc.md") -> ChunkingInput:
    root = TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text))
    return ChunkingInput(name, name, text, DocumentTree(root=root))


def _strategy(cls: type[LibraryStrategy], **params: object) -> LibraryStrategy:
    return cls(cls.params_model(**params))


def _assert_exact_spans(chunks: list[Chunk], markdown: str) -> None:
    assert chunks, "no chunks"
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_index == index
        assert 0 <= chunk.start_index < chunk.end_index <= len(markdown)
        assert chunk.text == markdown[chunk.start_index : chunk.end_index]
        assert chunk.text.strip()
    starts = [c.start_index for c in chunks]
    assert starts == sorted(starts), "chunks out of document order"


def _uncovered(chunks: list[Chunk], markdown: str) -> str:
    """The non-space characters of ``markdown`` no chunk covers."""
    covered = bytearray(len(markdown))
    for chunk in chunks:
        covered[chunk.start_index : chunk.end_index] = b"\x01" * (chunk.end_index - chunk.start_index)
    return "".join(ch for ch, hit in zip(markdown, covered, strict=True) if not hit and not ch.isspace())


@pytest.fixture(scope="module")
def corpora() -> dict[str, str]:
    return load_corpora()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network access is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


# --------------------------------------------------------------------------- exact offsets on Chroma's corpora


@pytest.mark.parametrize("cls", ADAPTERS, ids=lambda cls: cls.name)
def test_chunks_are_exact_spans_in_order_covering_the_text(cls, corpora, no_network) -> None:
    assert set(corpora) == {"chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts"}
    for name, markdown in corpora.items():
        strategy = _strategy(cls, **SIZED[cls.name])
        chunks = strategy.chunk(_document(markdown, f"{name}.md"))
        _assert_exact_spans(chunks, markdown)
        details = strategy.run_details()
        assert details["library"] == cls.library and details["library_version"]
        if cls is LangChainMarkdownHeader:
            # A section's lines re-joined with "  \n" differ from the markdown (counted in text_differed, tested
            # below); split at 250 tokens, a chunk's span may hold a few more tokens than its rewritten text.
            assert all(count_tokens(c.text) <= 250 + 8 for c in chunks)
        else:
            # The others hand back the markdown's own text: nothing rewritten, every piece found as it is.
            assert details["text_differed"] == 0, name
        # Only whitespace falls between chunks (and heading lines, which Chroma's corpora do not have).
        assert _uncovered(chunks, markdown) == "", (cls.name, name)


@pytest.mark.parametrize("cls", ADAPTERS, ids=lambda cls: cls.name)
def test_non_ascii_text_keeps_exact_offsets(cls, no_network) -> None:
    strategy = _strategy(cls, **{**SIZED[cls.name], **_small(cls)})
    chunks = strategy.chunk(_document(NON_ASCII))
    _assert_exact_spans(chunks, NON_ASCII)
    assert len(chunks) > 3
    if cls is LangChainMarkdownHeader:
        assert strategy.run_details()["text_differed"] > 0
        assert "# گزارش سالانه" not in "".join(c.text for c in chunks)  # strip_headers
    else:
        assert strategy.run_details()["text_differed"] == 0
        assert _uncovered(chunks, NON_ASCII) == ""


def _small(cls: type[LibraryStrategy]) -> dict[str, int]:
    return {"capacity": 20} if "capacity" in cls.params_model.model_fields else {"chunk_size": 20}


# --------------------------------------------------------------------------- the same chunks as the libraries


def test_recursive_gives_langchains_own_chunks_with_chromas_separators(corpora) -> None:
    for name, markdown in corpora.items():
        ours = _strategy(LangChainRecursive, chunk_size=250, chunk_overlap=0, separators=CHROMA_SEPARATORS)
        reference = RecursiveCharacterTextSplitter(
            separators=CHROMA_SEPARATORS, chunk_size=250, chunk_overlap=0, length_function=count_tokens
        ).split_text(markdown)
        texts = [c.text for c in ours.chunk(_document(markdown))]
        assert texts == [t for t in reference if t.strip()], name
        assert max(count_tokens(t) for t in texts) <= 250


def test_recursive_in_characters_and_with_langchains_default_separators() -> None:
    markdown = load_corpora()["state_of_the_union"]
    chunks = _strategy(LangChainRecursive, chunk_size=400, chunk_overlap=80, length="characters").chunk(
        _document(markdown)
    )
    reference = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=80).split_text(markdown)
    assert [c.text for c in chunks] == reference
    assert max(len(c.text) for c in chunks) <= 400
    # chunk_overlap: consecutive chunks share text where the splits before the cut are short enough to carry over
    # (LangChain carries whole splits only); each is placed at its own occurrence, not at an earlier one.
    assert sum(b.start_index < a.end_index for a, b in itertools.pairwise(chunks)) > 10


def test_token_splitter_matches_fixed_size_and_langchains_own_windows(corpora) -> None:
    tokenizer = get_tokenizer()
    for size in (250, 200):
        for name, markdown in corpora.items():
            document = _document(markdown)
            ours = [c.text for c in _strategy(LangChainToken, chunk_size=size, chunk_overlap=0).chunk(document)]
            fixed = FixedSizeStrategy(FixedSizeStrategy.params_model(chunk_size=size, chunk_overlap=0))
            assert ours == [c.text for c in fixed.chunk(document)], (name, size)
            # LangChain's TokenTextSplitter decoding each window itself: no window of these corpora cuts a character.
            plain = split_text_on_tokens(
                text=markdown,
                tokenizer=Tokenizer(0, size, tokenizer.decode, lambda text: tokenizer.encode(text).tolist()),
            )
            assert ours == [t for t in plain if t.strip()], (name, size)


def test_token_windows_that_cut_a_character_stay_source_text() -> None:
    tokenizer = get_tokenizer()
    plain = split_text_on_tokens(
        text=NON_ASCII, tokenizer=Tokenizer(2, 7, tokenizer.decode, lambda text: tokenizer.encode(text).tolist())
    )
    # Decoding windows on their own (LangChain's TokenTextSplitter) yields text the document does not hold.
    assert any("\ufffd" in text for text in plain)
    strategy = _strategy(LangChainToken, chunk_size=7, chunk_overlap=2)
    chunks = strategy.chunk(_document(NON_ASCII))
    _assert_exact_spans(chunks, NON_ASCII)
    assert strategy.run_details()["text_differed"] == 0
    assert all(count_tokens(c.text) <= 7 + 2 for c in chunks)  # a cut character joins the window before it
    assert sum(b.start_index < a.end_index for a, b in itertools.pairwise(chunks)) > len(chunks) // 2


def test_semchunk_gives_its_own_chunks_and_offsets(corpora) -> None:
    markdown = corpora["wikitexts"]
    chunks = _strategy(Semchunk, chunk_size=250).chunk(_document(markdown))
    texts, offsets = semchunk.chunkerify(count_tokens, 250)(markdown, offsets=True)
    assert [(c.start_index, c.end_index) for c in chunks] == [tuple(o) for o in offsets]
    assert [c.text for c in chunks] == texts
    assert max(c.token_count for c in chunks) <= 250
    overlapping = _strategy(Semchunk, chunk_size=250, overlap=50).chunk(_document(markdown))
    _assert_exact_spans(overlapping, markdown)
    assert len(overlapping) > len(chunks)
    assert all(b.start_index < a.end_index for a, b in itertools.pairwise(overlapping))


@pytest.mark.parametrize("cls", [TextSplitter, MarkdownSplitter], ids=lambda cls: cls.name)
def test_text_splitter_gives_its_own_chunks_with_character_offsets(cls, corpora) -> None:
    library = getattr(semantic_text_splitter, cls.splitter_class)
    for markdown in (corpora["pubmed"], NON_ASCII):
        capacity = 250 if markdown is not NON_ASCII else 20
        chunks = _strategy(cls, capacity=capacity).chunk(_document(markdown))
        indices = library.from_callback(count_tokens, capacity).chunk_indices(markdown)
        # The library's offsets are characters: the chunks sit exactly where it said.
        assert [(c.start_index, c.text) for c in chunks] == [(start, text) for start, text in indices]
        assert max(c.token_count for c in chunks) <= capacity


def test_text_splitter_range_overlap_and_untrimmed_chunks() -> None:
    markdown = load_corpora()["chatlogs"]
    whole = _strategy(TextSplitter, capacity=200, trim=False).chunk(_document(markdown))
    # Untrimmed, the chunks tile the document (whitespace-only pieces aside).
    assert "".join(c.text for c in whole).strip() == markdown.strip()
    ranged = _strategy(TextSplitter, capacity=200, capacity_min=100, overlap=20).chunk(_document(markdown))
    _assert_exact_spans(ranged, markdown)
    assert max(c.token_count for c in ranged) <= 200
    assert any(b.start_index < a.end_index for a, b in itertools.pairwise(ranged))


# --------------------------------------------------------------------------- markdown headers


MARKDOWN = """# Guide

Intro paragraph of the guide,
on two lines.

## Install

Run the installer.

Then restart.

### Linux

Use the package manager.

#### Deep heading stays inside

Body under a level-four heading.

## Use

Open the app.
"""


def test_markdown_header_chunks_sections_and_maps_rewritten_text_back() -> None:
    strategy = _strategy(LangChainMarkdownHeader)
    chunks = strategy.chunk(_document(MARKDOWN))
    _assert_exact_spans(chunks, MARKDOWN)
    # One chunk per section of levels 1-3; "####" is not split on, so it stays in the Linux section.
    assert [c.text.splitlines()[0] for c in chunks] == [
        "Intro paragraph of the guide,",
        "Run the installer.",
        "Use the package manager.",
        "Open the app.",
    ]
    assert "#### Deep heading stays inside" in chunks[2].text
    # The library joins a section's lines with "  \n" and drops blank lines: the two sections with a blank line
    # inside differ from their spans.
    assert strategy.run_details()["text_differed"] == 2
    assert _uncovered(chunks, MARKDOWN) == "#Guide##Install###Linux##Use"

    kept = _strategy(LangChainMarkdownHeader, strip_headers=False, headers_to_split_on=["#", "##"]).chunk(
        _document(MARKDOWN)
    )
    _assert_exact_spans(kept, MARKDOWN)
    assert [c.text.splitlines()[0] for c in kept] == ["# Guide", "## Install", "## Use"]


def test_markdown_header_splits_long_sections_by_tokens(corpora) -> None:
    union, chatlogs = corpora["state_of_the_union"][:6000], corpora["chatlogs"][:3000]
    markdown = f"# Part one\n\n{union}\n\n# Part two\n\n{chatlogs}"
    chunks = _strategy(LangChainMarkdownHeader, chunk_size=120, chunk_overlap=20).chunk(_document(markdown))
    _assert_exact_spans(chunks, markdown)
    assert len(chunks) > 10
    assert max(count_tokens(c.text) for c in chunks) <= 120 + 8  # "  \n" joins may map back to a little more
    assert not any(c.text.startswith("# Part") for c in chunks)


# --------------------------------------------------------------------------- registration, parameters, missing library


def test_the_entry_points_chunkbench_declares_load_these_classes() -> None:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["chunkbench.strategies"]
    ours = {name: value for name, value in table.items() if value.startswith("chunkbench.chunking.adapters.")}
    loaded = {}
    for name, value in ours.items():
        module, attribute = value.split(":")
        cls = getattr(import_module(module), attribute)
        check_strategy(cls)
        assert cls.name == name
        loaded[name] = cls
    assert set(ADAPTERS) <= set(loaded.values())
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for cls in ADAPTERS:
        assert any(cls.library in requirement for requirement in extras[cls.extra]), cls.name
        assert cls.in_default_set is False
        assert info(cls).available
        assert cls.description and cls.library.replace("-", "_").split("_")[0] in cls.description.lower().replace(
            "-", "_"
        )


def test_capabilities_and_size_parameters() -> None:
    assert {cls.name for cls in ADAPTERS if cls.expands_neighbours} == {
        "langchain_recursive",
        "langchain_token",
        "semchunk",
        "text_splitter",
        "text_splitter_markdown",
    }
    for cls in ADAPTERS:
        for param in cls.size_params:
            assert cls.params_model.model_fields[param].annotation is int
    assert LangChainMarkdownHeader.size_params == {}


@pytest.mark.parametrize(
    ("cls", "params", "field"),
    [
        (LangChainRecursive, {"chunk_size": 100, "chunk_overlap": 100}, "chunk_overlap"),
        (LangChainRecursive, {"chunk_size": 0}, "chunk_size"),
        (LangChainRecursive, {"length": "words"}, "length"),
        (LangChainRecursive, {"separators": ["(unclosed"], "is_separator_regex": True}, "separators"),
        (LangChainRecursive, {"separators": []}, "separators"),
        (LangChainToken, {"chunk_size": 50, "chunk_overlap": 60}, "chunk_overlap"),
        (LangChainToken, {"chunk_size": 9000}, "chunk_size"),
        (LangChainMarkdownHeader, {"headers_to_split_on": ["#", "h2"]}, "headers_to_split_on"),
        (LangChainMarkdownHeader, {"chunk_overlap": 10}, "chunk_overlap"),
        (Semchunk, {"chunk_size": 100, "overlap": 100}, "overlap"),
        (Semchunk, {"chunk_sizes": 100}, "chunk_sizes"),
        (TextSplitter, {"capacity": 100, "capacity_min": 200}, "capacity_min"),
        (TextSplitter, {"capacity": 100, "overlap": 100}, "overlap"),
        (MarkdownSplitter, {"trim": "sometimes"}, "trim"),
    ],
)
def test_invalid_parameters_are_a_400_naming_the_field(cls, params, field) -> None:
    with isolated_registries():
        register_strategy(cls)
        with pytest.raises(ChunkingError) as caught:
            validate_params(cls.name, params)
    assert caught.value.status_code == 400
    assert field in caught.value.message
    assert cls.name in caught.value.message


def test_a_missing_library_is_a_400_naming_the_install_command() -> None:
    class AbsentLangChain(LangChainRecursive):
        name = "absent_langchain"
        library = "langchain-text-splitters-not-here"
        modules = ("chunkbench_no_such_library",)

    listed = info(AbsentLangChain)
    assert listed is not None and not listed.available and listed.version is None
    with pytest.raises(MissingExtraError) as caught:
        AbsentLangChain()
    error = caught.value
    assert error.status_code == 400
    assert "pip install 'chunkbench[langchain]'" in error.message
    assert "langchain-text-splitters-not-here" in error.message


# --------------------------------------------------------------------------- Chroma's rows through the adapters


def test_chroma_rows_through_the_langchain_adapters() -> None:
    folder, _corpora, _questions = load_chroma()
    published = published_rows(folder)
    names = ["langchain_token-250-0", "langchain_recursive-250-0", "langchain_token-200-0", "langchain_recursive-200-0"]
    for name in names:
        (config,) = select_configs(name)
        assert config.variant.base == name.split("-")[0]
        assert config.variant.name == re.sub(r"-", "_", name)
        assert (config.chunker, config.chunk_size, config.chunk_overlap) in published
    (recursive,) = select_configs("langchain_recursive-250-0")
    assert recursive.chunker == "RecursiveCharacterTextSplitter"
    assert recursive.params == {"chunk_size": 250, "chunk_overlap": 0, "separators": CHROMA_SEPARATORS}
    (token,) = select_configs("langchain_token-200-0")
    assert token.chunker == "TokenTextSplitter" and token.params == {"chunk_size": 200, "chunk_overlap": 0}
    # "all" stays chunkbench's own rows: the adapters' library is an optional extra.
    assert select_configs("all") == list(CHROMA_CONFIGS)
    assert not any(c.strategy.value.startswith("langchain_") for c in CHROMA_CONFIGS)


@pytest.mark.model
def test_an_adapter_row_runs_through_the_reproduction_like_its_builtin_twin(settings, tmp_path) -> None:
    """langchain_token-250-0 and fixed_size-250-0 cut the same chunks: one Experiment gives them the same figures."""
    shared, _corpora, _questions = load_chroma()
    folder = tmp_path / "chroma"
    (folder / "corpora").mkdir(parents=True)
    kept = ("chatlogs", "state_of_the_union")
    for name in kept:
        shutil.copy(shared / "corpora" / f"{name}.md", folder / "corpora")
    shutil.copy(shared / "published_results_headline.csv", folder)
    with (shared / "questions_df.csv").open(encoding="utf-8", newline="") as source:
        rows = [row for row in csv.DictReader(source) if row["corpus_id"] in kept]
    with (folder / "questions_df.csv").open("w", encoding="utf-8", newline="") as target:
        writer = csv.DictWriter(target, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)

    with isolated_registries():
        register_strategy(LangChainToken)
        database, store = Database.from_settings(settings), VectorStore(settings)
        try:
            configs = [*select_configs("fixed_size-250-0"), *select_configs("langchain_token-250-0")]
            result = reproduce(database, settings, store, configs, folder, tenant_id=DEFAULT_TENANT)
        finally:
            store.close()
            database.dispose()
    builtin, adapter = result.rows
    assert adapter["strategy"] == "langchain_token_250_0" and adapter["chunker"] == "TokenTextSplitter"
    assert adapter["published"] == builtin["published"] and adapter["published"]["recall"]["mean"] == 77.1
    assert adapter["ours"]["questions"] == len(rows) and adapter["ours"]["failed"] == 0
    for key in ("chunks", "mean_chunk_tokens", "recall", "precision", "precision_omega", "iou"):
        assert adapter["ours"][key] == builtin["ours"][key], key
