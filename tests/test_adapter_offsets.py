"""Every library adapter chunkbench registers (its ``chunkbench.strategies`` entry points) gives chunks that are the
document's text at their offsets, in order, on all five of Chroma's corpora, with network sockets blocked: no
library reaches a model hub or a download behind our back.

The adapters that embed (their ``needs_boundary``) embed every sentence with the real Boundary model (MiniLM), so they
read each corpus's first 20,000 characters; the others read every corpus whole.
"""

from __future__ import annotations

import socket
from importlib import metadata

import pytest

from chunkbench.chunking.base import ChunkingInput, strategy_class
from chunkbench.chunking.entry_points import GROUP
from chunkbench.chunking.library_strategies import LibraryStrategy
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import boundary_embedder
from chunkbench.evaluation.datasets import chroma_dir

CORPORA = sorted((chroma_dir(None) / "corpora").glob("*.md"))
EMBEDDED_PREFIX = 20_000
OWN = sorted(
    entry.name for entry in metadata.entry_points(group=GROUP) if entry.dist and entry.dist.name == "chunkbench"
)


def test_chunkbench_registers_adapters_of_at_least_four_libraries():
    libraries = {strategy_class(name).library for name in OWN}
    assert len(OWN) >= 7 and len(libraries) >= 4, (OWN, libraries)
    assert all(issubclass(strategy_class(name), LibraryStrategy) for name in OWN)


def _parse(path, folder, *, verbatim: bool = False) -> ChunkingInput:
    result = parse_document(path, Settings(data_dir=folder), verbatim=verbatim)
    return ChunkingInput(path.stem, path.name, result.markdown, result.tree)


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, tuple[ChunkingInput, ChunkingInput, ChunkingInput]]:
    """Each corpus parsed whole, its first 20,000 characters (cut at a line break) parsed as a file of its own, and
    the corpus read verbatim (one bare tree root: how Chroma's reproduction and the arena ingest it)."""
    folder = tmp_path_factory.mktemp("parsed")
    parsed = {}
    for path in CORPORA:
        text = path.read_text(encoding="utf-8")
        prefix = folder / f"prefix-{path.name}"
        prefix.write_text(text[: text.rfind("\n", 0, EMBEDDED_PREFIX) + 1], encoding="utf-8")
        parsed[path.name] = (_parse(path, folder), _parse(prefix, folder), _parse(path, folder, verbatim=True))
    return parsed


@pytest.fixture(scope="module")
def boundary(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("models"))
    return boundary_embedder(get_spec("all-MiniLM-L6-v2"), 0.3, settings)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(self, address, *args, **kwargs):
        raise OSError(f"network blocked in this test: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.mark.parametrize("name", OWN)
@pytest.mark.model
def test_every_chunk_is_the_document_text_at_its_offsets_on_every_chroma_corpus(name, documents, boundary, no_network):
    cls = strategy_class(name)
    # A code chunker reads prose as the language it is told (its offsets must hold on any text all the same).
    params = cls.params_model(**({"language": "python"} if "language" in cls.params_model.model_fields else {}))
    strategy = cls(params, boundary=boundary if cls.needs_boundary else None)
    assert len(documents) == 5
    forms = [
        (corpus, (prefix,) if cls.needs_boundary else (whole, verbatim))
        for corpus, (whole, prefix, verbatim) in documents.items()
    ]
    for corpus, document in ((corpus, document) for corpus, both in forms for document in both):
        chunks = strategy.chunk(document)
        assert chunks, (name, corpus)
        for chunk in chunks:
            assert document.markdown[chunk.start_index : chunk.end_index] == chunk.text, (
                name,
                corpus,
                chunk.chunk_index,
            )
            assert chunk.text.strip() and chunk.character_count == len(chunk.text)
        starts = [c.start_index for c in chunks]
        assert starts == sorted(starts) and len(set(starts)) == len(starts), (name, corpus)
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        details = strategy.run_details()
        assert details["library"] == cls.library and details["library_version"] == metadata.version(cls.library)
