"""``/api/query`` and ``/v1/query`` run the one query pipeline: the serving configuration's parents, reranking and
Neighbor Expansion reach the answerer, as they do for ``/queries`` (real MiniLM, embedded Qdrant, the real local
model as the LLM: tests/real_llm.py)."""

from __future__ import annotations

import pytest

from chunkbench.llm.prompts import rag_answer_messages
from chunkbench.retrieval.rerank import parse_ranking
from test_queries import HANDBOOK

QUESTION = "What is the hotel limit per night?"


def _serve(client, **config) -> None:
    response = client.put("/admin/serving", json=config)
    assert response.status_code == 200, response.text


def _index(client) -> int:
    response = client.post("/api/index", files={"file": ("handbook.md", HANDBOOK.encode())})
    assert response.status_code == 200, response.text
    return response.json()["chunks_created"]


def _use(settings, real_llm) -> None:
    settings.llm_base_url, settings.llm_model, settings.llm_max_tokens = real_llm.url, real_llm.model, 128


def _answers(real_llm) -> list:
    """The answer requests and the model's replies (not the rerank ones), in the order they were sent."""
    return [chat for chat in real_llm.chats if "Rank all" not in str(chat.request.body)]


def _answer_prompt(real_llm) -> str:
    answers = _answers(real_llm)
    assert answers, real_llm.chat_requests
    return answers[-1].request.body["messages"][-1]["content"]


def _parent_child_serving(client, **config) -> None:
    # A low Boundary threshold joins the handbook's paragraphs into parents of several children.
    threshold = client.put("/admin/embedding-models/all-MiniLM-L6-v2/semantic-threshold", json={"threshold": 0.01})
    assert threshold.status_code == 200, threshold.text
    _serve(client, strategy="semantic_parent_child", top_k=2, **config)
    assert _index(client) > 0


@pytest.mark.model
def test_parent_child_serving_answers_with_parent_context_on_both_apis(settings, client, real_llm):
    _use(settings, real_llm)
    _parent_child_serving(client)

    body = client.post("/v1/query", json={"query": QUESTION}).json()
    hits = [s for s in body["sources"] if s["role"] == "hit"]
    assert hits and all(s["parent_text"] and s["text"] in s["parent_text"] for s in hits)
    # The parents reached the LLM: every shown parent is in the prompt, and each is longer than its child.
    prompt = _answer_prompt(real_llm)
    assert all(s["parent_text"].strip() in prompt for s in hits)
    assert any(len(s["parent_text"]) > len(s["text"]) for s in hits)
    assert body["answer_mode"] == "llm" and body["answer"] == _answers(real_llm)[-1].content.strip()

    before = len(real_llm.chat_requests)
    chat = client.post("/api/query", json={"question": QUESTION})
    assert chat.status_code == 200, chat.text
    assert len(real_llm.chat_requests) == before + 1
    assert all(s["parent_text"].strip() in _answer_prompt(real_llm) for s in hits)
    assert chat.json()["answer"] == _answers(real_llm)[-1].content.strip()


@pytest.mark.model
def test_parent_context_can_be_switched_off_in_the_serving_configuration(settings, client, real_llm):
    _use(settings, real_llm)
    _parent_child_serving(client, parent_context=False)
    body = client.post("/v1/query", json={"query": QUESTION}).json()
    assert body["sources"] and all(s["parent_text"] is None for s in body["sources"])
    # The LLM read the children alone.
    [answered] = _answers(real_llm)
    assert answered.request.body["messages"] == rag_answer_messages(
        QUESTION, [(s["number"], s["text"]) for s in body["sources"]]
    )


def _reranks(real_llm) -> list:
    """The rerank requests and the model's rankings, in the order they were sent."""
    return [chat for chat in real_llm.chats if "Rank all" in str(chat.request.body)]


@pytest.mark.model
def test_serving_configuration_with_rerank_reranks_on_both_apis(settings, client, real_llm):
    _use(settings, real_llm)
    settings.chunk_size = 40  # several recursive chunks, so the order of candidates can change
    _serve(client, strategy="recursive", retriever="hybrid", top_k=2)
    assert _index(client) >= 4
    plain = client.post("/v1/query", json={"query": QUESTION, "top_k": 4}).json()["sources"]
    candidates = [s["chunk_id"] for s in plain]
    assert len(candidates) == 4 and _reranks(real_llm) == []

    _serve(client, strategy="recursive", retriever="hybrid", top_k=2, rerank="llm", candidate_k=4)
    reranked = client.post("/v1/query", json={"query": QUESTION}).json()["sources"]
    [ranked] = _reranks(real_llm)
    prompt = ranked.request.body["messages"][-1]["content"]
    # The plain search's four hits went to the model in its order; the answer is built from the model's first two.
    assert "Rank all 4 passages" in prompt
    assert all(f"[{n}] {s['text'].strip()}" in prompt for n, s in enumerate(plain, start=1))
    order = parse_ranking(ranked.content, len(candidates))
    assert [s["chunk_id"] for s in reranked] == [candidates[i] for i in order[:2]]
    reciprocal_ranks = [1 / (position + 1) for position in range(2)]  # the score of each place in the model's order
    assert [s["score"] for s in reranked] == reciprocal_ranks

    chat = client.post("/api/query", json={"question": QUESTION}).json()
    assert len(_reranks(real_llm)) == 2
    order = parse_ranking(_reranks(real_llm)[1].content, len(candidates))
    assert [s["text"] for s in chat["sources"]] == [plain[i]["text"][:200] for i in order[:2]]
    assert [s["score"] for s in chat["sources"]] == reciprocal_ranks


@pytest.mark.model
def test_serving_configuration_with_neighbour_expansion_adds_neighbours(settings, client):
    settings.chunk_size, settings.chunk_overlap = 40, 0
    _serve(client, strategy="fixed_size", retriever="dense", top_k=1, neighbor_prev=1, neighbor_next=1)
    _index(client)
    sources = client.post("/v1/query", json={"query": QUESTION}).json()["sources"]
    roles = sorted(s["role"] for s in sources)
    assert roles.count("hit") == 1 and 1 <= roles.count("neighbor") <= 2
    chat = client.post("/api/query", json={"question": QUESTION}).json()
    assert len(chat["sources"]) == len(sources)
