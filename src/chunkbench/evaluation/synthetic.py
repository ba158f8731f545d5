"""Synthetic questions with exact excerpts, by Chroma's method (their technical report, §"Synthetic evaluation").

An LLM reads a random window of the document and writes one question with the excerpts that answer it,
copied from the text. Each excerpt is located in the document (``evaluation.locate``); excerpts it cannot place
are dropped. A question is dropped when it has no placed excerpt, more than five, an excerpt too short, or an
excerpt whose embedding is too dissimilar to the question; and when it nearly repeats a kept question.
Chroma filters by embedding similarity after generating; here each candidate is filtered as it arrives, so
generation goes on until the requested number of questions survives (or the attempts run out).
"""

from __future__ import annotations

import ast
import json
import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from chunkbench.config import Settings
from chunkbench.errors import InvalidRequestError, LlmError, LlmNotConfiguredError
from chunkbench.evaluation.locate import TextLocator
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference, QuestionSet
from chunkbench.llm.client import JsonSchema, LlmClient, get_llm_client, record_repair
from chunkbench.llm.prompts import question_maker_messages

logger = logging.getLogger(__name__)

Purpose = Literal["document", "query"]
Embedder = Callable[[Sequence[str], Purpose], np.ndarray]
RejectionReason = Literal[
    "malformed", "no_excerpt_placed", "too_many_references", "short_excerpt", "poor_excerpt", "duplicate"
]
# Chroma shows the model at most 20 earlier questions, sampled.
_PREVIOUS_SHOWN = 20
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
# Chroma's reply shape, for servers that take schemas (llm/client.py); the prompt asks for the same.
QUESTION_SCHEMA = JsonSchema(
    "synthetic_question",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "references": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        },
        "required": ["question", "references"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class GenerationOptions:
    """How many questions, from which windows, filtered how (defaults: Chroma's values)."""

    count: int = 20
    seed: int = 0
    window_chars: int = 4000
    max_attempts: int | None = None  # None: three tries per question, plus five
    max_references: int = 5
    min_excerpt_chars: int = 20
    excerpt_min_similarity: float = 0.36
    duplicate_similarity: float = 0.78
    match_threshold: float = 0.9

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 500:
            raise InvalidRequestError(f"Ask for 1–500 questions, not {self.count}.")
        if self.window_chars < 200:
            raise InvalidRequestError(f"The window must hold at least 200 characters, not {self.window_chars}.")
        if not 0 < self.match_threshold <= 1 or not 0 < self.duplicate_similarity <= 1:
            raise InvalidRequestError("Match and duplicate thresholds are similarities in (0, 1].")

    @property
    def attempts(self) -> int:
        return self.max_attempts if self.max_attempts is not None else 3 * self.count + 5


@dataclass(frozen=True)
class Rejection:
    """A candidate the filters dropped, and why."""

    attempt: int
    reason: RejectionReason
    question: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "reason": self.reason, "question": self.question, "detail": self.detail}


@dataclass
class GenerationResult:
    question_set: QuestionSet
    attempts: int
    rejections: list[Rejection] = field(default_factory=list)
    dropped_excerpts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def rejection_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rejection in self.rejections:
            counts[rejection.reason] = counts.get(rejection.reason, 0) + 1
        return counts


def parse_generated(text: str) -> tuple[str, list[str]]:
    """The question and excerpt texts of one model reply; ValueError when it is not that JSON.

    The prompt's own example is a Python dict with single quotes, so models answer that way too: such
    replies are read as Python literals (``literal_eval`` runs no code).
    """
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    body = body[start : end + 1]
    try:
        data = json.loads(body)
        if body != text.strip():
            record_repair("synthetic")  # found inside a fence or prose
    except json.JSONDecodeError:
        record_repair("synthetic")  # read as a Python literal, or not at all
        try:
            data = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise ValueError(f"the reply is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("the reply has no 'question' text")
    raw = data.get("references")
    if not isinstance(raw, list) or not raw:
        raise ValueError("the reply has no 'references' list")
    excerpts = []
    for item in raw:
        content = item.get("content") if isinstance(item, dict) else item
        if not isinstance(content, str):
            raise ValueError(f"a reference is a {type(item).__name__}, not excerpt text")
        if content.strip():
            excerpts.append(content)
    if not excerpts:
        raise ValueError("every reference is empty")
    return question.strip(), excerpts


def _place_excerpts(
    excerpts: Sequence[str], window_locator: TextLocator, window_start: int, locator: TextLocator, threshold: float
) -> tuple[list[tuple[int, int]], int]:
    """Source spans of the excerpts that can be placed (the window first: a repeated sentence is the one the
    model read), deduplicated, in document order; and how many were dropped."""
    spans: dict[tuple[int, int], None] = {}
    dropped = 0
    for excerpt in excerpts:
        placement = window_locator.locate(excerpt, threshold)
        offset = window_start
        if not placement.placed:
            placement, offset = locator.locate(excerpt, threshold), 0
        if placement.placed and placement.end_index > placement.start_index:
            spans[(placement.start_index + offset, placement.end_index + offset)] = None
        else:
            dropped += 1
    return sorted(spans), dropped


def _cosines(vector: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0)
    return (matrix @ vector) / np.where(norms == 0, 1.0, norms)


def generate_questions(
    text: str,
    client: LlmClient,
    embed: Embedder,
    options: GenerationOptions,
    *,
    document_id: str | None = None,
) -> GenerationResult:
    """Up to ``options.count`` filtered questions about ``text``, each with excerpts at exact offsets."""
    if not text.strip():
        raise InvalidRequestError("The document has no text to write questions about.")
    rng = random.Random(options.seed)
    locator = TextLocator(text)
    kept: list[BenchmarkQuestion] = []
    kept_vectors: list[np.ndarray] = []
    result = GenerationResult(QuestionSet([], "json"), attempts=0)

    def reject(reason: RejectionReason, question: str | None, detail: str) -> None:
        result.rejections.append(Rejection(result.attempts, reason, question, detail))
        logger.info("synthetic question rejected (%s): %s", reason, detail)

    while len(kept) < options.count and result.attempts < options.attempts:
        result.attempts += 1
        window_start = rng.randint(0, len(text) - options.window_chars) if len(text) > options.window_chars else 0
        window = text[window_start : window_start + options.window_chars]
        previous = [q.question for q in kept]
        if len(previous) > _PREVIOUS_SHOWN:
            previous = rng.sample(previous, _PREVIOUS_SHOWN)
        reply = client.chat(question_maker_messages(window, previous), json_schema=QUESTION_SCHEMA)
        result.prompt_tokens += reply.prompt_tokens
        result.completion_tokens += reply.completion_tokens
        try:
            question, excerpts = parse_generated(reply.text)
        except ValueError as exc:
            reject("malformed", None, f"{exc}: {reply.text[:200]!r}")
            continue
        if len(excerpts) > options.max_references:
            reject("too_many_references", question, f"{len(excerpts)} excerpts; at most {options.max_references}")
            continue
        spans, dropped = _place_excerpts(excerpts, TextLocator(window), window_start, locator, options.match_threshold)
        result.dropped_excerpts += dropped
        if not spans:
            reject("no_excerpt_placed", question, f"none of the {len(excerpts)} excerpts is in the document")
            continue
        contents = [text[start:end] for start, end in spans]
        shortest = min(contents, key=len)
        if len(shortest.strip()) < options.min_excerpt_chars:
            reject("short_excerpt", question, f"excerpt {shortest!r} is under {options.min_excerpt_chars} characters")
            continue
        question_vector = np.asarray(embed([question], "query")[0], dtype=np.float32)
        worst = float(_cosines(question_vector, np.asarray(embed(contents, "document"), dtype=np.float32)).min())
        if worst < options.excerpt_min_similarity:
            reject("poor_excerpt", question, f"an excerpt's similarity {worst:.3f} < {options.excerpt_min_similarity}")
            continue
        if kept_vectors:
            similarities = _cosines(question_vector, np.stack(kept_vectors))
            nearest = int(similarities.argmax())
            repeated = question.casefold() == kept[nearest].question.casefold()
            if repeated or similarities[nearest] > options.duplicate_similarity:
                reject(
                    "duplicate", question,
                    f"similarity {similarities[nearest]:.3f} to kept question {kept[nearest].id!r}",
                )  # fmt: skip
                continue
        references = tuple(
            QuestionReference(content, start, end, document_id)
            for (start, end), content in zip(spans, contents, strict=True)
        )
        kept.append(BenchmarkQuestion(f"q{len(kept) + 1}", question, document_id=document_id, references=references))
        kept_vectors.append(question_vector)
    result.question_set = QuestionSet(kept, "json")
    return result


def require_llm(settings: Settings) -> LlmClient:
    """The configured LLM client, or a 503 that says how to configure one."""
    client = get_llm_client(settings)
    if client is None:
        raise LlmNotConfiguredError(
            "Generating questions needs an LLM. Set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL to any "
            "OpenAI-compatible server (for example Ollama: http://localhost:11434/v1), then retry."
        )
    return client


def no_questions_error(result: GenerationResult) -> LlmError:
    """The error for a run whose every candidate was rejected."""
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(result.rejection_counts().items()))
    return LlmError(
        f"The LLM produced no usable question in {result.attempts} attempts ({reasons or 'no replies'}). "
        "Try another model, or lower the similarity thresholds.",
        rejections=[r.to_dict() for r in result.rejections[:20]],
    )
