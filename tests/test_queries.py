"""The query pipeline and the chatbot API through the real app: MiniLM, embedded Qdrant, a local
OpenAI-compatible server for the LLM paths."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.llm.answer import parse_citations
from chunkbench.llm.client import repair_counts
from chunkbench.llm.prompts import NOT_ENOUGH_INFORMATION, rag_answer_messages
from chunkbench.retrieval.rerank import parse_ranking
from chunkbench.storage.vectors import close_vector_stores

HANDBOOK = """# Staff Handbook

## Leave

Every employee receives 25 days of paid annual leave per calendar year. Unused leave can be carried over
until the end of March. Sick leave requires a doctor's note after three days.

## Equipment

Laptops are replaced every four years. Broken equipment is reported through the service desk with the
ticket code HW-7731. The service desk answers within one working day.

## Travel

Train travel is preferred for journeys under five hours. Hotel costs are reimbursed up to 150 euros a night.
"""


@pytest.fixture
def document_id(client) -> str:
    document = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]
    processed = client.post(
        f"/documents/{document['id']}/process",
        params={"wait": "true"},
        json={
            "strategies": ["fixed_size", "recursive"],
            "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}},
        },
    )
    assert processed.status_code == 200, processed.text
    return document["id"]


def _ask(client, document_id, question, **knobs):
    return client.post("/queries", json={"document_id": document_id, "question": question, **knobs})


@pytest.mark.model
def test_extractive_answer_with_sources_tree_latency_and_history(client, document_id):
    response = _ask(client, document_id, "How many days of paid annual leave do employees get?", strategy="recursive")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["answer_mode"] == "extractive"
    assert "25 days" in body["answer"]
    assert body["citations"] and all(1 <= n <= len(body["sources"]) for n in body["citations"])
    cited = body["sources"][body["citations"][0] - 1]
    assert "25 days" in cited["text"]
    assert {"embed", "search", "expand", "generate", "total"} <= set(body["latency_breakdown"])
    assert body["token_usage"]["context_tokens"] > 0
    assert body["config"]["retriever"] == "dense" and body["config"]["corpus_model_id"] == "all-MiniLM-L6-v2"

    stored = client.get(f"/queries/{body['id']}").json()
    assert stored["answer"] == body["answer"] and stored["sources"] == body["sources"]
    history = client.get("/queries", params={"document_id": document_id}).json()
    assert [q["id"] for q in history] == [body["id"]]


@pytest.mark.model
def test_fixed_size_neighbours_are_in_the_tree_and_the_context(client, document_id):
    response = _ask(
        client, document_id, "What is the ticket code for broken equipment?", strategy="fixed_size", top_k=1,
        neighbor_prev=1, neighbor_next=1, retriever="hybrid",
    )  # fmt: skip
    body = response.json()
    [node] = body["expansion_tree"]
    texts = {source["chunk_id"]: source["text"] for source in body["sources"]}
    assert node["role"] == "hit" and "HW-7731" in texts[node["chunk_id"]]
    neighbours = node["neighbors_prev"] + node["neighbors_next"]
    assert neighbours and all(n["role"] == "neighbor" and n["score"] is None for n in neighbours)
    indices = [c["chunk_index"] for c in body["retrieved_chunks"]]
    assert indices == sorted(indices) and len(indices) == 1 + len(neighbours)
    assert "HW-7731" in body["answer"]
    # Every chunk's text travels once, in its source; the chunk list and the tree refer to it.
    assert [s["chunk_id"] for s in body["sources"]] == [c["chunk_id"] for c in body["retrieved_chunks"]]
    assert {n["chunk_id"] for n in [node, *neighbours]} == set(texts)
    assert all("text" not in c for c in [*body["retrieved_chunks"], node, *neighbours])
    assert all(response.text.count(json.dumps(text, ensure_ascii=False)) == 1 for text in texts.values())


@pytest.mark.model
def test_queries_reopen_the_vector_store_after_it_was_closed(client, document_id):
    # The route keeps the process's store; a closed one (e.g. after close_vector_stores) is opened again.
    question = "How many days of paid annual leave do employees get?"
    first = _ask(client, document_id, question, strategy="recursive")
    close_vector_stores()
    again = _ask(client, document_id, question, strategy="recursive")
    assert first.status_code == again.status_code == 201, again.text
    chunk_ids = [[source["chunk_id"] for source in response.json()["sources"]] for response in (first, again)]
    assert chunk_ids[0] == chunk_ids[1] and "25 days" in again.json()["answer"]


@pytest.mark.model
def test_a_strategy_not_processed_is_a_clear_400(client, document_id):
    response = _ask(client, document_id, "anything?", strategy="semantic")
    assert response.status_code == 400
    assert "chunkbench process" in response.json()["message"]


@pytest.mark.model
def test_score_floor_can_return_nothing_and_the_answer_says_so(client, document_id):
    body = _ask(client, document_id, "Leave days?", strategy="recursive", score_floor=0.99).json()
    assert body["sources"] == [] and body["answer"] == NOT_ENOUGH_INFORMATION
    assert body["answer_mode"] == "none"


@pytest.mark.model
def test_cross_encoder_rerank_without_a_model_is_a_clear_400(client, document_id):
    response = _ask(client, document_id, "Leave days?", strategy="recursive", rerank="cross_encoder")
    assert response.status_code == 400
    assert "CHUNKBENCH_CROSS_ENCODER_MODEL" in response.json()["message"]


@pytest.mark.parametrize(
    "knobs", [{"top_k": 0}, {"top_k": 21}, {"neighbor_prev": 6}, {"retriever": "magic"}, {"question": ""}]
)
@pytest.mark.model
def test_invalid_query_input_is_422(client, document_id, knobs):
    body = {"document_id": document_id, "strategy": "recursive", "question": "Leave?", **knobs}
    assert client.post("/queries", json=body).status_code == 422


@pytest.mark.model
def test_llm_answer_with_citations_and_token_usage(settings, client, document_id, real_llm):
    settings.llm_base_url, settings.llm_model, settings.llm_max_tokens = real_llm.url, real_llm.model, 128
    response = _ask(client, document_id, "How much annual leave?", strategy="recursive")
    assert response.status_code == 201, response.text
    body = response.json()
    [chat] = real_llm.chats
    numbers = list(range(1, len(body["sources"]) + 1))
    assert body["answer_mode"] == "llm" and body["answer"] == chat.content.strip()
    # The citations are the valid [Source n] the model wrote; the token usage is the server's count.
    assert body["citations"] == parse_citations(chat.content, numbers)
    assert (body["token_usage"]["prompt_tokens"], body["token_usage"]["completion_tokens"]) == chat.usage
    assert chat.request.body["temperature"] == 0 and chat.request.body["max_tokens"] == 128
    prompt = chat.request.body["messages"][1]["content"]
    assert all(f"[Source {n}]" in prompt for n in numbers) and f"[Source {len(numbers) + 1}]" not in prompt


@pytest.mark.model
def test_unreachable_llm_is_503_on_queries_and_the_chatbot(settings, client, document_id):
    settings.llm_base_url, settings.llm_model = "http://127.0.0.1:9/v1", "fake-model"
    response = _ask(client, document_id, "How much annual leave?", strategy="recursive")
    assert (response.status_code, response.json()["error"]) == (503, "llm_unavailable")
    chat = client.post("/api/query", json={"question": "How much annual leave?"})
    assert chat.status_code == 503
    assert client.get("/api/health").json()["llm_connected"] is False


@pytest.mark.model
def test_chatbot_indexes_with_the_serving_configuration_and_answers(client):
    first = client.post("/api/index", files={"file": ("handbook.md", HANDBOOK.encode())})
    assert first.status_code == 200, first.text
    created = first.json()["chunks_created"]
    assert created > 0 and first.json()["status"] == "success"
    again = client.post("/api/index", files={"file": ("handbook.md", HANDBOOK.encode())}).json()
    assert again["chunks_created"] == created  # idempotent
    assert client.post("/api/index", files={"file": ("a.exe", b"MZ")}).status_code == 415

    answer = client.post("/api/query", json={"question": "What is the hotel limit per night?", "top_k": 2})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "150 euros" in body["answer"]
    assert len(body["sources"]) <= 2 and all(len(s["text"]) <= 200 for s in body["sources"])
    assert body["sources"][0]["source"] == "handbook.md" and body["latency_ms"] > 0
    health = client.get("/api/health").json()
    assert health["documents_indexed"] == created and health["llm_configured"] is False
    assert client.get("/admin/serving").json() == {
        "strategy": "recursive", "corpus_model_id": "all-MiniLM-L6-v2", "retriever": "hybrid", "top_k": 5,
        "rerank": "none", "candidate_k": None, "neighbor_prev": 0, "neighbor_next": 0, "parent_context": True,
    }  # fmt: skip


@pytest.mark.parametrize("body", [{"question": ""}, {"question": "x" * 4001}, {"question": "ok", "top_k": 21}])
def test_chatbot_query_validation_is_422(client, body):
    assert client.post("/api/query", json=body).status_code == 422


@pytest.mark.model
def test_chatbot_index_directory_refuses_escapes_and_indexes_a_folder(client, settings):
    assert client.post("/api/index-directory", json={"path": "../"}).status_code == 400
    folder = settings.data_dir / "docs"
    folder.mkdir(parents=True)
    (folder / "handbook.md").write_text(HANDBOOK)
    body = client.post("/api/index-directory", json={"path": "docs"}).json()
    assert body["status"] == "success" and body["chunks_created"] > 0


def test_serving_configuration_is_validated(client):
    assert client.put("/admin/serving", json={"strategy": "fixed_size", "corpus_model_id": "nope"}).status_code == 400
    updated = client.put("/admin/serving", json={"strategy": "fixed_size", "retriever": "dense", "top_k": 3})
    assert updated.status_code == 200 and client.get("/admin/serving").json()["strategy"] == "fixed_size"


@pytest.mark.model
def test_cli_query_prints_answer_sources_tree_and_latency(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "cli-data"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        (tmp_path / "handbook.md").write_text(HANDBOOK)
        assert runner.invoke(cli_app, ["ingest", str(tmp_path / "handbook.md")]).exit_code == 0
        processed = runner.invoke(
            cli_app,
            ["process", "handbook.md", "--strategies", "fixed_size", "--param", "fixed_size.chunk_size=40",
             "--param", "fixed_size.chunk_overlap=0"],
        )  # fmt: skip
        assert processed.exit_code == 0, processed.stdout
        result = runner.invoke(
            cli_app,
            ["query", "handbook.md", "--strategy", "fixed_size", "--prev", "1", "--next", "1", "--retriever", "hybrid",
             "What is the ticket code for broken equipment?"],
        )  # fmt: skip
        assert result.exit_code == 0, result.stdout
        assert "HW-7731" in result.stdout
        assert "Expansion Tree" in result.stdout and "latency:" in result.stdout and "prev #" in result.stdout
    finally:
        get_settings.cache_clear()


@pytest.mark.model
def test_parent_child_sources_carry_their_parent(client, document_id):
    processed = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"}, json={"strategies": ["semantic_parent_child"]}
    )
    assert processed.status_code == 200, processed.text
    body = _ask(client, document_id, "What is the hotel limit?", strategy="semantic_parent_child", top_k=2).json()
    children = [s for s in body["sources"] if s["role"] == "hit"]
    assert children and all(s["parent_text"] and s["text"] in s["parent_text"] for s in children)


@pytest.mark.model
def test_cross_encoder_rerank_through_the_api(settings, client, document_id, tiny_cross_encoder):
    settings.cross_encoder_model = str(tiny_cross_encoder)
    body = _ask(client, document_id, "Leave days?", strategy="recursive", rerank="cross_encoder", top_k=2).json()
    assert body["config"]["rerank"] == "cross_encoder" and len(body["sources"]) <= 2
    assert "rerank" in body["latency_breakdown"]


@pytest.mark.model
def test_llm_rerank_and_llm_contextual_prefixes(settings, client, document_id, real_llm):
    settings.llm_base_url, settings.llm_model, settings.llm_max_tokens = real_llm.url, real_llm.model, 128
    repairs_before = repair_counts().get("rerank", 0)
    body = _ask(client, document_id, "Hotel limit?", strategy="recursive", rerank="llm", top_k=2).json()
    assert body["answer_mode"] == "llm" and body["config"]["rerank"] == "llm"
    ranked, answered = real_llm.chats
    # The ranking came back under the server's schema grammar, and the answer's sources follow it.
    assert ranked.request.body["response_format"]["json_schema"]["name"] == "ranking"
    assert repair_counts().get("rerank", 0) == repairs_before
    listed = ranked.request.body["messages"][1]["content"].split("<passages>\n", 1)[1].split("\n</passages>", 1)[0]
    passages = re.split(r"(?:^|\n\n)\[\d+\] ", listed)[1:]
    order = parse_ranking(ranked.content, len(passages))
    assert [source["text"].strip()[:60] for source in body["sources"]] == [passages[i][:60] for i in order[:2]]
    assert answered.request.body["messages"] == rag_answer_messages(
        "Hotel limit?", [(n, source["text"]) for n, source in enumerate(body["sources"], start=1)]
    )

    processed = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"}, json={"strategies": ["contextual_retrieval"]}
    ).json()
    assert processed["completed"][0]["details"]["prefix_mode"] == "llm"
    preview = client.get(f"/admin/chunks/{document_id}", params={"strategy": "contextual_retrieval"}).json()
    assert all(c["text"] in HANDBOOK for c in preview["chunks"])
    # One prefix request per chunk, the model's reply written on one line.
    prefixed = real_llm.chats[2:]
    assert len(prefixed) == len(preview["chunks"])
    assert all(" ".join(chat.content.split()) for chat in prefixed)
