"""``/api/query`` and ``/v1/query`` run the one query pipeline: the serving configuration's parents, reranking and
Neighbor Expansion reach the answerer, as they do for ``/queries`` (real MiniLM, embedded Qdrant, a local
OpenAI-compatible server as the LLM)."""

from __future__ import annotations

import re

import pytest

from fake_openai import Reply, running_fake_openai
from test_queries import HANDBOOK

QUESTION = "What is the hotel limit per night?"


def _serve(client, **config) -> None:
    response = client.put("/admin/serving", json=config)
    assert response.status_code == 200, response.text


def _index(client) -> int:
    response = client.post("/api/index", files={"file": ("handbook.md", HANDBOOK.encode())})
    assert response.status_code == 200, response.text
    return response.json()["chunks_created"]


def _responder(request: dict) -> Reply:
    """Rerank prompts get the candidates in reverse order; answer prompts an answer citing source 1."""
    user = request["messages"][-1]["content"]
    ranked = re.search(r"Rank all (\d+) passages", user)
    if ranked:
        count = int(ranked.group(1))
        ranking = ", ".join(str(n) for n in range(count, 0, -1))
        return Reply(content=f'{{"ranking": [{ranking}]}}')
    return Reply(content="Hotels are reimbursed up to 150 euros a night [Source 1].")


@pytest.fixture
def llm(settings):
    with running_fake_openai(responder=_responder) as server:
        settings.llm_base_url, settings.llm_model = server.url, "fake-model"
        yield server


def _answer_prompt(server) -> str:
    prompts = [r.body["messages"][-1]["content"] for r in server.chat_requests]
    answers = [p for p in prompts if "Rank all" not in p]
    assert answers, prompts
    return answers[-1]


def _parent_child_serving(client, **config) -> None:
    # A low Boundary threshold joins the handbook's paragraphs into parents of several children.
    threshold = client.put("/admin/embedding-models/all-MiniLM-L6-v2/semantic-threshold", json={"threshold": 0.01})
    assert threshold.status_code == 200, threshold.text
    _serve(client, strategy="semantic_parent_child", top_k=2, **config)
    assert _index(client) > 0


@pytest.mark.model
def test_parent_child_serving_answers_with_parent_context_on_both_apis(client, llm):
    _parent_child_serving(client)

    body = client.post("/v1/query", json={"query": QUESTION}).json()
    hits = [s for s in body["sources"] if s["role"] == "hit"]
    assert hits and all(s["parent_text"] and s["text"] in s["parent_text"] for s in hits)
    # The parents reached the LLM: every shown parent is in the prompt, and each is longer than its child.
    prompt = _answer_prompt(llm)
    assert all(s["parent_text"].strip() in prompt for s in hits)
    assert any(len(s["parent_text"]) > len(s["text"]) for s in hits)

    before = len(llm.chat_requests)
    chat = client.post("/api/query", json={"question": QUESTION})
    assert chat.status_code == 200, chat.text
    assert len(llm.chat_requests) == before + 1
    assert all(s["parent_text"].strip() in _answer_prompt(llm) for s in hits)
    assert "150 euros" in chat.json()["answer"]


@pytest.mark.model
def test_parent_context_can_be_switched_off_in_the_serving_configuration(client, llm):
    _parent_child_serving(client, parent_context=False)
    body = client.post("/v1/query", json={"query": QUESTION}).json()
    assert body["sources"] and all(s["parent_text"] is None for s in body["sources"])


def _reranks(server) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in server.chat_requests if "Rank all" in str(r.body)]


@pytest.mark.model
def test_serving_configuration_with_rerank_reranks_on_both_apis(settings, client, llm):
    settings.chunk_size = 40  # several recursive chunks, so the order of candidates can change
    _serve(client, strategy="recursive", retriever="hybrid", top_k=2)
    assert _index(client) >= 4
    candidates = [
        s["chunk_id"] for s in client.post("/v1/query", json={"query": QUESTION, "top_k": 4}).json()["sources"]
    ]
    assert len(candidates) == 4 and _reranks(llm) == []

    _serve(client, strategy="recursive", retriever="hybrid", top_k=2, rerank="llm", candidate_k=4)
    reranked = client.post("/v1/query", json={"query": QUESTION}).json()["sources"]
    assert len(_reranks(llm)) == 1 and "Rank all 4 passages" in _reranks(llm)[0]
    # The LLM reversed the four candidates: the answer is built from the plain search's fourth and third hits.
    assert [s["chunk_id"] for s in reranked] == candidates[::-1][:2]
    assert [s["score"] for s in reranked] == [1.0, 0.5]  # the reciprocal rank of the LLM's order

    chat = client.post("/api/query", json={"question": QUESTION}).json()
    assert [s["score"] for s in chat["sources"]] == [1.0, 0.5] and len(_reranks(llm)) == 2


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
