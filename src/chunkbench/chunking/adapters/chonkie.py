"""chonkie's chunkers as strategies (issue 24): token, sentence, recursive, semantic and code.

Every chunker counts cl100k_base tokens (our tokenizer, as a chonkie ``Tokenizer``: never a hub name), the semantic
one embeds with the Boundary model (as a chonkie ``BaseEmbeddings``: never model2vec's hub download), and the code
one parses with tree-sitter grammars built from the wheels chunkbench ships (``grammars.py``: never a download).
chonkie's ``start_index`` is each piece's offset hint; the base maps every piece back to the markdown exactly.
"""

from __future__ import annotations

from functools import cache
from pathlib import PurePath
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from chunkbench.chunking.base import ChunkingInput, StrategyParams
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, embed_with
from chunkbench.errors import ChunkingError
from chunkbench.models import StrategyName
from chunkbench.text.tokens import get_tokenizer

_DELIMITERS = [". ", "! ", "? ", "\n"]

# A sentence delimiter: a non-empty string (an empty one would make every character a sentence).
Delimiter = Annotated[str, Field(min_length=1, max_length=20)]

_CHUNK_SIZE = Field(512, ge=1, le=8192, description="The most cl100k_base tokens in a chunk.")


def _chunk_overlap(default: int = 0) -> Any:
    return Field(default, ge=0, description="cl100k_base tokens each chunk repeats from the end of the one before.")


def _delim() -> Any:
    return Field(
        default_factory=lambda: list(_DELIMITERS),
        min_length=1,
        max_length=20,
        description="The strings a sentence ends with.",
    )


_INCLUDE_DELIM: Literal["prev", "next"] | None = Field(
    "prev", description="Where a sentence's delimiter goes: 'prev' (the sentence it ends), 'next', or null (dropped)."
)


class _OverlapBelowSize(StrategyParams):
    @model_validator(mode="after")
    def _overlap_below_size(self) -> _OverlapBelowSize:
        if self.chunk_overlap >= self.chunk_size:  # type: ignore[attr-defined]
            raise ValueError("chunk_overlap must be less than chunk_size")
        return self


class _Chonkie(LibraryStrategy):
    # Each name is registered (StrategyName.add) when the entry point registers the class; until then (a class
    # used directly) it is a detached StrategyName: importing this module registers nothing.
    library = "chonkie"
    extra = "chonkie"
    modules: ClassVar[tuple[str, ...]] = ("chonkie",)
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}

    def _pieces(self, chunks: list[Any]) -> list[Piece]:
        return [Piece(chunk.text, chunk.start_index) for chunk in chunks]


# --------------------------------------------------------------------------- what chonkie needs from us


@cache
def cl100k() -> Any:
    """cl100k_base as a chonkie ``Tokenizer`` (chonkie runs its encode/decode/count; a bare callable only counts)."""
    from chonkie.tokenizer import Tokenizer

    class Cl100k(Tokenizer):
        def __repr__(self) -> str:
            return "cl100k_base"

        def encode(self, text: str) -> list[int]:
            return get_tokenizer().encode(text).tolist()

        def decode(self, tokens: Any) -> str:
            # A window that starts or ends inside a multi-byte character (CJK, emoji) loses that partial
            # character instead of gaining U+FFFD: the text stays a verbatim slice of the source.
            return get_tokenizer().decode_bytes(tokens).decode("utf-8", errors="ignore")

        def tokenize(self, text: str) -> list[int]:
            return self.encode(text)

        def count_tokens(self, text: str) -> int:
            return get_tokenizer().count(text)

        def count_tokens_batch(self, texts: Any) -> list[int]:
            return get_tokenizer().count_many(list(texts))

    return Cl100k()


def boundary_embeddings(boundary: Any) -> Any:
    """The Boundary model as a chonkie ``BaseEmbeddings``, counting cl100k_base tokens."""
    from chonkie.embeddings import BaseEmbeddings

    class BoundaryEmbeddings(BaseEmbeddings):
        def __init__(self) -> None:
            super().__init__()
            self.model_id = boundary.model_id
            self._dimension: int | None = None

        def __repr__(self) -> str:
            return f"BoundaryEmbeddings({self.model_id})"

        def embed(self, text: str) -> np.ndarray:
            return self.embed_batch([text])[0]

        def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
            rows = embed_with(boundary, texts)
            self._dimension = int(rows.shape[1]) if rows.ndim == 2 else self._dimension
            return list(rows)

        def similarity(self, u: np.ndarray, v: np.ndarray) -> np.float32:
            # The Boundary model's rows are L2-normalised: cosine is the dot product.
            return np.float32(np.dot(u, v))

        @property
        def dimension(self) -> int:
            if self._dimension is None:
                self.embed("dimension")
            return int(self._dimension or 0)

        def get_tokenizer(self) -> Any:
            return cl100k()

    return BoundaryEmbeddings()


def _in_sequence(text: str, chunks: list[Any]) -> list[Piece]:
    """Pieces of a chunker whose chunks follow each other without overlap, each found from the previous one's end.

    chonkie adds up its pieces' lengths for ``start_index``; at the last level (a run without spaces longer than
    chunk_size tokens: CJK text) it decodes token windows one by one, and a character split between two windows is
    in neither (``Cl100k.decode``), so the sum drifts by one per split character. Each piece's text is still a
    verbatim slice: looked for from the previous piece's end, it is found where it is, not at an earlier repeat.
    """
    pieces, cursor = [], 0
    for chunk in chunks:
        at = text.find(chunk.text, cursor)
        start = at if at >= 0 else chunk.start_index
        pieces.append(Piece(chunk.text, start))
        cursor = start + len(chunk.text) if at >= 0 else cursor
    return pieces


def _library_error(strategy: str, exc: ValueError) -> ChunkingError:
    return ChunkingError(f"chonkie rejected the '{strategy}' parameters: {exc}.")


# --------------------------------------------------------------------------- token


class ChonkieTokenParams(_OverlapBelowSize):
    chunk_size: int = _CHUNK_SIZE
    chunk_overlap: int = _chunk_overlap()


class ChonkieToken(_Chonkie):
    """chonkie's TokenChunker: windows of ``chunk_size`` cl100k_base tokens, ``chunk_overlap`` of them repeated."""

    name = StrategyName.stored("chonkie_token")
    description = "chonkie's TokenChunker: fixed windows of cl100k_base tokens, with an optional token overlap."
    params_model = ChonkieTokenParams
    expands_neighbours = True

    def split(self, document: ChunkingInput) -> list[Piece]:
        from chonkie import TokenChunker

        params: ChonkieTokenParams = self.params  # type: ignore[assignment]
        chunker = TokenChunker(tokenizer=cl100k(), chunk_size=params.chunk_size, chunk_overlap=params.chunk_overlap)
        chunks = chunker.chunk(document.markdown)
        # chonkie decodes each window on its own and adds up the decoded lengths, which drifts from the source
        # when a window boundary splits a multi-byte character. Its windows are token ranges (window i starts at
        # token i × (chunk_size − chunk_overlap) and holds token_count tokens): each is read from the source at
        # the character offsets of those tokens, a split character going to the window where it ends.
        _ids, offsets = get_tokenizer().boundaries(document.markdown)
        step = params.chunk_size - params.chunk_overlap
        pieces = []
        for index, chunk in enumerate(chunks):
            start, end = int(offsets[index * step]), int(offsets[index * step + chunk.token_count])
            pieces.append(Piece(document.markdown[start:end], start))
        return pieces


# --------------------------------------------------------------------------- sentence


class ChonkieSentenceParams(_OverlapBelowSize):
    chunk_size: int = _CHUNK_SIZE
    chunk_overlap: int = _chunk_overlap()
    min_sentences_per_chunk: int = Field(1, ge=1, le=100, description="The fewest sentences in a chunk.")
    min_characters_per_sentence: int = Field(
        12, ge=1, le=1000, description="A shorter sentence is joined to the next one."
    )
    delim: list[Delimiter] = _delim()
    include_delim: Literal["prev", "next"] | None = _INCLUDE_DELIM


class ChonkieSentence(_Chonkie):
    """chonkie's SentenceChunker: whole sentences packed up to ``chunk_size`` cl100k_base tokens."""

    name = StrategyName.stored("chonkie_sentence")
    description = "chonkie's SentenceChunker: whole sentences packed up to chunk_size cl100k_base tokens."
    params_model = ChonkieSentenceParams

    def split(self, document: ChunkingInput) -> list[Piece]:
        from chonkie import SentenceChunker

        params: ChonkieSentenceParams = self.params  # type: ignore[assignment]
        try:
            chunker = SentenceChunker(tokenizer=cl100k(), **params.model_dump())
        except ValueError as exc:
            raise _library_error(self.name, exc) from exc
        return self._pieces(chunker.chunk(document.markdown))


# --------------------------------------------------------------------------- recursive


class ChonkieRecursiveParams(StrategyParams):
    chunk_size: int = _CHUNK_SIZE
    min_characters_per_chunk: int = Field(
        24, ge=1, le=10000, description="A shorter piece is merged into its neighbour."
    )


class ChonkieRecursive(_Chonkie):
    """chonkie's RecursiveChunker with its default rules: paragraphs, then sentences, then words, then tokens."""

    name = StrategyName.stored("chonkie_recursive")
    description = (
        "chonkie's RecursiveChunker with its default rules (paragraphs, sentences, pauses, words, tokens) up to "
        "chunk_size cl100k_base tokens."
    )
    params_model = ChonkieRecursiveParams

    def split(self, document: ChunkingInput) -> list[Piece]:
        from chonkie import RecursiveChunker

        # chonkie's recipes (RecursiveChunker.from_recipe) are fetched from the Hugging Face hub: not offered.
        params: ChonkieRecursiveParams = self.params  # type: ignore[assignment]
        chunker = RecursiveChunker(tokenizer=cl100k(), **params.model_dump())
        return _in_sequence(document.markdown, chunker.chunk(document.markdown))


# --------------------------------------------------------------------------- semantic


class ChonkieSemanticParams(StrategyParams):
    threshold: float = Field(
        0.8, gt=0, lt=1, description="Sentences whose windows' cosine similarity falls below it start a new chunk."
    )
    chunk_size: int = _CHUNK_SIZE
    similarity_window: int = Field(3, ge=1, le=50, description="Sentences embedded together when comparing.")
    min_sentences_per_chunk: int = Field(1, ge=1, le=100, description="The fewest sentences in a chunk.")
    min_characters_per_sentence: int = Field(
        24, ge=1, le=1000, description="A shorter sentence is joined to the next one."
    )
    delim: list[Delimiter] = _delim()
    include_delim: Literal["prev", "next"] | None = _INCLUDE_DELIM
    skip_window: int = Field(
        0, ge=0, le=50, description="Groups looked past when merging similar groups (0: adjacent only)."
    )
    filter_window: int = Field(5, ge=1, le=101, description="The Savitzky-Golay filter's window over similarities.")
    filter_polyorder: int = Field(3, ge=0, le=100, description="The Savitzky-Golay filter's polynomial order.")
    filter_tolerance: float = Field(0.2, gt=0, lt=1, description="The Savitzky-Golay filter's tolerance.")

    @model_validator(mode="after")
    def _polyorder_below_window(self) -> ChonkieSemanticParams:
        if self.filter_polyorder >= self.filter_window:
            raise ValueError("filter_polyorder must be less than filter_window")
        return self


class ChonkieSemantic(_Chonkie):
    """chonkie's SemanticChunker, embedding with the Boundary model."""

    name = StrategyName.stored("chonkie_semantic")
    description = (
        "chonkie's SemanticChunker on the Boundary model: cuts where sentence windows' similarity drops below "
        "the threshold."
    )
    params_model = ChonkieSemanticParams
    needs_boundary = True

    def split(self, document: ChunkingInput) -> list[Piece]:
        from chonkie import SemanticChunker

        params: ChonkieSemanticParams = self.params  # type: ignore[assignment]
        try:
            chunker = SemanticChunker(embedding_model=boundary_embeddings(self.boundary), **params.model_dump())
        except ValueError as exc:
            raise _library_error(self.name, exc) from exc
        return self._pieces(chunker.chunk(document.markdown))


# --------------------------------------------------------------------------- code


class ChonkieCodeParams(StrategyParams):
    chunk_size: int = _CHUNK_SIZE
    language: str | None = Field(
        None,
        min_length=1,
        max_length=40,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The tree-sitter language (python, go, …); null: from the document's file name suffix.",
    )


class ChonkieCode(_Chonkie):
    """chonkie's CodeChunker: the syntax tree's definitions packed up to ``chunk_size`` cl100k_base tokens."""

    name = StrategyName.stored("chonkie_code")
    description = (
        "chonkie's CodeChunker: source code cut between its syntax tree's definitions (tree-sitter), up to "
        "chunk_size cl100k_base tokens."
    )
    params_model = ChonkieCodeParams
    modules = ("chonkie", "tree_sitter_language_pack")

    def split(self, document: ChunkingInput) -> list[Piece]:
        from chunkbench.chunking.adapters import grammars

        params: ChonkieCodeParams = self.params  # type: ignore[assignment]
        language = params.language or _language_of(document.document_name, self.name)
        grammars.ensure(language, strategy=self.name)
        text = document.markdown
        # tree-sitter reports UTF-8 byte offsets: the character offsets are counted from the source's bytes.
        characters = _characters_before(text)
        try:
            chunks = _code_chunker(params.chunk_size, language).chunk(text)
        except pack_error() as exc:  # a grammar that loads but does not run (another ABI), a parse timeout
            raise ChunkingError(
                f"The '{self.name}' strategy could not parse '{document.document_name}' as {language}: {exc}"
            ) from exc
        return [Piece(chunk.text, int(characters[chunk.start_index])) for chunk in chunks]


def pack_error() -> type[Exception]:
    """The base of tree-sitter-language-pack's errors."""
    import tree_sitter_language_pack

    return tree_sitter_language_pack.Error


def _code_chunker(chunk_size: int, language: str) -> Any:
    """chonkie's CodeChunker for ``language``, built without its constructor's downloads."""
    from chonkie import CodeChunker
    from chonkie.chunker.base import BaseChunker

    # CodeChunker.__init__ calls download_all() while fewer than 20 grammars are cached, and download() for a
    # language not cached: offline, both fail. Its other work is setting these attributes, done here instead;
    # chunk() then runs chonkie's own algorithm (tree-sitter-language-pack's process() with a byte budget).
    chunker = CodeChunker.__new__(CodeChunker)
    BaseChunker.__init__(chunker, tokenizer=cl100k())
    chunker.chunk_size = chunk_size
    chunker.include_nodes = False
    chunker.language = language
    return chunker


def _language_of(document_name: str, strategy: str) -> str:
    from chunkbench.documents.parsers.code_languages import BY_SUFFIX

    suffix = PurePath(document_name).suffix.lower()
    known = BY_SUFFIX.get(suffix)
    if known is None:
        raise ChunkingError(
            f"The '{strategy}' strategy cannot tell the programming language of '{document_name}' from its name; "
            "set the 'language' parameter (python, go, …)."
        )
    return known.name


def _characters_before(text: str) -> np.ndarray:
    """``result[b]``: how many characters of ``text`` start before its UTF-8 byte ``b`` (``b`` up to the length)."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    starts = (data & 0xC0) != 0x80  # a byte starts a character unless it is a continuation byte (10xxxxxx)
    return np.concatenate(([0], np.cumsum(starts)))


__all__ = [
    "ChonkieCode",
    "ChonkieCodeParams",
    "ChonkieRecursive",
    "ChonkieRecursiveParams",
    "ChonkieSemantic",
    "ChonkieSemanticParams",
    "ChonkieSentence",
    "ChonkieSentenceParams",
    "ChonkieToken",
    "ChonkieTokenParams",
]
