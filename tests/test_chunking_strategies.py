"""fixed_size, recursive and contextual_retrieval: exact offsets, full coverage, token limits, separators."""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench.chunking.base import Chunk, ChunkingInput, validate_params
from chunkbench.chunking.strategies.contextual_retrieval import (
    ContextualRetrievalParams,
    ContextualRetrievalStrategy,
    HeadingPathPrefixer,
)
from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import ChunkingError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, StrategyName, TreeNode
from chunkbench.text.tokens import get_tokenizer

REPO = Path(__file__).resolve().parents[1]
CORPORA = DEFAULT_CHROMA_DIR / "corpora"
CORPUS_FILES = sorted(CORPORA.glob("*.md")) if CORPORA.is_dir() else []
FEW = settings(max_examples=60, deadline=None)

_WORD = st.sampled_from(
    [
        *("the", "report", "revenue", "grew", "2.5%", "Q3.", "why?", "yes!", "گزارش", "می‌خواهم", "درآمد؟"),
        *("بله؛", "۲.۵", "👩‍💻", "🚀", "漢字かな", "x" * 40, "y" * 300, "`code()`"),
    ]
)
_SEPARATOR = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", "\t"])
_PARAGRAPH = st.lists(st.tuples(_WORD, _SEPARATOR), min_size=1, max_size=40).map(
    lambda pairs: "".join(w + s for w, s in pairs).strip()
)
_BLOCKS = st.lists(
    st.one_of(
        st.builds(lambda level, words: Block("heading", words, level), st.integers(1, 3), _PARAGRAPH),
        st.builds(lambda text: Block("paragraph", text), _PARAGRAPH),
    ),
    min_size=1,
    max_size=12,
)
# Raw text with markdown heading lines and whitespace runs, under a tree without sections.
_RAW = st.lists(
    st.one_of(_WORD, _SEPARATOR, st.sampled_from(["\n# Title\n", "\n## Sub heading\n", "\n\n\n", "# x"])),
    max_size=150,
).map("".join)
_SIZE = st.integers(4, 160)


def _document(blocks: list[Block], title: str | None = None, name: str = "doc.md") -> ChunkingInput:
    parsed = build_parse_result(blocks, title=title)
    return ChunkingInput("doc1", name, parsed.markdown, parsed.tree, title=title)


def _raw_document(text: str) -> ChunkingInput:
    root = TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text))
    return ChunkingInput("doc1", "raw.txt", text, DocumentTree(root=root))


def _corpus_document(text: str, name: str) -> ChunkingInput:
    return _document([Block("paragraph", text, markdown=text)], name=name)


def _generated_markdown() -> str:
    paragraphs = [
        f"Paragraph {i} talks about revenue of {i}.5 million. It grew fast! Did it? گزارش شماره {i}؟ بله؛ درست است."
        * (1 + i % 7)
        for i in range(120)
    ]
    return "\n\n".join(f"# Part {i // 10}\n\n{p}" if i % 10 == 0 else p for i, p in enumerate(paragraphs))


def _corpus_texts() -> list[tuple[str, str]]:
    if CORPUS_FILES:
        return [(path.name, path.read_text(encoding="utf-8")) for path in CORPUS_FILES]
    return [("generated.md", _generated_markdown())]


CORPUS_TEXTS = _corpus_texts()


def assert_valid_chunks(document: ChunkingInput, chunks: list[Chunk], size: int, strategy: StrategyName) -> None:
    """In order, exact slices, counted exactly, within ``size``, and covering every non-space character."""
    text = document.markdown
    counts = get_tokenizer().count_many([c.text for c in chunks])
    covered_to = 0
    previous = (-1, -1)
    for index, (chunk, count) in enumerate(zip(chunks, counts, strict=True)):
        assert chunk.chunk_index == index
        assert chunk.chunk_id == f"{strategy.value}_{document.document_id}_{index:06d}"
        assert chunk.strategy_name == strategy
        assert text[chunk.start_index : chunk.end_index] == chunk.text
        assert chunk.text.strip(), "a whitespace-only chunk"
        assert chunk.character_count == len(chunk.text)
        assert chunk.token_count == count <= size
        # Token windows can share a start when several tokens spell one character (emoji, CJK).
        assert chunk.start_index >= previous[0] and chunk.end_index >= previous[1], "chunks out of order"
        assert chunk.end_index > previous[1], "a chunk inside the previous one"
        if strategy != StrategyName.FIXED_SIZE:
            assert chunk.start_index > previous[0]
        assert text[covered_to : chunk.start_index].strip() == "", "non-whitespace text left out"
        previous = (chunk.start_index, chunk.end_index)
        covered_to = max(covered_to, chunk.end_index)
    assert text[covered_to:].strip() == ""


# --- fixed_size ---------------------------------------------------------------------------------------


@FEW
@given(_BLOCKS, _SIZE, st.integers(0, 60))
def test_fixed_size_properties(blocks: list[Block], size: int, overlap: int) -> None:
    document = _document(blocks)
    params = FixedSizeParams(chunk_size=size, chunk_overlap=min(overlap, size - 1))
    assert_valid_chunks(document, FixedSizeStrategy(params).chunk(document), size, StrategyName.FIXED_SIZE)


@FEW
@given(_RAW, _SIZE)
def test_fixed_size_raw_text(text: str, size: int) -> None:
    document = _raw_document(text)
    params = FixedSizeParams(chunk_size=size, chunk_overlap=size // 3)
    assert_valid_chunks(document, FixedSizeStrategy(params).chunk(document), size, StrategyName.FIXED_SIZE)


_ASCII_TEXT = st.lists(
    st.tuples(st.sampled_from(["alpha", "beta", "2.5", "x" * 30, "(", "));", "The", "end."]), st.sampled_from(" \n")),
    min_size=1,
    max_size=400,
).map(lambda pairs: "".join(w + s for w, s in pairs))


@FEW
@given(_ASCII_TEXT, st.integers(2, 64), st.integers(0, 40))
def test_fixed_size_windows_overlap_by_exactly_chunk_overlap_tokens(text: str, size: int, overlap: int) -> None:
    overlap = min(overlap, size - 1)
    document = _raw_document(text)
    chunks = FixedSizeStrategy(FixedSizeParams(chunk_size=size, chunk_overlap=overlap)).chunk(document)
    # ASCII: every token holds at least one character, so offsets map back to token positions.
    bounds = get_tokenizer().boundaries(text)[1].tolist()
    windows = [(bisect_left(bounds, c.start_index), bisect_left(bounds, c.end_index)) for c in chunks]
    assert [bounds[a] for a, _ in windows] == [c.start_index for c in chunks]
    for (a, b), (next_a, _) in pairwise(windows):
        assert b - a <= size
        assert b - next_a == overlap
    # The last window ends at the end of the text (or only whitespace windows came after it).
    assert windows[-1][1] == len(bounds) - 1 or text[chunks[-1].end_index :].isspace()
    if len(chunks) > 1:
        assert windows[0][1] - windows[0][0] >= size - 1  # full windows (less one when re-encoding grows)


def test_fixed_size_first_window_is_exact() -> None:
    text = " ".join(f"word{i}" for i in range(1000))
    chunks = FixedSizeStrategy(FixedSizeParams(chunk_size=100, chunk_overlap=10)).chunk(_raw_document(text))
    assert chunks[0].token_count == 100
    assert chunks[1].start_index < chunks[0].end_index


@pytest.mark.parametrize(("name", "text"), CORPUS_TEXTS, ids=[name for name, _ in CORPUS_TEXTS])
def test_real_documents(name: str, text: str) -> None:
    document = _corpus_document(text, name)
    fixed = FixedSizeStrategy().chunk(document)
    assert_valid_chunks(document, fixed, 512, StrategyName.FIXED_SIZE)
    recursive = RecursiveStrategy(RecursiveParams(chunk_overlap=50)).chunk(document)
    assert_valid_chunks(document, recursive, 512, StrategyName.RECURSIVE)


@FEW
@given(st.sampled_from(CORPUS_TEXTS), st.integers(0, 10**6), st.integers(200, 30_000), _SIZE, st.integers(0, 30))
def test_real_document_slices(named: tuple[str, str], offset: int, length: int, size: int, overlap: int) -> None:
    name, text = named
    offset %= max(len(text) - length, 1)
    document = _corpus_document(text[offset : offset + length], name)
    overlap = min(overlap, size - 1)
    fixed = FixedSizeStrategy(FixedSizeParams(chunk_size=size, chunk_overlap=overlap)).chunk(document)
    assert_valid_chunks(document, fixed, size, StrategyName.FIXED_SIZE)
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=size, chunk_overlap=overlap)).chunk(document)
    assert_valid_chunks(document, recursive, size, StrategyName.RECURSIVE)


# --- recursive ----------------------------------------------------------------------------------------


@FEW
@given(_BLOCKS, _SIZE, st.integers(0, 40), st.integers(0, 64))
def test_recursive_properties(blocks: list[Block], size: int, overlap: int, minimum: int) -> None:
    document = _document(blocks)
    params = RecursiveParams(chunk_size=size, chunk_overlap=min(overlap, size - 1), min_chunk_tokens=minimum)
    assert_valid_chunks(document, RecursiveStrategy(params).chunk(document), size, StrategyName.RECURSIVE)


@FEW
@given(_RAW, _SIZE, st.integers(0, 20))
def test_recursive_raw_text(text: str, size: int, overlap: int) -> None:
    document = _raw_document(text)
    params = RecursiveParams(chunk_size=size, chunk_overlap=min(overlap, size - 1))
    assert_valid_chunks(document, RecursiveStrategy(params).chunk(document), size, StrategyName.RECURSIVE)


_SENTENCE = st.lists(st.sampled_from(["revenue", "grew", "fast", "گزارش", "درآمد", "2.5", "🚀"]), min_size=3).map(
    lambda words: " ".join(words) + "."
)


@FEW
@given(st.lists(st.lists(_SENTENCE, min_size=1, max_size=4).map(" ".join), min_size=2, max_size=15))
def test_recursive_cuts_only_between_paragraphs_when_paragraphs_fit(paragraphs: list[str]) -> None:
    size = max(get_tokenizer().count_many(paragraphs)) + 5
    document = _document([Block("paragraph", p) for p in paragraphs])
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=size)).chunk(document)
    nodes = document.tree.root.children
    starts, ends = {n.start_index for n in nodes}, {n.end_index for n in nodes}
    assert all(c.start_index in starts and c.end_index in ends for c in chunks)
    assert_valid_chunks(document, chunks, size, StrategyName.RECURSIVE)


@FEW
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.lists(st.lists(_SENTENCE, min_size=1, max_size=5), min_size=1, max_size=3)),
        min_size=1,
        max_size=8,
    ),
    st.integers(40, 200),
)
def test_every_heading_starts_a_chunk(sections: list[tuple[int, list[list[str]]]], size: int) -> None:
    blocks = []
    for number, (level, paragraphs) in enumerate(sections):
        blocks.append(Block("heading", f"Heading {number}", level))
        blocks += [Block("paragraph", " ".join(sentences)) for sentences in paragraphs]
    document = _document(blocks)
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=size, chunk_overlap=10, min_chunk_tokens=0)).chunk(document)
    chunk_starts = {c.start_index for c in chunks}
    assert [m.start() for m in re.finditer("(?m)^#+ Heading", document.markdown) if m.start() not in chunk_starts] == []
    for chunk in chunks:  # a heading never sits inside a chunk
        assert "\n#" not in chunk.text


def test_short_section_joins_the_next_and_heading_paths_are_right() -> None:
    body = "Revenue grew by 2.5 percent in the third quarter of the year. " * 6
    document = _document(
        [
            Block("heading", "Finance", 1),
            Block("heading", "Revenue", 2),
            Block("paragraph", body),
            Block("heading", "Details", 3),
            Block("paragraph", body),
            Block("heading", "Costs", 2),
            Block("paragraph", body),
            Block("heading", "Outlook", 1),
            Block("paragraph", body),
        ]
    )
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=120)).chunk(document)
    assert [c.text.split("\n")[0] for c in chunks] == ["# Finance", "### Details", "## Costs", "# Outlook"]
    assert chunks[0].text.startswith("# Finance\n\n## Revenue\n\nRevenue grew")
    assert [c.heading_path for c in chunks] == [
        ["Finance", "Revenue"],
        ["Finance", "Revenue", "Details"],
        ["Finance", "Costs"],
        ["Outlook"],
    ]
    # With min_chunk_tokens=0 the lone heading is its own chunk.
    strict = RecursiveStrategy(RecursiveParams(chunk_size=120, min_chunk_tokens=0)).chunk(document)
    assert strict[0].text == "# Finance" and strict[1].heading_path == ["Finance", "Revenue"]


def test_markdown_heading_lines_split_a_tree_without_sections() -> None:
    text = "# One\n\n" + "alpha beta. " * 40 + "\n\n## Two\n\n" + "gamma delta. " * 40
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=200)).chunk(_raw_document(text))
    assert [c.text[:6] for c in chunks] == ["# One\n", "## Two"]


def test_recursive_overlap_is_carried_from_the_previous_chunk() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(400))
    document = _raw_document(text)
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=100, chunk_overlap=20)).chunk(document)
    assert len(chunks) > 5
    for previous, chunk in pairwise(chunks):
        shared = text[chunk.start_index : previous.end_index]
        assert shared and shared == shared.strip()
        assert get_tokenizer().count(shared) <= 21
        assert text[chunk.start_index - 1] == " ", "the carried text starts at a word boundary"
    assert_valid_chunks(document, chunks, 100, StrategyName.RECURSIVE)


def test_long_word_falls_back_to_token_windows() -> None:
    text = "start " + "z" * 5000 + " end"
    chunks = RecursiveStrategy(RecursiveParams(chunk_size=50)).chunk(_raw_document(text))
    assert len(chunks) > 10
    assert_valid_chunks(_raw_document(text), chunks, 50, StrategyName.RECURSIVE)


def test_empty_and_blank_documents() -> None:
    for text in ("", "  \n\n\t "):
        for strategy in (FixedSizeStrategy(), RecursiveStrategy(), ContextualRetrievalStrategy()):
            assert strategy.chunk(_raw_document(text)) == []


# --- parameters ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fixed_size", "recursive", "contextual_retrieval"])
def test_param_validation(name: str) -> None:
    with pytest.raises(ChunkingError, match=r"chunk_overlap \(100\) must be less than chunk_size \(100\)"):
        validate_params(name, {"chunk_size": 100, "chunk_overlap": 100})
    with pytest.raises(ChunkingError, match="chunk_size"):
        validate_params(name, {"chunk_size": 0})
    with pytest.raises(ChunkingError, match="chunk_size"):
        validate_params(name, {"chunk_size": 9000})
    with pytest.raises(ChunkingError, match="chunk_overlap"):
        validate_params(name, {"chunk_overlap": -1})
    with pytest.raises(ChunkingError, match="colour"):
        validate_params(name, {"colour": "blue"})
    assert validate_params(name, {"chunk_size": 256}).chunk_size == 256


def test_defaults() -> None:
    assert FixedSizeParams().model_dump() == {"chunk_size": 512, "chunk_overlap": 50}
    assert RecursiveParams().model_dump() == {"chunk_size": 512, "chunk_overlap": 0, "min_chunk_tokens": 32}
    assert ContextualRetrievalParams().chunk_overlap == 0
    for cls in (FixedSizeStrategy, RecursiveStrategy, ContextualRetrievalStrategy):
        assert cls.description.endswith(".") and not cls.needs_boundary


# --- contextual_retrieval -----------------------------------------------------------------------------


def _report() -> ChunkingInput:
    body = "Revenue grew by 2.5 percent in the third quarter. " * 5
    blocks = [
        Block("heading", "Finance", 1),
        Block("heading", "Revenue", 2),
        Block("paragraph", body),
        Block("heading", "درآمد", 2),
        Block("paragraph", "درآمد سال ۱۴۰۲ به میزان ۲.۵ درصد افزایش یافت. " * 5),
    ]
    return _document(blocks, title="Annual Report 2023", name="report.pdf")


def test_contextual_retrieval_with_the_heading_path_prefixer() -> None:
    document = _report()
    strategy = ContextualRetrievalStrategy(ContextualRetrievalParams(chunk_size=100))
    assert isinstance(strategy.prefixer, HeadingPathPrefixer)
    chunks = strategy.chunk(document)
    assert strategy.prefix_mode == "deterministic" and strategy.run_details() == {"prefix_mode": "deterministic"}
    assert_valid_chunks(document, chunks, 100, StrategyName.CONTEXTUAL_RETRIEVAL)
    english, farsi = chunks[0], chunks[-1]
    assert english.enriched_content == (
        f'This chunk is from "Annual Report 2023", section "Finance > Revenue".\n\n{english.text}'
    )
    assert english.embedding_text == english.enriched_content
    assert farsi.enriched_content is not None
    prefix, text = farsi.enriched_content.split("\n\n", 1)
    assert text == farsi.text
    assert "Annual Report 2023" in prefix and "Finance > درآمد" in prefix and prefix.startswith("این بخش")
    # The same cuts as recursive with the same parameters.
    recursive = RecursiveStrategy(RecursiveParams(chunk_size=100)).chunk(document)
    assert [(c.start_index, c.end_index) for c in chunks] == [(c.start_index, c.end_index) for c in recursive]


def test_prefix_without_title_or_headings_uses_the_file_name() -> None:
    document = _document([Block("paragraph", "Plain text without headings.")], name="notes.txt")
    [chunk] = ContextualRetrievalStrategy().chunk(document)
    assert chunk.enriched_content == 'This chunk is from "notes".\n\nPlain text without headings.'


class _FakeLlmPrefixer:
    mode = "llm"

    def __init__(self, count: int | None = None) -> None:
        self.count = count
        self.calls = 0

    def prefixes(self, document: ChunkingInput, chunks: list[Chunk]) -> list[str]:
        self.calls += 1  # the whole document once, not once per chunk
        return [f"Context {c.chunk_index} of {document.document_name}" for c in chunks][: self.count]


def test_contextual_retrieval_uses_a_given_prefixer() -> None:
    prefixer = _FakeLlmPrefixer()
    strategy = ContextualRetrievalStrategy(ContextualRetrievalParams(chunk_size=100), prefixer=prefixer)
    chunks = strategy.chunk(_report())
    assert prefixer.calls == 1 and strategy.prefix_mode == "llm"
    assert chunks[1].enriched_content == f"Context 1 of report.pdf\n\n{chunks[1].text}"
    with pytest.raises(ChunkingError, match="returned 1 prefixes"):
        ContextualRetrievalStrategy(prefixer=_FakeLlmPrefixer(count=1)).chunk(
            _document([Block("paragraph", "word " * 2000)])
        )
