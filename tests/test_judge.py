"""LLM-as-judge: the tolerant verdict parser on malformed replies, and judge() through the real LLM client: against
the real llama.cpp server (``real_llm``: schema-constrained verdicts, their bookkeeping) and, for what a real model
cannot be made to do, the scripted fake (JSON mode without schemas, corrective retries, failures counted, scores
that vary between repeats, transport errors)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkbench.config import Settings
from chunkbench.errors import LlmUnavailableError
from chunkbench.evaluation.judge import (
    MAX_SCORE,
    MIN_SCORE,
    SCORE_KEYS,
    VERDICT_SCHEMA,
    JudgeParseError,
    JudgeVerdict,
    judge,
    parse_verdict,
)
from chunkbench.llm.client import LlmClient
from fake_openai import FakeOpenAI, Reply, running_fake_openai
from real_llm import RecordingProxy

GOOD = {"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, "hallucination": False, "reasoning": "ok"}


def verdict_json(**changes: Any) -> str:
    return json.dumps(GOOD | changes)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as running:
        yield running


def make_client(tmp_path: Path, url: str, retries: int = 0, model: str = "fake-model") -> LlmClient:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", llm_base_url=url, llm_model=model,
                        llm_max_retries=retries)  # fmt: skip
    return LlmClient(settings)


def run_judge(client: LlmClient, **kwargs: Any) -> JudgeVerdict:
    return judge(
        client,
        question="What is the capital of France?",
        expected_answer="Paris",
        answer="Paris is the capital. [Source 1]",
        contexts=["Paris is the capital of France.", "Lyon is a city."],
        **kwargs,
    )


# --------------------------------------------------------------------------- parse_verdict


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (verdict_json(), (8, 7, 9, False, "ok")),
        # Fenced, with prose around it and a trailing comma.
        (
            'Here is my evaluation:\n```json\n{"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9,'
            ' "hallucination": false, "reasoning": "fine",}\n```\nLet me know if you need more.',
            (8, 7, 9, False, "fine"),
        ),
        # Prose around a bare object.
        ('Sure! {"context_relevance": 6, "answer_similarity": 5, "faithfulness": 4, "hallucination": true} Done.',
         (6, 5, 4, True, "")),
        # Single quotes, keys in another case and spelling, scores as strings in several forms.
        (
            "{'Context Relevance': '8/10', 'Answer-Similarity': '4/5', 'FAITHFULNESS': '9 out of 10', "
            "'Hallucination': 'yes', 'Reasoning': \"it's supported\"}",
            (8, 8, 9, True, "it's supported"),
        ),
        # Floats round half up; 0 clamps to 1; 0/1 as the flag.
        ('{"context_relevance": 7.5, "answer_similarity": 0, "faithfulness": 10.0, "hallucination": 0}',
         (8, 1, 10, False, "")),
        # Python literals and unquoted keys.
        ("{'context_relevance': 3, 'answer_similarity': 2, 'faithfulness': 1, 'hallucination': True, "
         "'reasoning': None}", (3, 2, 1, True, "")),
        ('{context_relevance: 8, answer_similarity: 7, faithfulness: 9, hallucination: "No", reasoning: "x"}',
         (8, 7, 9, False, "x")),
        # Scores nested one level, and as {"score": n}.
        ('{"scores": {"context_relevance": {"score": 8}, "answer_similarity": 7, "faithfulness": 9},'
         ' "hallucination": "false", "explanation": "nested"}', (8, 7, 9, False, "nested")),
        # No JSON at all: key: value lines in markdown.
        ("**Context relevance**: 8/10\n- Answer similarity: 7\nFaithfulness = 9\nHallucination: no\nReasoning: fine",
         (8, 7, 9, False, "fine")),
        # Cut short by max_tokens: the complete pairs are kept.
        ('{"context_relevance": 8, "answer_similarity": "7", "faithfulness": 9, "hallucination": false, "reason',
         (8, 7, 9, False, "")),
        # Braces inside the reasoning string do not end the object.
        ('{"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, "hallucination": false, '
         '"reasoning": "a {b} c }"} trailing', (8, 7, 9, False, "a {b} c }")),
    ],
)  # fmt: skip
def test_parse_verdict_repairs(reply: str, expected: tuple[int, int, int, bool, str]) -> None:
    verdict = parse_verdict(reply)
    assert (
        verdict["context_relevance"],
        verdict["answer_similarity"],
        verdict["faithfulness"],
        verdict["hallucination"],
        verdict["reasoning"],
    ) == expected
    assert all(type(verdict[key]) is int for key in ("context_relevance", "answer_similarity", "faithfulness"))


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "the reply is empty"),
        ("I cannot evaluate this answer.", "holds no JSON object"),
        ('{"context_relevance": 8, "answer_similarity": 7}', "missing keys: faithfulness, hallucination"),
        (verdict_json(faithfulness=None) .replace('"faithfulness": null, ', ""), "missing key: faithfulness"),
        # Out of range above 10 or below 0 is an error, never clamped: the scale is unknown.
        (verdict_json(context_relevance=85), "context_relevance must be from 1 to 10, got 85"),
        (verdict_json(faithfulness=-2), "faithfulness must be from 1 to 10, got -2"),
        (verdict_json(answer_similarity="high"), "answer_similarity must be a number from 1 to 10, got 'high'"),
        (verdict_json(answer_similarity=True), "answer_similarity must be a number"),
        (verdict_json(hallucination="maybe"), "hallucination must be true or false, got 'maybe'"),
        ('{"context_relevance": 8, "answer_sim', "missing keys: answer_similarity, faithfulness, hallucination"),
    ],
)  # fmt: skip
def test_parse_verdict_names_what_is_wrong(reply: str, message: str) -> None:
    with pytest.raises(JudgeParseError, match=message) as raised:
        parse_verdict(reply)
    assert isinstance(raised.value, ValueError)


def test_parse_verdict_reports_every_invalid_value_at_once() -> None:
    with pytest.raises(JudgeParseError) as raised:
        parse_verdict(verdict_json(context_relevance=11, hallucination="perhaps"))
    assert "context_relevance must be from 1 to 10" in str(raised.value)
    assert "hallucination must be true or false" in str(raised.value)


# --------------------------------------------------------------------------- judge()


def test_the_real_models_verdicts_are_its_replies_parsed_and_counted(real_llm: RecordingProxy, tmp_path: Path) -> None:
    verdict = run_judge(make_client(tmp_path, real_llm.url, model=real_llm.model), repeats=2)
    first, second = real_llm.chats
    samples = [parse_verdict(chat.content) for chat in (first, second)]
    # Schema-constrained: every reply parses as it is, no retry, no repair; the figures are the replies'.
    assert (verdict.repeats, verdict.successful_repeats, verdict.attempts, verdict.failures) == (2, 2, 2, 0)
    assert verdict.ok and verdict.error is None and verdict.model == real_llm.model
    for key in SCORE_KEYS:
        mean = (samples[0][key] + samples[1][key]) / 2
        assert getattr(verdict, key) == pytest.approx(mean) and MIN_SCORE <= mean <= MAX_SCORE
    assert verdict.hallucination_rate == (samples[0]["hallucination"] + samples[1]["hallucination"]) / 2
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (
        first.usage[0] + second.usage[0],
        first.usage[1] + second.usage[1],
    )
    for chat in (first, second):
        assert chat.request.body is not None and chat.request.body["temperature"] == 0
        assert chat.request.body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA.schema
        user = json.loads(chat.request.body["messages"][1]["content"])
        assert user["retrieved_context"] == ["[Source 1] Paris is the capital of France.", "[Source 2] Lyon is a city."]


def test_judge_sends_json_mode_to_a_server_without_schemas(server: FakeOpenAI, tmp_path: Path) -> None:
    # The fake answers no llama.cpp /props: the client sends the plain JSON mode and the prompt's instructions.
    server.script(Reply(content=verdict_json(), usage=(300, 40)))
    verdict = run_judge(make_client(tmp_path, server.url))
    assert (verdict.context_relevance, verdict.answer_similarity, verdict.faithfulness) == (8.0, 7.0, 9.0)
    assert verdict.hallucination is False and verdict.hallucination_rate == 0.0
    assert (verdict.attempts, verdict.failures, verdict.error, verdict.ok) == (1, 0, None, True)
    assert (verdict.prompt_tokens, verdict.completion_tokens, verdict.model) == (300, 40, "fake-model")
    assert verdict.spread == {} and verdict.reasoning == "ok"
    (request,) = server.chat_requests
    assert request.body is not None
    assert request.body["temperature"] == 0
    assert request.body["response_format"] == {"type": "json_object"}
    user = json.loads(request.body["messages"][1]["content"])
    assert user["retrieved_context"] == ["[Source 1] Paris is the capital of France.", "[Source 2] Lyon is a city."]


def test_judge_retries_a_malformed_reply_with_the_parse_error(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply(content='{"context_relevance": 8, "answer_similarity": 7}'), Reply(content=verdict_json()))
    verdict = run_judge(make_client(tmp_path, server.url))
    assert (verdict.attempts, verdict.failures) == (2, 1)
    assert (verdict.context_relevance, verdict.answer_similarity, verdict.faithfulness) == (8.0, 7.0, 9.0)
    assert verdict.error is None
    assert verdict.failure_messages == ["unusable reply: missing keys: faithfulness, hallucination"]
    # Tokens of both calls are counted (the fake's default usage is 11 in, 7 out).
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (22, 14)
    first, second = server.chat_requests
    assert first.body is not None and second.body is not None
    assert len(first.body["messages"]) == 2
    # The retry quotes the bad reply back and says what was wrong with it.
    assert second.body["messages"][:2] == first.body["messages"]
    assert second.body["messages"][2] == {
        "role": "assistant",
        "content": '{"context_relevance": 8, "answer_similarity": 7}',
    }
    correction = second.body["messages"][3]
    assert correction["role"] == "user"
    assert "missing keys: faithfulness, hallucination" in correction["content"]
    assert second.body["temperature"] == 0 and second.body["response_format"] == {"type": "json_object"}


def test_judge_with_only_malformed_replies_sets_error_and_no_metrics(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(*[Reply(content="I think the answer is good.") for _ in range(3)])
    verdict = run_judge(make_client(tmp_path, server.url), max_attempts=3)
    assert (verdict.attempts, verdict.failures, verdict.successful_repeats) == (3, 3, 0)
    assert verdict.context_relevance is None and verdict.answer_similarity is None and verdict.faithfulness is None
    assert verdict.hallucination is None and verdict.hallucination_rate is None
    assert verdict.error == "No usable verdict after 3 attempts: unusable reply: the reply holds no JSON object"
    assert not verdict.ok
    # JSON-safe: no NaN anywhere.
    assert json.loads(json.dumps(verdict.to_dict(), allow_nan=False))["context_relevance"] is None
    assert len(server.chat_requests) == 3


def test_judge_repeats_report_mean_and_spread(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(
        Reply(content=verdict_json(context_relevance=6, answer_similarity=5, faithfulness=9, hallucination=True)),
        Reply(content=verdict_json(context_relevance=8, answer_similarity=5, faithfulness=7, hallucination=False)),
        Reply(content=verdict_json(context_relevance=10, answer_similarity=5, faithfulness=8, hallucination="yes")),
    )
    verdict = run_judge(make_client(tmp_path, server.url), repeats=3)
    assert (verdict.repeats, verdict.successful_repeats, verdict.attempts, verdict.failures) == (3, 3, 3, 0)
    assert verdict.context_relevance == pytest.approx(8.0)
    assert verdict.answer_similarity == pytest.approx(5.0)
    assert verdict.faithfulness == pytest.approx(8.0)
    # Sample SD: 6, 8, 10 → 2; 9, 7, 8 → 1; constant → 0.
    assert verdict.spread["context_relevance_sd"] == pytest.approx(2.0)
    assert verdict.spread["faithfulness_sd"] == pytest.approx(1.0)
    assert verdict.spread["answer_similarity_sd"] == 0.0
    assert (verdict.spread["context_relevance_min"], verdict.spread["context_relevance_max"]) == (6.0, 10.0)
    assert verdict.hallucination_rate == pytest.approx(2 / 3) and verdict.hallucination is True
    assert [sample["context_relevance"] for sample in verdict.samples] == [6, 8, 10]
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (33, 21)


def test_judge_repeat_that_fails_is_counted_and_the_others_aggregate(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(
        Reply(content=verdict_json(context_relevance=4, hallucination=True)),
        Reply(content="not json"),
        Reply(content="still not json"),
        Reply(content=verdict_json(context_relevance=6, hallucination=False)),
    )
    verdict = run_judge(make_client(tmp_path, server.url), repeats=2, max_attempts=2)
    # Repeat 1: one good attempt; repeat 2: two bad attempts; repeat 3 was never asked for.
    assert (verdict.successful_repeats, verdict.attempts, verdict.failures) == (1, 3, 2)
    assert verdict.context_relevance == 4.0 and verdict.spread == {}
    assert verdict.hallucination is True and verdict.error is None


def test_judge_survives_a_server_error_then_succeeds(server: FakeOpenAI, tmp_path: Path) -> None:
    # The client itself does not retry (max_retries 0): the judge's own attempt loop does.
    server.script(Reply(status=500, error_message="overloaded"), Reply(content=verdict_json(faithfulness=3)))
    verdict = run_judge(make_client(tmp_path, server.url, retries=0))
    assert (verdict.attempts, verdict.failures, verdict.faithfulness, verdict.error) == (2, 1, 3.0, None)
    assert verdict.failure_messages[0].startswith("LLM unavailable:")
    assert "overloaded" in verdict.failure_messages[0]


def test_judge_reraises_when_every_attempt_was_unavailable(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(*[Reply(status=503, error_message="down for maintenance") for _ in range(4)])
    with pytest.raises(LlmUnavailableError, match="down for maintenance"):
        run_judge(make_client(tmp_path, server.url, retries=0), repeats=2, max_attempts=2)
    assert len(server.chat_requests) == 4


def test_judge_returns_an_error_verdict_when_failures_are_mixed(server: FakeOpenAI, tmp_path: Path) -> None:
    # A refused request (400) is an LlmError, not unavailability: the caller gets a verdict, not an exception.
    server.script(Reply(status=503), Reply(status=400, error_message="bad response_format"))
    verdict = run_judge(make_client(tmp_path, server.url, retries=0), max_attempts=2)
    assert (verdict.attempts, verdict.failures, verdict.context_relevance) == (2, 2, None)
    assert verdict.error is not None and "bad response_format" in verdict.error


def test_judge_validates_its_arguments(server: FakeOpenAI, tmp_path: Path) -> None:
    client = make_client(tmp_path, server.url)
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        run_judge(client, repeats=0)
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        run_judge(client, max_attempts=0)
    assert server.chat_requests == []
