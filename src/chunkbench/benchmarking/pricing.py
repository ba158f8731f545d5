"""What a benchmark costs in tokens and USD (docs/benchmarks.md): a price table and a heuristic estimate.

Local models (sentence-transformers, Ollama, any LLM server on this machine) cost 0. A remote model that is
in neither the table nor ``CHUNKBENCH_PRICES`` has an unknown cost (``None`` and a warning), never a guess.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from urllib.parse import urlparse

from chunkbench.config import Settings, get_settings

# OpenAI standard-tier list prices, USD per 1M tokens (input, output), as published on
# https://openai.com/api/pricing in June 2025 (batch and cached-input discounts not applied).
# They change: CHUNKBENCH_PRICES overrides any entry.
PRICES_AS_OF = "2025-06"
OPENAI_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}

# Providers whose models run on hardware the user already has.
LOCAL_PROVIDERS = frozenset({"local", "sentence-transformers", "ollama", "extractive"})

# Tokens our prompts add around the variable parts, measured in cl100k on llm/prompts.py (system prompt,
# message wrappers and the chat format's few tokens per message); tests check they stay close.
ANSWER_PROMPT_TOKENS = 145
JUDGE_PROMPT_TOKENS = 200
# A verdict: the JSON keys, three scores, a flag and one or two sentences of reasoning.
JUDGE_OUTPUT_TOKENS = 80

# A dated snapshot of a model (``gpt-4o-mini-2024-07-18``, ``gpt-4-0613``) costs what the model costs.
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4})$")
_LOCAL_HOSTNAMES = frozenset({"localhost", "host.docker.internal"})

PriceSource = Literal["local", "table", "override", "unknown"]


@dataclass(frozen=True)
class ModelPrice:
    """USD per 1M input and output tokens of one model; ``None`` prices mean unknown (see ``warning``)."""

    model_id: str
    provider: str
    input_usd_per_million: float | None
    output_usd_per_million: float | None
    source: PriceSource
    warning: str | None = None

    @property
    def known(self) -> bool:
        return self.input_usd_per_million is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def llm_provider(settings: Settings) -> str:
    """``openai`` for the OpenAI API, ``local`` for a server on this machine or network, else
    ``openai-compatible`` (a remote server with prices of its own)."""
    if not settings.llm_base_url:
        return "openai"
    host = (urlparse(settings.llm_base_url).hostname or "").lower()
    if host == "api.openai.com":
        return "openai"
    if host in _LOCAL_HOSTNAMES or host.endswith(".local"):
        return "local"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "openai-compatible"
    # A server on this machine or the LAN costs what the hardware costs: nothing per token.
    return "local" if address.is_loopback or address.is_private or address.is_unspecified else "openai-compatible"


def _table_key(model_id: str) -> str | None:
    name = model_id.strip().lower().removeprefix("openai/")
    if name in OPENAI_PRICES:
        return name
    base = _SNAPSHOT.sub("", name)
    return base if base in OPENAI_PRICES else None


def price_for(model_id: str, provider: str, settings: Settings | None = None) -> ModelPrice:
    """The price of ``model_id`` served by ``provider``: a ``CHUNKBENCH_PRICES`` override first, then 0 for
    local providers, then the OpenAI table; otherwise unknown, with a warning."""
    settings = settings or get_settings()
    overrides = {name.lower(): price for name, price in settings.prices.items()}
    override = overrides.get(model_id.strip().lower())
    if override is not None:
        return ModelPrice(model_id, provider, override["input"], override.get("output", 0.0), "override")
    if provider.lower() in LOCAL_PROVIDERS:
        return ModelPrice(model_id, provider, 0.0, 0.0, "local")
    key = _table_key(model_id)
    if key is not None:
        input_price, output_price = OPENAI_PRICES[key]
        return ModelPrice(model_id, provider, input_price, output_price, "table")
    return ModelPrice(
        model_id, provider, None, None, "unknown",
        warning=(
            f"No price known for '{model_id}' ({provider}): its cost is left out. Add it to CHUNKBENCH_PRICES, "
            f'e.g. {{"{model_id}": {{"input": 0.5, "output": 1.5}}}} in USD per 1M tokens.'
        ),
    )  # fmt: skip


def cost_usd(
    model_id: str, provider: str, input_tokens: int, output_tokens: int = 0, settings: Settings | None = None
) -> float | None:
    """USD for the tokens at the model's price; ``None`` when the price is unknown."""
    price = price_for(model_id, provider, settings)
    if price.input_usd_per_million is None or price.output_usd_per_million is None:
        return None
    return (input_tokens * price.input_usd_per_million + output_tokens * price.output_usd_per_million) / 1_000_000


@dataclass
class CostEstimate:
    """Tokens and USD per item of a benchmark (embedding, answers, judge) and in total.

    A ``None`` USD figure is an unknown price (see ``warnings``); ``total_usd`` is ``None`` when any item
    that is needed has an unknown price, and ``known_usd`` sums the items that are known.
    """

    questions: int
    configurations: int
    embedding_model: str
    embedding_tokens: int
    embedding_usd: float | None
    answer_model: str | None
    answer_calls: int
    answer_input_tokens: int
    answer_output_tokens: int
    answers_usd: float | None
    judge_model: str | None
    judge_calls: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_usd: float | None
    total_usd: float | None
    known_usd: float
    prices_as_of: str = PRICES_AS_OF
    warnings: list[str] = field(default_factory=list)
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)

    def items(self) -> list[dict[str, Any]]:
        """One row per item, for a table: item, model, calls, input/output tokens, USD."""
        return [
            {"item": "embedding", "model": self.embedding_model, "calls": None,
             "input_tokens": self.embedding_tokens, "output_tokens": 0, "usd": self.embedding_usd},
            {"item": "answers", "model": self.answer_model, "calls": self.answer_calls,
             "input_tokens": self.answer_input_tokens, "output_tokens": self.answer_output_tokens,
             "usd": self.answers_usd},
            {"item": "judge", "model": self.judge_model, "calls": self.judge_calls,
             "input_tokens": self.judge_input_tokens, "output_tokens": self.judge_output_tokens,
             "usd": self.judge_usd},
        ]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"items": self.items()}


def estimate_cost(
    *,
    questions: int,
    configurations: int,
    chunk_tokens_to_embed: int,
    question_tokens: int,
    answer_model: str | None,
    answer_provider: str | None,
    judge: bool,
    judge_repeats: int,
    embedding_model: str,
    embedding_provider: str,
    avg_context_tokens: int,
    avg_answer_tokens: int = 150,
    judge_model: str | None = None,
    judge_provider: str | None = None,
    embed_answers: bool = True,
    settings: Settings | None = None,
) -> CostEstimate:
    """A heuristic estimate of a benchmark's tokens and USD, before running it.

    Inputs: ``chunk_tokens_to_embed`` is the total over every configuration still to be indexed (0 when the
    indexes exist); ``question_tokens`` the total over all questions; ``avg_context_tokens`` the context sent
    with one question (tok@k); ``answer_model=None`` means extractive answers (no LLM). The judge uses
    ``judge_model`` (default: the answer model).

    * embedding = chunks + every question once per configuration + (``embed_answers``, for answer
      similarity) every generated answer and each expected answer once, at ``avg_answer_tokens`` each;
    * answers = one call per question × configuration: ``ANSWER_PROMPT_TOKENS`` + question + context in,
      ``avg_answer_tokens`` out;
    * judge = one call per question × configuration × repeat: ``JUDGE_PROMPT_TOKENS`` + question + expected
      and generated answers + context in, ``JUDGE_OUTPUT_TOKENS`` out. Corrective retries are not counted.
    """
    if min(questions, configurations, chunk_tokens_to_embed, question_tokens, avg_context_tokens) < 0:
        raise ValueError("Counts and token figures must not be negative.")
    if judge and judge_repeats < 1:
        raise ValueError(f"judge_repeats must be at least 1, got {judge_repeats}")
    settings = settings or get_settings()
    warnings: list[str] = []
    prices: dict[str, dict[str, Any]] = {}

    def priced(item: str, model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
        price = price_for(model, provider, settings)
        prices[item] = price.to_dict()
        if price.warning:
            warnings.append(price.warning)
        return cost_usd(model, provider, input_tokens, output_tokens, settings)

    question_runs = question_tokens * configurations
    embedding_tokens = chunk_tokens_to_embed + question_runs
    if embed_answers:
        embedding_tokens += avg_answer_tokens * questions * (configurations + 1)
    embedding_usd = priced("embedding", embedding_model, embedding_provider, embedding_tokens, 0)

    answer_calls = questions * configurations if answer_model else 0
    answer_input = answer_calls * (ANSWER_PROMPT_TOKENS + avg_context_tokens) + (question_runs if answer_model else 0)
    answer_output = answer_calls * avg_answer_tokens
    answers_usd: float | None = 0.0
    if answer_model:
        answers_usd = priced("answers", answer_model, answer_provider or "openai", answer_input, answer_output)

    judge_model = (judge_model or answer_model) if judge else None
    judge_provider = judge_provider or answer_provider or "openai"
    judge_calls = questions * configurations * judge_repeats if judge else 0
    judge_input = judge_calls * (JUDGE_PROMPT_TOKENS + 2 * avg_answer_tokens + avg_context_tokens) + (
        question_runs * judge_repeats if judge else 0
    )
    judge_output = judge_calls * JUDGE_OUTPUT_TOKENS
    judge_usd: float | None = 0.0
    if judge and judge_model:
        judge_usd = priced("judge", judge_model, judge_provider, judge_input, judge_output)
    elif judge:
        judge_usd = None
        warnings.append("The LLM judge needs an LLM: no judge model is configured (set CHUNKBENCH_LLM_MODEL).")

    parts = (embedding_usd, answers_usd, judge_usd)
    known = sum(part for part in parts if part is not None)
    return CostEstimate(
        questions=questions,
        configurations=configurations,
        embedding_model=embedding_model,
        embedding_tokens=embedding_tokens,
        embedding_usd=embedding_usd,
        answer_model=answer_model,
        answer_calls=answer_calls,
        answer_input_tokens=answer_input,
        answer_output_tokens=answer_output,
        answers_usd=answers_usd,
        judge_model=judge_model,
        judge_calls=judge_calls,
        judge_input_tokens=judge_input,
        judge_output_tokens=judge_output,
        judge_usd=judge_usd,
        total_usd=None if any(part is None for part in parts) else known,
        known_usd=known,
        warnings=warnings,
        prices=prices,
    )
