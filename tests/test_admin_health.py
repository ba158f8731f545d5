"""GET /admin/health through the real app: the database, embedded Qdrant and the LLM (the real llama.cpp server,
``real_llm``; the scripted fake only for a model list that lacks the configured model, a dead port for an
unreachable one)."""

from __future__ import annotations

from fake_openai import running_fake_openai
from real_llm import RecordingProxy


def test_health_without_an_llm_counts_collections_and_says_answers_are_extractive(settings, client):
    body = client.get("/admin/health").json()
    assert body["status"] == "ok"
    assert body["app"] == {"status": "ok", "ok": True, "detail": body["app"]["detail"]}
    dialect = "postgresql" if settings.sqlalchemy_url.startswith("postgresql") else "sqlite"
    assert body["database"]["status"] == "ok" and body["database"]["detail"].startswith(dialect)
    assert body["qdrant"]["status"] == "ok" and body["collections"] == 0
    assert "0 collections" in body["qdrant"]["detail"]
    assert body["llm"]["status"] == "not_configured" and body["llm"]["ok"] is True
    assert "extractive" in body["llm"]["detail"]

    created = client.post("/admin/qdrant/collections", json={"strategy": "recursive", "model_id": "all-MiniLM-L6-v2"})
    assert created.status_code == 201, created.text
    body = client.get("/admin/health").json()
    assert body["collections"] == 1 and "1 collection" in body["qdrant"]["detail"]


def test_a_reachable_llm_is_named_with_its_model(settings, client, real_llm: RecordingProxy):
    settings.llm_base_url, settings.llm_model = real_llm.url, real_llm.model
    body = client.get("/admin/health").json()
    assert body["status"] == "ok"
    assert body["llm"]["status"] == "reachable" and body["llm"]["ok"] is True
    # One model listing, no chat: the server lists the model it serves, so the detail names it without a "but".
    [listing] = real_llm.exchanges
    assert (listing.request.method, listing.request.path) == ("GET", "/v1/models") and real_llm.chats == []
    assert real_llm.model in [model["id"] for model in listing.response["data"]]
    assert body["llm"]["detail"] == f"{real_llm.url} answers, model '{real_llm.model}'"


def test_a_served_model_list_without_the_configured_model_is_said(settings, client):
    with running_fake_openai(models=["other-model"]) as server:
        settings.llm_base_url, settings.llm_model = server.url, "fake-model"
        body = client.get("/admin/health").json()
    assert body["llm"]["status"] == "reachable"
    assert "'fake-model' is not among its models" in body["llm"]["detail"] and "other-model" in body["llm"]["detail"]


def test_an_unreachable_llm_degrades_the_status_with_the_error(settings, client):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    settings.llm_base_url, settings.llm_model = "http://127.0.0.1:9/v1", "fake-model"
    response = client.get("/admin/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["llm"]["status"] == "unreachable" and body["llm"]["ok"] is False
    assert "http://127.0.0.1:9/v1" in body["llm"]["detail"]
    assert body["database"]["ok"] and body["qdrant"]["ok"]


def test_an_unreachable_qdrant_server_is_reported_not_raised(settings, client):
    settings.qdrant_url, settings.qdrant_timeout_s = "http://127.0.0.1:9", 2
    response = client.get("/admin/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["collections"] is None
    assert body["qdrant"]["status"] == "error" and body["qdrant"]["ok"] is False
    assert "http://127.0.0.1:9" in body["qdrant"]["detail"]
    assert body["database"]["ok"] and body["app"]["ok"]
