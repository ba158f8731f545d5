"""The recursive strategy's literal-separator mode (LangChain's RecursiveCharacterTextSplitter, as Chroma ran it),
against chunkings worked out by hand."""

from __future__ import annotations

import pytest

from chunkbench.chunking.base import ChunkingInput, validate_params
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.errors import ChunkingError
from chunkbench.models import DocumentTree, NodeType, StrategyName, TreeNode

CHROMA_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]
# Tokens (cl100k): "One two three four." 5 · "\n" 1 · "\nFive six seven." 5 · "\nEight" 2 · every " word" 1 · "." 1
TEXT = "One two three four.\n\nFive six seven.\nEight nine ten eleven twelve thirteen fourteen."


def _chunks(text: str, **params):
    tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text)))
    document = ChunkingInput(document_id="d", document_name="d", markdown=text, tree=tree)
    return RecursiveStrategy(RecursiveParams(**params)).chunk(document)


def test_without_overlap_matches_the_hand_computed_chunking() -> None:
    # "\n\n" splits: piece 1 (5 < 6) is a chunk; piece 2 is too long and recurses with "\n": "\n" + "\nFive six
    # seven." (1 + 5 = 6 fits) is a chunk; "\nEight … fourteen." recurses with ".", whose first piece recurses
    # with " ": "\nEight nine ten eleven twelve" (2+1+1+1+1 = 6), then " thirteen fourteen"; the "." left by
    # the "." split (kept at the start of the following piece) is a chunk of its own.
    chunks = _chunks(TEXT, chunk_size=6, chunk_overlap=0, separators=CHROMA_SEPARATORS)
    assert [(c.text, c.start_index, c.end_index) for c in chunks] == [
        ("One two three four.", 0, 19),
        ("Five six seven.", 21, 36),
        ("Eight nine ten eleven twelve", 37, 65),
        ("thirteen fourteen", 66, 83),
        (".", 83, 84),
    ]
    assert [c.token_count for c in chunks] == [5, 4, 5, 3, 1]
    assert all(TEXT[c.start_index : c.end_index] == c.text for c in chunks)


def test_overlap_keeps_trailing_pieces_up_to_the_overlap() -> None:
    # After "\nEight nine ten eleven twelve" (6) the merge drops pieces from the front while the total is
    # over 2: "\nEight" (2), " nine", " ten" go; " eleven twelve" (2) stays and starts the next chunk.
    chunks = _chunks(TEXT, chunk_size=6, chunk_overlap=2, separators=CHROMA_SEPARATORS)
    assert [(c.text, c.start_index, c.end_index) for c in chunks] == [
        ("One two three four.", 0, 19),
        ("Five six seven.", 21, 36),
        ("Eight nine ten eleven twelve", 37, 65),
        ("eleven twelve thirteen fourteen", 52, 83),
        (".", 83, 84),
    ]


def test_a_piece_no_separator_splits_stays_whole_and_characters_split_with_empty_separator() -> None:
    text = "abcdefghijklmnopqrstuvwxyz abcdefghijklmnopqrstuvwxyz"
    whole = _chunks(text, chunk_size=3, chunk_overlap=0, separators=["\n"])
    assert [c.text for c in whole] == [text]  # LangChain keeps an unsplittable piece over the size
    by_char = _chunks(text, chunk_size=2, chunk_overlap=0, separators=[""])
    # Every character is 1 token and pieces are packed while the sum stays within 2: pairs of characters.
    assert [c.text for c in by_char][:3] == ["ab", "cd", "ef"]
    assert "".join(text[c.start_index : c.end_index] for c in by_char) == text.replace(" ", "")


def test_separators_validation_and_unchanged_default_dump() -> None:
    assert "separators" not in RecursiveParams().model_dump()
    assert RecursiveParams(separators=["\n"]).model_dump()["separators"] == ["\n"]
    with pytest.raises(ChunkingError, match="separators"):
        validate_params(StrategyName.RECURSIVE, {"separators": []})
    with pytest.raises(ChunkingError, match="separators"):
        validate_params(StrategyName.RECURSIVE, {"separators": "\n"})
