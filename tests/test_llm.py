"""LLM domain: the real ``openai`` client against the real llama.cpp server (``real_llm``) and, for the failures it
cannot be made to give, a scripted fake; prompts, the extractive answerer
with the real MiniLM, answer dispatch, and the LLM context prefixer."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from chunkbench.chunking.base import ChunkingInput
from chunkbench.chunking.strategies.contextual_retrieval import ContextualRetrievalStrategy
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import get_spec
from chunkbench.errors import LlmError, LlmUnavailableError
from chunkbench.indexing.contextual import LlmContextPrefixer, make_prefixer
from chunkbench.llm.answer import generate_answer, parse_citations
from chunkbench.llm.client import LlmClient, get_llm_client
from chunkbench.llm.extractive import NOT_ENOUGH_INFORMATION, ExtractiveAnswerer, answer_extractively
from chunkbench.llm.prompts import (
    contextual_document_part,
    contextual_messages,
    judge_messages,
    rag_answer_messages,
)
from chunkbench.models import DocumentTree, NodeType, TreeNode
from fake_openai import FakeOpenAI, Reply, running_fake_openai
from real_llm import RecordingProxy


def llm_settings(tmp_path: Path, url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {"llm_base_url": url, "llm_model": "fake-model", "llm_max_retries": 2}
    values.update(overrides)
    return Settings(_env_file=None, data_dir=tmp_path / "data", **values)


# The openai client retries and sleeps for real (it has no sleep hook): a failing reply that should not cost a
# backoff asks for 1 ms with ``retry-after-ms``, which the client honours before retrying.
NO_WAIT = {"retry-after-ms": "1"}


def gaps_s(server: FakeOpenAI) -> list[float]:
    """Seconds between consecutive chat requests as the server received them."""
    times = [request.received_at for request in server.chat_requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as running:
        yield running


# --------------------------------------------------------------------------- client


def test_chat_returns_text_usage_and_sends_temperature_zero(real_llm: RecordingProxy, tmp_path: Path) -> None:
    client = LlmClient(llm_settings(tmp_path, real_llm.url, llm_model=real_llm.model, llm_api_key=""))
    result = client.chat([{"role": "user", "content": "Capital of France?"}])
    (chat,) = real_llm.chats
    # The model's reply, trimmed, and the server's own token counts.
    assert result.text and result.text == chat.content.strip()
    assert (result.prompt_tokens, result.completion_tokens, result.attempts) == (*chat.usage, 1)
    assert result.model == real_llm.model and result.latency_ms > 0
    request = chat.request
    assert request.body is not None
    assert request.body["temperature"] == 0
    assert request.body["model"] == real_llm.model
    assert request.body["max_tokens"] == 1024
    assert request.body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    # No key configured: a dummy one is sent, local servers ignore it.
    assert request.headers["authorization"] == "Bearer not-needed"


def test_chat_passes_response_format_and_reports_missing_usage_as_zero(
    server: FakeOpenAI,
    tmp_path: Path,
) -> None:
    server.script(Reply(content='{"ranking": [2, 1]}', usage=None))
    client = LlmClient(llm_settings(tmp_path, server.url, llm_api_key="sk-test"))
    result = client.chat([{"role": "user", "content": "x"}], response_format={"type": "json_object"}, max_tokens=50)
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)
    body = server.chat_requests[0].body
    assert body is not None and body["response_format"] == {"type": "json_object"} and body["max_tokens"] == 50
    assert server.chat_requests[0].headers["authorization"] == "Bearer sk-test"


def test_429_with_retry_after_and_500_are_retried(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(
        Reply(status=429, error_message="slow down", headers={"Retry-After": "1"}),
        Reply(status=500, error_message="boom"),
        Reply(content="finally"),
    )
    result = LlmClient(llm_settings(tmp_path, server.url)).chat([{"role": "user", "content": "q"}])
    assert result.text == "finally" and result.attempts == 3
    assert len(server.chat_requests) == 3
    # Before: the recorded sleeps were exactly [2.0, backoff] with 0.02 <= backoff <= 0.05, from the client's own
    # Retry-After parser and its backoff_base_s/backoff_max_s knobs. The openai client now retries and sleeps for
    # real, so the spacing of the requests at the server is what is pinned: the retry after ``Retry-After: 1``
    # came at least ~1 s later (the client's own first backoff is at most 0.5 s, so this is the header at work),
    # and the 500 without the header was retried after a backoff, not at once. Lower bounds only: a slow machine
    # may wait longer.
    after_retry_after, after_backoff = gaps_s(server)
    assert after_retry_after >= 0.9
    assert after_backoff >= 0.2


def test_retry_after_beyond_the_clients_limit_is_not_waited_for(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply(status=429, error_message="quota", headers={"Retry-After": "3600"}), Reply(content="ok"))
    client = LlmClient(llm_settings(tmp_path, server.url))
    outcome: list[BaseException | object] = []

    def call() -> None:
        try:
            outcome.append(client.chat([{"role": "user", "content": "q"}]))
        except LlmUnavailableError as exc:
            outcome.append(exc)

    # Before: a retry_after_max_s=5 knob capped the wait, the recorded sleeps were [5.0] and the second try got the
    # 200. The openai client does not wait out a Retry-After beyond its limit (two minutes): it does not retry at
    # all, so the call raises at once, after one request, and says the server wants a longer wait. Run in a thread
    # so that a client that did wait the hour fails this test instead of hanging it.
    worker = threading.Thread(target=call, daemon=True)
    started = time.perf_counter()
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the client waited for a Retry-After of an hour"
    assert time.perf_counter() - started < 5
    (error,) = outcome
    assert isinstance(error, LlmUnavailableError) and error.details["attempts"] == 1
    assert "Retry-After: 3600" in error.message and "try again later" in error.message
    assert len(server.chat_requests) == 1


def test_retries_exhausted_is_503_with_url_and_model(server: FakeOpenAI, tmp_path: Path) -> None:
    server.responder = lambda body: Reply(status=503, error_message="overloaded", headers=NO_WAIT)
    client = LlmClient(llm_settings(tmp_path, server.url, llm_max_retries=2))
    with pytest.raises(LlmUnavailableError) as caught:
        client.chat([{"role": "user", "content": "q"}])
    assert caught.value.status_code == 503
    # Before: also ``len(sleeps) == 2``, the client's own sleep hook, which is gone with its retry loop. The bound
    # is the requests that reached the server: llm_max_retries=2 is exactly 3.
    assert len(server.chat_requests) == 3
    assert server.url in caught.value.message and "fake-model" in caught.value.message
    assert "overloaded" in caught.value.message and "3 attempts" in caught.value.message
    assert caught.value.details["attempts"] == 3


def test_exhausted_rate_limit_says_so(server: FakeOpenAI, tmp_path: Path) -> None:
    server.responder = lambda body: Reply(status=429, error_message="quota", headers=NO_WAIT)
    with pytest.raises(LlmUnavailableError, match="rate-limiting"):
        LlmClient(llm_settings(tmp_path, server.url, llm_max_retries=1)).chat([{"role": "user", "content": "q"}])


def test_timeout_is_retried_then_succeeds_or_gives_503(server: FakeOpenAI, tmp_path: Path) -> None:
    settings = llm_settings(tmp_path, server.url, llm_timeout_s=0.3, llm_max_retries=1)
    server.script(Reply(delay_s=1.0), Reply(content="second try"))
    result = LlmClient(settings).chat([{"role": "user", "content": "q"}])
    assert result.text == "second try" and result.attempts == 2

    server.script(Reply(delay_s=1.0), Reply(delay_s=1.0))
    started = time.perf_counter()
    with pytest.raises(LlmUnavailableError, match=r"no answer within 0.3 s.*LLM_TIMEOUT_S"):
        LlmClient(settings).chat([{"role": "user", "content": "q"}])
    assert time.perf_counter() - started < 1.5


def test_unknown_model_404_is_502_with_the_server_message(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply(status=404, error_message="model 'nope' not found, try pulling it first"))
    with pytest.raises(LlmError) as caught:
        LlmClient(llm_settings(tmp_path, server.url, llm_model="nope")).chat([{"role": "user", "content": "q"}])
    assert type(caught.value) is LlmError and caught.value.status_code == 502
    assert "model 'nope' not found, try pulling it first" in caught.value.message
    assert "CHUNKBENCH_LLM_MODEL" in caught.value.message
    assert len(server.chat_requests) == 1  # a 404 is not retried


def test_400_is_not_retried_and_empty_content_is_an_error(server: FakeOpenAI, tmp_path: Path) -> None:
    client = LlmClient(llm_settings(tmp_path, server.url))
    server.script(Reply(status=400, error_message="context length exceeded"))
    with pytest.raises(LlmError, match="context length exceeded"):
        client.chat([{"role": "user", "content": "q"}])
    server.script(Reply(content=None))
    with pytest.raises(LlmError, match="empty answer") as caught:
        client.chat([{"role": "user", "content": "q"}])
    assert caught.value.status_code == 502
    assert len(server.chat_requests) == 2


def unused_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_connection_refused_is_503_after_retries(tmp_path: Path) -> None:
    url = unused_port_url()
    client = LlmClient(llm_settings(tmp_path, url, llm_max_retries=1))
    with pytest.raises(LlmUnavailableError, match="connection failed") as caught:
        client.chat([{"role": "user", "content": "q"}])
    assert url in caught.value.message and "CHUNKBENCH_LLM_BASE_URL" in caught.value.message
    # Before: ``len(sleeps) == 1``, the client's own sleep hook, gone with its retry loop. No server here counts
    # requests, so the error's attempt count is pinned: llm_max_retries=1 is 2 attempts.
    assert caught.value.details["attempts"] == 2 and "2 attempts" in caught.value.message


def test_health_lists_models_and_never_raises(server: FakeOpenAI, tmp_path: Path) -> None:
    server.models = ["other", "fake-model"]
    health = LlmClient(llm_settings(tmp_path, server.url)).health()
    assert health == {"ok": True, "models": ["fake-model", "other"], "model_available": True, "error": None}
    assert server.requests[-1].method == "GET" and server.requests[-1].path == "/v1/models"

    server.models_status = 500
    failing = LlmClient(llm_settings(tmp_path, server.url)).health()
    assert failing["ok"] is False and failing["models"] == [] and "models listing failed" in failing["error"]

    down = LlmClient(llm_settings(tmp_path, unused_port_url())).health()
    assert down["ok"] is False and down["error"]


def test_get_llm_client_is_none_without_configuration_and_cached_otherwise(tmp_path: Path) -> None:
    assert get_llm_client(Settings(_env_file=None, data_dir=tmp_path)) is None
    assert get_llm_client(Settings(_env_file=None, data_dir=tmp_path, llm_base_url="http://x/v1")) is None
    configured = llm_settings(tmp_path, "http://127.0.0.1:9/v1")
    client = get_llm_client(configured)
    assert client is not None and client is get_llm_client(llm_settings(tmp_path, "http://127.0.0.1:9/v1"))
    assert get_llm_client(llm_settings(tmp_path, "http://127.0.0.1:9/v1", llm_model="other")) is not client
    # A key alone means the OpenAI API itself.
    openai_settings = Settings(_env_file=None, data_dir=tmp_path, llm_api_key="sk-x", llm_model="gpt-4o-mini")
    openai_client = get_llm_client(openai_settings)
    assert openai_client is not None and openai_client.base_url == "https://api.openai.com/v1"


# --------------------------------------------------------------------------- prompts


def test_rag_prompt_numbers_the_context_and_asks_for_citations() -> None:
    messages = rag_answer_messages("How much did revenue grow?", [(1, "Revenue grew 12%."), (2, "Costs fell.")])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "[Source n]" in messages[0]["content"] and NOT_ENOUGH_INFORMATION in messages[0]["content"]
    user = messages[1]["content"]
    assert "[Source 1]\nRevenue grew 12%." in user and "[Source 2]\nCosts fell." in user
    assert user.index("[Source 1]") < user.index("[Source 2]") < user.index("Question: How much did revenue grow?")


def test_contextual_and_judge_prompts() -> None:
    (message,) = contextual_messages(contextual_document_part("Whole doc."), "A chunk.")
    assert message["content"].startswith("<document>\nWhole doc.\n</document>\n")
    assert "<chunk>\nA chunk.\n</chunk>" in message["content"]
    assert message["content"].endswith("Answer only with the succinct context and nothing else.")

    judge = judge_messages("q?", "expected", "generated [Source 1]", ["ctx one"])
    for key in ("context_relevance", "answer_similarity", "faithfulness", "hallucination", "reasoning"):
        assert key in judge[0]["content"]
    assert "[Source 1] ctx one" in judge[1]["content"] and "expected" in judge[1]["content"]


def test_parse_citations_keeps_valid_numbers_in_order() -> None:
    text = "A [Source 3]. B [Source 1, 3] and [Sources 2 and 9]. C [source 1][Source 12]"
    assert parse_citations(text, [1, 2, 3]) == [3, 1, 2]


# --------------------------------------------------------------------------- extractive answerer (real MiniLM)


@pytest.fixture(scope="session")
def minilm_embed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[list[str]], np.ndarray]:
    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("llm") / "data")
    spec = get_spec("all-MiniLM-L6-v2")
    return lambda texts: roles.embed_texts(spec, texts, "document", settings)


PASSAGES = [
    (
        1,
        "The company was founded in 1998 in Oslo. Its headquarters moved to Bergen in 2005. "
        "The office has a rooftop garden.",
    ),
    (
        2,
        "# Finance\n\nIn 2023 the annual revenue was 4.2 million euros. Most of the revenue came from licences. "
        "The cafeteria serves lunch at noon.",
    ),
    (3, "Invoice INV-7731 was paid on 3 March. Invoice INV-7732 is still open."),
]


@pytest.mark.model
def test_extractive_picks_the_answer_sentence_and_cites_its_source(minilm_embed: Callable) -> None:
    answer = answer_extractively("What was the annual revenue in 2023?", PASSAGES, minilm_embed)
    assert answer.mode == "extractive"
    assert answer.text.startswith("In 2023 the annual revenue was 4.2 million euros [Source 2].")
    assert answer.citations[0] == 2
    assert "cafeteria" not in answer.text and "rooftop" not in answer.text
    assert all(s["score"] > 0 for s in answer.sentences)


@pytest.mark.model
def test_extractive_lexical_bonus_separates_exact_ids(minilm_embed: Callable) -> None:
    answer = answer_extractively("Is invoice INV-7732 paid?", PASSAGES, minilm_embed)
    assert answer.citations == [3]
    assert answer.sentences[0]["text"] in ("Invoice INV-7732 is still open.", "Invoice INV-7731 was paid on 3 March.")
    assert "INV-7732 is still open" in answer.text


@pytest.mark.model
def test_extractive_keeps_document_order_within_a_source(minilm_embed: Callable) -> None:
    passages = [
        (
            4,
            "The Falcon drone has a flight time of 40 minutes. The drone is sold in red. "
            "The Falcon drone battery charges in 90 minutes.",
        )
    ]
    answer = answer_extractively(
        "What is the Falcon drone flight time and battery charging time?", passages, minilm_embed
    )
    texts = [s["text"] for s in answer.sentences]
    assert "The Falcon drone has a flight time of 40 minutes." in texts
    assert "The Falcon drone battery charges in 90 minutes." in texts
    assert texts.index("The Falcon drone has a flight time of 40 minutes.") < texts.index(
        "The Falcon drone battery charges in 90 minutes."
    )
    assert answer.text.count("[Source 4]") == len(texts)


@pytest.mark.model
def test_extractive_drops_duplicates_from_overlapping_passages(minilm_embed: Callable) -> None:
    sentence = "The warranty period for the X200 printer is two years."
    passages = [(1, f"Printers ship worldwide. {sentence}"), (2, f"{sentence} Toner is sold separately.")]
    answer = answer_extractively("How long is the X200 printer warranty?", passages, minilm_embed)
    assert [s["text"] for s in answer.sentences].count(sentence) == 1
    assert answer.citations[0] == 1


@pytest.mark.model
def test_extractive_says_not_enough_information(minilm_embed: Callable) -> None:
    irrelevant = [(1, "Photosynthesis converts light into chemical energy in plants. Chlorophyll is green.")]
    answer = answer_extractively("Who won the 1966 football World Cup final?", irrelevant, minilm_embed)
    assert answer.text == NOT_ENOUGH_INFORMATION and answer.citations == [] and answer.sentences == []
    assert answer_extractively("Anything?", [], minilm_embed).text == NOT_ENOUGH_INFORMATION


@pytest.mark.model
def test_extractive_sentences_are_cached_per_passage_and_word_minimum(minilm_embed: Callable) -> None:
    # The answerer keeps each passage's sentences across questions; the cache must not mix word minimums.
    passage = [(1, "# Warranty\n\nWarranty. The X200 printer has a two-year warranty. Toner is sold separately.")]
    embedded: list[list[str]] = []

    def recording(texts: list[str]) -> np.ndarray:
        embedded.append(list(texts))
        return minilm_embed(texts)

    question = "How long is the X200 printer warranty?"
    first = ExtractiveAnswerer(recording).answer(question, passage)
    again = ExtractiveAnswerer(recording).answer(question, passage)
    ExtractiveAnswerer(recording, min_words=1).answer(question, passage)
    sentences = ["The X200 printer has a two-year warranty.", "Toner is sold separately."]
    assert embedded == [[question, *sentences], [question, *sentences], [question, "Warranty", "Warranty.", *sentences]]
    assert first == again and first.citations == [1]
    assert first.text == "The X200 printer has a two-year warranty [Source 1]."


# --------------------------------------------------------------------------- generate_answer


def refuse_embedding(texts: list[str]) -> np.ndarray:
    raise AssertionError("the embedder must not be called")


def test_generate_answer_with_a_client_uses_the_rag_prompt(real_llm: RecordingProxy, tmp_path: Path) -> None:
    client = LlmClient(llm_settings(tmp_path, real_llm.url, llm_model=real_llm.model))
    result = generate_answer("Revenue in 2023?", PASSAGES, client=client, embed=refuse_embedding, max_tokens=64)
    (chat,) = real_llm.chats
    assert result.mode == "llm" and result.text == chat.content.strip()
    # Citations are the valid [Source n] the model wrote, first first; token usage is the server's.
    assert result.citations == parse_citations(chat.content, [1, 2, 3])
    assert (result.prompt_tokens, result.completion_tokens) == chat.usage
    body = chat.request.body
    assert body is not None and body["temperature"] == 0 and body["max_tokens"] == 64
    assert body["messages"] == rag_answer_messages("Revenue in 2023?", PASSAGES)
    assert "[Source 3]\nInvoice INV-7731" in body["messages"][1]["content"]


@pytest.mark.model
def test_generate_answer_without_a_client_is_extractive(minilm_embed: Callable) -> None:
    result = generate_answer("What was the annual revenue in 2023?", PASSAGES, client=None, embed=minilm_embed)
    assert result.mode == "extractive" and result.citations[0] == 2 and "[Source 2]" in result.text
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)


def test_generate_answer_without_passages_calls_nothing(real_llm: RecordingProxy, tmp_path: Path) -> None:
    client = LlmClient(llm_settings(tmp_path, real_llm.url, llm_model=real_llm.model))
    for passages in ([], [(1, "   ")]):
        result = generate_answer("q?", passages, client=client, embed=refuse_embedding)
        assert (result.text, result.mode, result.citations) == (NOT_ENOUGH_INFORMATION, "none", [])
    assert real_llm.requests == []


# --------------------------------------------------------------------------- contextual prefixer


def test_llm_prefixer_sends_the_document_as_the_same_prefix_for_every_chunk(
    real_llm: RecordingProxy,
    tmp_path: Path,
) -> None:
    markdown = "Acme annual report 2023.\n\n" + "\n\n".join(
        f"Paragraph {n} talks about topic {n} in some detail, with enough words to fill a chunk." for n in range(4)
    )
    document = ChunkingInput(
        "doc1",
        "report.md",
        markdown,
        DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(markdown))),
    )
    client = LlmClient(llm_settings(tmp_path, real_llm.url, llm_model=real_llm.model))
    prefixer = LlmContextPrefixer(client, max_tokens=32)
    strategy = ContextualRetrievalStrategy(
        ContextualRetrievalStrategy.params_model(chunk_size=40, chunk_overlap=0), prefixer=prefixer
    )
    chunks = strategy.chunk(document)
    assert len(chunks) >= 3 and strategy.run_details() == {"prefix_mode": "llm"}

    chats = real_llm.chats  # sequential: one request per chunk, in the chunks' order
    assert len(chats) == len(chunks)
    prefix = contextual_document_part(markdown)
    for chat, chunk in zip(chats, chunks, strict=True):
        assert chat.request.body is not None
        (message,) = chat.request.body["messages"]
        assert message["content"].startswith(prefix)
        assert f"<chunk>\n{chunk.text}\n</chunk>" in message["content"]
        assert chat.request.body["temperature"] == 0 and chat.request.body["max_tokens"] == 32
        # The model's reply on one line, then the chunk.
        assert chunk.enriched_content == f"{' '.join(chat.content.split())}\n\n{chunk.text}"
    assert prefixer.prompt_tokens == sum(chat.usage[0] for chat in chats)
    assert prefixer.completion_tokens == sum(chat.usage[1] for chat in chats)


def test_llm_prefixer_failure_propagates(server: FakeOpenAI, tmp_path: Path) -> None:
    server.responder = lambda body: Reply(status=500)
    prefixer = LlmContextPrefixer(LlmClient(llm_settings(tmp_path, server.url, llm_max_retries=0)))
    document = ChunkingInput(
        "doc1", "d.md", "Some text here.", DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=15))
    )
    strategy = ContextualRetrievalStrategy(prefixer=prefixer)
    with pytest.raises(LlmUnavailableError):
        strategy.chunk(document)


def test_make_prefixer_needs_configuration(tmp_path: Path) -> None:
    assert make_prefixer(Settings(_env_file=None, data_dir=tmp_path)) is None
    prefixer = make_prefixer(llm_settings(tmp_path, "http://127.0.0.1:9/v1"))
    assert isinstance(prefixer, LlmContextPrefixer) and prefixer.mode == "llm"
