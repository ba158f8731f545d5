"""Chunk Preview's API on the real pipeline: contextual retrieval's prefixes and prefix mode, chunks over a stretch of
the text (two strategies side by side), and token-size histograms on shared bins."""

from __future__ import annotations

import pytest

from chunkbench.chunking.base import ChunkingInput, context_prefix, with_context
from chunkbench.chunking.diagnostics import histogram_bin_width, token_histograms
from chunkbench.chunking.strategies.contextual_retrieval import ContextualRetrievalStrategy
from chunkbench.indexing.contextual import LlmContextPrefixer
from chunkbench.llm.client import ChatResult
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.text.tokens import count_tokens

DOCUMENT = """# Annual Report

## Finance

Revenue grew by 12.5 percent in 2023. The board approved a new budget for the coming year. Operating costs fell
because the company moved its data centres to a cheaper region. Cash reserves now cover eighteen months of spending.

## Football

The local team won the championship after a dramatic penalty shoot-out. Fans celebrated in the streets until
morning. The coach praised the goalkeeper, who saved three penalties, and promised another title next season.
"""


def _process(client, document_id: str, **body) -> dict:
    response = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["failed"] == []
    return response.json()


def _preview(client, document_id: str, strategy: str, **params) -> dict:
    response = client.get(f"/admin/chunks/{document_id}", params={"strategy": strategy, "limit": 1000, **params})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def document_id(client) -> str:
    response = client.post("/documents", files={"file": ("report.md", DOCUMENT.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


def test_the_prefix_is_what_was_put_before_the_text():
    text = "Revenue grew by 12.5 percent."
    assert context_prefix(text, with_context('  This chunk is from "Annual Report".  ', text)) == (
        'This chunk is from "Annual Report".'
    )
    assert with_context("   ", text) == text and context_prefix(text, text) is None  # a blank prefix adds nothing
    assert context_prefix(text, None) is None
    assert context_prefix(text, f"{text}\n\nsomething after") is None  # another shape of enrichment: no prefix


@pytest.mark.model
def test_contextual_retrieval_shows_its_deterministic_prefix_and_mode(client, document_id):
    _process(client, document_id, strategies=["contextual_retrieval", "recursive"])
    contextual = _preview(client, document_id, "contextual_retrieval")
    assert contextual["prefix_mode"] == "deterministic"
    prefixes = {tuple(c["heading_path"]): c["context_prefix"] for c in contextual["chunks"]}
    assert prefixes[("Annual Report", "Finance")] == 'This chunk is from "Annual Report", section "Finance".'
    assert prefixes[("Annual Report", "Football")] == 'This chunk is from "Annual Report", section "Football".'
    markdown = client.get(f"/documents/{document_id}/markdown").text
    for chunk in contextual["chunks"]:
        assert chunk["prefix_tokens"] == count_tokens(chunk["context_prefix"])
        assert markdown[chunk["start_index"] : chunk["end_index"]] == chunk["text"]  # the prefix is not in the text
    # recursive cuts the same chunks but embeds them as they are: no prefix, no mode.
    recursive = _preview(client, document_id, "recursive")
    assert [c["text"] for c in recursive["chunks"]] == [c["text"] for c in contextual["chunks"]]
    assert recursive["prefix_mode"] is None
    assert all(c["context_prefix"] is None and c["prefix_tokens"] is None for c in recursive["chunks"])


@pytest.mark.model
def test_an_llm_prefix_is_shown_as_the_llm_wrote_it(settings, client, document_id, real_llm):
    settings.llm_base_url, settings.llm_model, settings.llm_max_tokens = real_llm.url, real_llm.model, 128
    _process(client, document_id, strategies=["contextual_retrieval"])
    preview = _preview(client, document_id, "contextual_retrieval")
    assert preview["prefix_mode"] == "llm"
    # One request per chunk, in the chunks' order; each chunk's prefix is the model's reply to it, on one line.
    assert len(real_llm.chats) == len(preview["chunks"]) > 1
    for chat, chunk in zip(real_llm.chats, preview["chunks"], strict=True):
        assert f"<chunk>\n{chunk['text']}\n</chunk>" in chat.request.body["messages"][-1]["content"]
        assert chunk["context_prefix"] == (" ".join(chat.content.split()) or None)


class _Replying:
    """A stand-in for the LLM client whose every chat replies ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def chat(self, messages, **options) -> ChatResult:
        return ChatResult(self.text, prompt_tokens=1, completion_tokens=1, model="m", latency_ms=0.0, attempts=1)


def test_an_llm_prefix_is_written_on_one_line():
    prefixer = LlmContextPrefixer(_Replying("  From the 2023 annual report,\n on results. "))
    tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(DOCUMENT)))
    chunks = ContextualRetrievalStrategy(prefixer=prefixer).chunk(ChunkingInput("doc1", "report.md", DOCUMENT, tree))
    assert chunks and {context_prefix(c.text, c.enriched_content) for c in chunks} == {
        "From the 2023 annual report, on results."
    }


@pytest.mark.model
def test_chunks_over_a_stretch_of_the_text(client, document_id):
    _process(
        client, document_id, strategies=["fixed_size"], params={"fixed_size": {"chunk_size": 20, "chunk_overlap": 5}}
    )
    every = _preview(client, document_id, "fixed_size")["chunks"]
    start, end = every[2]["start_index"] + 1, every[4]["start_index"] + 1
    ranged = _preview(client, document_id, "fixed_size", start=start, end=end)
    overlapping = [c for c in every if c["start_index"] < end and c["end_index"] > start]
    assert [c["chunk_index"] for c in ranged["chunks"]] == [c["chunk_index"] for c in overlapping]
    assert ranged["total"] == len(overlapping) < len(every) and (ranged["start"], ranged["end"]) == (start, end)
    # The page is taken within the stretch.
    paged = _preview(client, document_id, "fixed_size", start=start, end=end, offset=1, limit=1)
    assert [c["chunk_index"] for c in paged["chunks"]] == [overlapping[1]["chunk_index"]]

    for bad in ({"start": 10}, {"start": 30, "end": 30}, {"start": 40, "end": 10}):
        response = client.get(f"/admin/chunks/{document_id}", params={"strategy": "fixed_size", **bad})
        assert response.status_code == 400
        assert response.json()["error"] == "invalid_request" and "start < end" in response.json()["message"]


@pytest.mark.parametrize(
    ("largest", "width"), [(0, 1), (19, 1), (20, 2), (39, 2), (40, 5), (99, 5), (100, 10), (512, 50), (1999, 100)]
)
def test_histogram_bins_are_round_and_at_most_twenty(largest, width):
    assert histogram_bin_width(largest) == width
    assert largest // width + 1 <= 20


def test_token_histograms_share_their_bins():
    width, (first, second) = token_histograms([[0, 4, 5, 9, 50], [12]])
    assert width == 5  # 0..50 in 11 bins of 5
    assert first == [2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1] and second == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]


@pytest.mark.model
def test_chunk_sizes_per_strategy_on_shared_bins(client, document_id):
    _process(
        client,
        document_id,
        strategies=["fixed_size", "semantic_parent_child"],
        params={"fixed_size": {"chunk_size": 24, "chunk_overlap": 4}},
    )
    sizes = client.get(f"/admin/chunks/{document_id}/sizes")
    assert sizes.status_code == 200, sizes.text
    body = sizes.json()
    runs = {r["strategy"]: r for r in body["runs"]}
    assert list(runs) == ["fixed_size", "semantic_parent_child"]  # in the strategies' order, not the runs'
    assert {r["corpus_model_id"] for r in body["runs"]} == {"all-MiniLM-L6-v2"}
    width = body["bin_tokens"]
    largest = 0
    for strategy, run in runs.items():
        chunks = _preview(client, document_id, strategy)["chunks"]
        searchable = [c["token_count"] for c in chunks if not c["is_parent"]]
        largest = max(largest, *searchable)
        assert run["chunk_count"] == len(searchable) and run["parent_count"] == len(chunks) - len(searchable)
        expected = [0] * body["bins"]
        for tokens in searchable:
            expected[tokens // width] += 1
        assert run["counts"] == expected, strategy
    assert width == histogram_bin_width(largest) and body["bins"] == largest // width + 1
    assert runs["semantic_parent_child"]["parent_count"] > 0 and body["tiny_threshold_tokens"] == 32

    # A deleted collection leaves its run not indexed (no histogram), and the other histograms as they were.
    deleted = client.delete(f"/admin/qdrant/collections/{_collection(client, document_id, 'fixed_size')}")
    assert deleted.status_code == 204
    after = {r["strategy"]: r for r in client.get(f"/admin/chunks/{document_id}/sizes").json()["runs"]}
    assert "fixed_size" not in after
    assert {r["strategy_name"]: r["status"] for r in client.get(f"/documents/{document_id}/runs").json()}[
        "fixed_size"
    ] == "not_indexed"
    assert after["semantic_parent_child"]["chunk_count"] == runs["semantic_parent_child"]["chunk_count"]


def test_chunk_sizes_of_an_unknown_document_is_a_404(client):
    response = client.get("/admin/chunks/0123456789abcdef0123456789abcdef/sizes")
    assert response.status_code == 404 and response.json()["error"] == "document_not_found"


def _collection(client, document_id: str, strategy: str) -> str:
    return _preview(client, document_id, strategy)["collection"]
