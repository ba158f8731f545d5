"""Chunks longer than the Corpus model's input window are flagged: MiniLM reads 256 word pieces, so the rest of a
longer chunk is never embedded. Counted with the model's own tokenizer; shown in processing diagnostics and the
Chunk Preview (real MiniLM, real app)."""

from __future__ import annotations

import pytest

from chunkbench.embedding.providers import get_provider
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.window import window_report
from chunkbench.text.tokens import count_tokens

MINILM = get_spec("all-MiniLM-L6-v2")
SENTENCE = "Annual leave requests are approved by the team lead within three working days of submission. "
LONG_DOCUMENT = "# Policy\n\n" + "\n\n".join(SENTENCE * 6 for _ in range(8))


@pytest.mark.model
def test_the_model_tokenizer_counts_word_pieces_against_the_models_window(settings):
    long_text, short_text = SENTENCE * 30, SENTENCE
    report = window_report(MINILM, [long_text, short_text], settings)
    model = get_provider(MINILM, settings).model
    assert report.window == model.max_seq_length == 256 and report.counted_with == "model tokenizer"
    assert report.token_counts == tuple(len(model.tokenizer(t)["input_ids"]) for t in (long_text, short_text))
    assert report.beyond == [True, False]
    summary = report.summary()
    unread = report.token_counts[0] - 256
    assert summary["chunks_beyond"] == 1 and summary["chunk_share"] == 0.5
    assert summary["token_share"] == round(unread / sum(report.token_counts), 4)


@pytest.mark.model
def test_processing_diagnostics_and_chunk_preview_flag_chunks_beyond_the_window(client):
    document = client.post("/documents", files={"file": ("policy.md", LONG_DOCUMENT.encode())}).json()["document"]
    process = {
        "strategies": ["fixed_size", "recursive"],
        "params": {"fixed_size": {"chunk_size": 512, "chunk_overlap": 0}, "recursive": {"chunk_size": 100}},
    }
    result = client.post(f"/documents/{document['id']}/process", params={"wait": "true"}, json=process).json()
    window = {o["strategy"]: o["diagnostics"]["window"] for o in result["completed"]}
    # 512 cl100k tokens of English are well over 256 word pieces; 100-token chunks never are.
    assert window["fixed_size"]["window_tokens"] == 256 and window["fixed_size"]["chunks_beyond"] >= 1
    assert window["fixed_size"]["token_share"] > 0.3
    assert window["recursive"]["chunks_beyond"] == 0 and window["recursive"]["token_share"] == 0.0

    preview = client.get(f"/admin/chunks/{document['id']}", params={"strategy": "fixed_size"}).json()
    assert preview["window_tokens"] == 256
    for chunk in preview["chunks"]:
        assert chunk["beyond_window"] is (chunk["model_tokens"] > 256)
        assert chunk["model_tokens"] > count_tokens(chunk["text"]) * 0.8  # word pieces, not cl100k tokens
    assert sum(c["beyond_window"] for c in preview["chunks"]) == window["fixed_size"]["chunks_beyond"]
    runs = client.get(f"/documents/{document['id']}/runs").json()
    assert all("window" in run["diagnostics"] for run in runs)


@pytest.mark.model
def test_the_technical_report_shows_the_share_beyond_the_window(client):
    document = client.post("/documents", files={"file": ("policy.md", LONG_DOCUMENT.encode())}).json()["document"]
    process = {"strategies": ["fixed_size"], "params": {"fixed_size": {"chunk_size": 512, "chunk_overlap": 0}}}
    processed = client.post(f"/documents/{document['id']}/process", params={"wait": "true"}, json=process).json()
    window = processed["completed"][0]["diagnostics"]["window"]
    question = {"id": "q", "question": "Who approves leave requests?", "references": [{"content": SENTENCE.strip()}]}
    body = {"document_id": document["id"], "questions": [question], "strategies": ["fixed_size"]}
    experiment = client.post("/benchmarks", params={"wait": "true"}, json=body).json()
    assert experiment["provenance"]["strategy_runs"]["fixed_size"]["window"] == window
    page = client.get(f"/benchmarks/{experiment['id']}/report", params={"view": "technical"}).text
    shares = f"{round(window['chunk_share'] * 100)}% of chunks, {round(window['token_share'] * 100)}% of tokens"
    assert f"{shares} (window 256)" in page
