"""Costs: the price table, local models at 0, unknown remote models unknown (never guessed), overrides from
CHUNKBENCH_PRICES, and hand-computed benchmark estimates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from chunkbench.benchmarking.pricing import (
    ANSWER_PROMPT_TOKENS,
    JUDGE_OUTPUT_TOKENS,
    JUDGE_PROMPT_TOKENS,
    cost_usd,
    estimate_cost,
    llm_provider,
    price_for,
)
from chunkbench.config import Settings
from chunkbench.llm.prompts import judge_messages, rag_answer_messages
from chunkbench.text.tokens import count_tokens


def test_price_table_and_dated_snapshots(settings: Settings) -> None:
    price = price_for("gpt-4o-mini", "openai", settings)
    assert (price.input_usd_per_million, price.output_usd_per_million, price.source) == (0.15, 0.60, "table")
    assert price.known and price.warning is None
    assert price_for("gpt-4o-mini-2024-07-18", "openai", settings).input_usd_per_million == 0.15
    assert price_for("openai/GPT-4.1-mini", "openai", settings).output_usd_per_million == 1.60
    assert price_for("gpt-4.1", "openai", settings).input_usd_per_million == 2.00
    assert price_for("gpt-4o", "openai", settings).output_usd_per_million == 10.00
    assert price_for("text-embedding-3-large", "openai", settings).input_usd_per_million == 0.13
    assert price_for("text-embedding-ada-002", "openai", settings).input_usd_per_million == 0.10
    # A variant that is not a dated snapshot is not priced as its base model.
    assert not price_for("gpt-4o-audio-preview", "openai", settings).known


def test_local_models_cost_nothing(settings: Settings) -> None:
    for model, provider in [
        ("all-MiniLM-L6-v2", "local"),
        ("nomic-embed-text-v2-moe", "ollama"),
        ("llama3.1", "local"),
    ]:
        price = price_for(model, provider, settings)
        assert (price.input_usd_per_million, price.output_usd_per_million, price.source) == (0.0, 0.0, "local")
    assert cost_usd("qwen2.5:7b", "ollama", 5_000_000, 1_000_000, settings) == 0.0


def test_unknown_remote_model_has_no_price_and_a_warning(settings: Settings) -> None:
    price = price_for("mixtral-8x22b", "openai-compatible", settings)
    assert not price.known and price.source == "unknown"
    assert price.input_usd_per_million is None and price.output_usd_per_million is None
    assert price.warning is not None and "mixtral-8x22b" in price.warning and "CHUNKBENCH_PRICES" in price.warning
    assert cost_usd("mixtral-8x22b", "openai-compatible", 1000, 100, settings) is None


def test_cost_usd_hand_computed(settings: Settings) -> None:
    # 1M in × 0.15 + 0.5M out × 0.60 = 0.15 + 0.30.
    assert cost_usd("gpt-4o-mini", "openai", 1_000_000, 500_000, settings) == pytest.approx(0.45)
    # 250k tokens × 0.02 / 1M.
    assert cost_usd("text-embedding-3-small", "openai", 250_000, settings=settings) == pytest.approx(0.005)


def test_prices_override_from_settings_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "CHUNKBENCH_PRICES", json.dumps({"GPT-4o-mini": {"input": 0.1, "output": 0.2}, "my-embedder": {"input": 1}})
    )
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    assert price_for("gpt-4o-mini", "openai", settings).source == "override"
    assert cost_usd("gpt-4o-mini", "openai", 1_000_000, 1_000_000, settings) == pytest.approx(0.3)
    # An override prices a model the table does not know; output defaults to 0.
    assert cost_usd("my-embedder", "openai-compatible", 2_000_000, settings=settings) == pytest.approx(2.0)
    # An override wins over "local is free" (e.g. a rented GPU box reached by a private address).
    assert price_for("my-embedder", "local", settings).input_usd_per_million == 1.0


@pytest.mark.parametrize(
    "prices",
    [{"m": {"inputs": 1.0}}, {"m": {"output": 1.0}}, {"m": {"input": -1.0}}],
)
def test_invalid_price_overrides_are_refused(tmp_path: Path, prices: dict[str, dict[str, float]]) -> None:
    with pytest.raises(ValidationError, match="price of 'm'"):
        Settings(_env_file=None, data_dir=tmp_path / "data", prices=prices)


@pytest.mark.parametrize(
    ("base_url", "provider"),
    [
        ("", "openai"),
        ("https://api.openai.com/v1", "openai"),
        ("http://localhost:11434/v1", "local"),
        ("http://127.0.0.1:8080/v1", "local"),
        ("http://192.168.1.20:1234/v1", "local"),
        ("http://gpu-box.local:8000/v1", "local"),
        ("https://api.together.xyz/v1", "openai-compatible"),
        ("http://8.8.8.8/v1", "openai-compatible"),
    ],
)
def test_llm_provider_from_base_url(tmp_path: Path, base_url: str, provider: str) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", llm_base_url=base_url, llm_model="m")
    assert llm_provider(settings) == provider


def test_estimate_for_a_local_setup_is_zero(settings: Settings) -> None:
    estimate = estimate_cost(
        questions=20, configurations=4, chunk_tokens_to_embed=50_000, question_tokens=300,
        answer_model=None, answer_provider=None, judge=False, judge_repeats=1,
        embedding_model="all-MiniLM-L6-v2", embedding_provider="local", avg_context_tokens=800, settings=settings,
    )  # fmt: skip
    # 50,000 chunks + 300 × 4 questions + 150 × 20 × (4 + 1) answers = 66,200.
    assert estimate.embedding_tokens == 66_200
    assert (estimate.answer_calls, estimate.judge_calls) == (0, 0)
    assert (estimate.embedding_usd, estimate.answers_usd, estimate.judge_usd) == (0.0, 0.0, 0.0)
    assert estimate.total_usd == 0.0 and estimate.warnings == []


def test_estimate_for_openai_models_hand_computed(settings: Settings) -> None:
    estimate = estimate_cost(
        questions=10, configurations=3, chunk_tokens_to_embed=100_000, question_tokens=200,
        answer_model="gpt-4o-mini", answer_provider="openai", judge=True, judge_repeats=2,
        embedding_model="text-embedding-3-small", embedding_provider="openai", avg_context_tokens=1000,
        avg_answer_tokens=150, settings=settings,
    )  # fmt: skip
    assert (ANSWER_PROMPT_TOKENS, JUDGE_PROMPT_TOKENS, JUDGE_OUTPUT_TOKENS) == (145, 200, 80)
    # Embedding: 100,000 + 200 × 3 + 150 × 10 × 4 = 106,600 tokens × $0.02/M = $0.002132.
    assert estimate.embedding_tokens == 106_600
    assert estimate.embedding_usd == pytest.approx(0.002132)
    # Answers: 30 calls × (145 + 1000) + 200 × 3 = 34,950 in, 30 × 150 = 4,500 out:
    # 34,950 × 0.15 + 4,500 × 0.60 = 5,242.5 + 2,700 → $0.0079425.
    assert (estimate.answer_calls, estimate.answer_input_tokens, estimate.answer_output_tokens) == (30, 34_950, 4_500)
    assert estimate.answers_usd == pytest.approx(0.0079425)
    # Judge: 60 calls × (200 + 2 × 150 + 1000) + 200 × 3 × 2 = 91,200 in, 60 × 80 = 4,800 out:
    # 91,200 × 0.15 + 4,800 × 0.60 = 13,680 + 2,880 → $0.01656.
    assert (estimate.judge_calls, estimate.judge_input_tokens, estimate.judge_output_tokens) == (60, 91_200, 4_800)
    assert estimate.judge_model == "gpt-4o-mini"
    assert estimate.judge_usd == pytest.approx(0.01656)
    assert estimate.total_usd == pytest.approx(0.002132 + 0.0079425 + 0.01656)
    assert estimate.known_usd == pytest.approx(estimate.total_usd)
    body = json.loads(json.dumps(estimate.to_dict(), allow_nan=False))
    assert [row["item"] for row in body["items"]] == ["embedding", "answers", "judge"]
    assert body["prices"]["answers"]["input_usd_per_million"] == 0.15
    assert body["prices_as_of"] == "2025-06"


def test_estimate_with_an_unknown_remote_model_has_no_total(settings: Settings) -> None:
    estimate = estimate_cost(
        questions=10, configurations=2, chunk_tokens_to_embed=0, question_tokens=100,
        answer_model="mystery-70b", answer_provider="openai-compatible", judge=True, judge_repeats=1,
        embedding_model="text-embedding-3-small", embedding_provider="openai", avg_context_tokens=500,
        settings=settings,
    )  # fmt: skip
    assert estimate.answers_usd is None and estimate.judge_usd is None
    assert estimate.total_usd is None
    # 100 × 2 + 150 × 10 × 3 = 4,700 embedding tokens are still known: $0.000094.
    assert estimate.known_usd == pytest.approx(4_700 * 0.02 / 1e6)
    assert len(estimate.warnings) == 2 and all("mystery-70b" in warning for warning in estimate.warnings)


def test_estimate_judge_without_any_llm_is_unknown(settings: Settings) -> None:
    estimate = estimate_cost(
        questions=5, configurations=1, chunk_tokens_to_embed=10, question_tokens=50, answer_model=None,
        answer_provider=None, judge=True, judge_repeats=1, embedding_model="all-MiniLM-L6-v2",
        embedding_provider="local", avg_context_tokens=100, settings=settings,
    )  # fmt: skip
    assert estimate.judge_usd is None and estimate.total_usd is None
    assert any("judge needs an LLM" in warning for warning in estimate.warnings)


def test_prompt_overheads_match_the_real_prompts() -> None:
    # The constants are the cl100k size of our prompts with empty inputs plus ~4 tokens per chat message.
    answer = sum(count_tokens(m["content"]) + 4 for m in rag_answer_messages("", []))
    judge = sum(count_tokens(m["content"]) + 4 for m in judge_messages("", "", "", []))
    assert abs(ANSWER_PROMPT_TOKENS - answer) <= 0.1 * answer
    assert abs(JUDGE_PROMPT_TOKENS - judge) <= 0.1 * judge
