"""GET /admin/capabilities through the real app: what the forms may offer (rerankers, the judge, the LLM), each
option that cannot work with its reason and the setting that enables it. A reachable LLM is the real llama.cpp
server (``real_llm``); one that does not answer is a dead port."""

from __future__ import annotations

from real_llm import RecordingProxy

LLM_SETTING = "CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL"


def test_without_a_model_or_an_llm_only_plain_retrieval_is_offered(client):
    body = client.get("/admin/capabilities").json()
    assert body["rerankers"]["none"]["available"] is True
    cross = body["rerankers"]["cross_encoder"]
    assert cross["available"] is False and cross["setting"] == "CHUNKBENCH_CROSS_ENCODER_MODEL"
    assert "No cross-encoder is configured: set CHUNKBENCH_CROSS_ENCODER_MODEL" in cross["detail"]
    for option in (body["llm"], body["judge"], body["rerankers"]["llm"]):
        assert option["available"] is False and option["setting"] == LLM_SETTING
        assert "No LLM configured" in option["detail"]
    assert body["judge"]["detail"].startswith("The LLM-as-judge needs an LLM.")
    assert body["rerankers"]["llm"]["detail"].startswith("LLM listwise reranking needs an LLM.")


def test_a_cross_encoder_folder_makes_it_available_and_a_missing_folder_says_so(settings, client, tiny_cross_encoder):
    settings.cross_encoder_model = str(tiny_cross_encoder)
    cross = client.get("/admin/capabilities").json()["rerankers"]["cross_encoder"]
    assert cross == {"available": True, "detail": f"The CrossEncoder in the folder {tiny_cross_encoder}.",
                     "setting": None}  # fmt: skip

    missing = tiny_cross_encoder.parent / "not-there"
    settings.cross_encoder_model = str(missing)
    cross = client.get("/admin/capabilities").json()["rerankers"]["cross_encoder"]
    assert cross["available"] is False and f"names the folder {missing}, which does not exist" in cross["detail"]

    # A hub name cannot be checked offline: it is offered, saying where it will come from.
    settings.cross_encoder_model = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    cross = client.get("/admin/capabilities").json()["rerankers"]["cross_encoder"]
    assert cross["available"] is True and "Hugging Face hub" in cross["detail"]


def test_a_reachable_llm_enables_the_judge_and_llm_reranking(settings, client, real_llm: RecordingProxy):
    settings.llm_base_url, settings.llm_model = real_llm.url, real_llm.model
    body = client.get("/admin/capabilities").json()
    # One model listing decides all three; nothing is generated to find out.
    assert [(r.method, r.path) for r in real_llm.requests] == [("GET", "/v1/models")] and real_llm.chats == []
    served = f"{real_llm.url} answers, model '{real_llm.model}'"
    assert body["llm"] == {"available": True, "detail": served, "setting": None}
    for feature, option in (("The LLM-as-judge", body["judge"]), ("LLM listwise reranking", body["rerankers"]["llm"])):
        assert option == {"available": True, "detail": f"{feature}: {served}.", "setting": None}


def test_an_llm_that_does_not_answer_is_not_offered(settings, client):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    settings.llm_base_url, settings.llm_model = "http://127.0.0.1:9/v1", "fake-model"
    body = client.get("/admin/capabilities").json()
    for option in (body["llm"], body["judge"], body["rerankers"]["llm"]):
        assert option["available"] is False and option["setting"] == LLM_SETTING
        assert "The configured LLM does not answer" in option["detail"] and "127.0.0.1:9" in option["detail"]
