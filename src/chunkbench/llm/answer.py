"""Answer generation: the LLM when one is configured, the extractive answerer otherwise."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from chunkbench.llm.client import LlmClient
from chunkbench.llm.extractive import Embedder, answer_extractively
from chunkbench.llm.prompts import NOT_ENOUGH_INFORMATION, rag_answer_messages

AnswerMode = Literal["llm", "extractive", "none"]

# "[Source 2]", "[Source 1, 3]", "[Sources 1 and 3]", "[Source 1, Source 3]".
_CITATION = re.compile(r"\[\s*Sources?\s*:?\s*(\d+(?:\s*(?:,|and|&|;)?\s*(?:Source\s*)?\d+)*)\s*\]", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class AnswerResult:
    """The answer to a query, how it was produced, what it cost, and the sources it cites."""

    text: str
    mode: AnswerMode
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    citations: list[int] = field(default_factory=list)


def parse_citations(text: str, valid: Sequence[int]) -> list[int]:
    """Source numbers cited as ``[Source n]`` in ``text``, first appearance first; numbers not in ``valid`` dropped."""
    allowed = set(valid)
    cited: list[int] = []
    for match in _CITATION.finditer(text):
        for number in (int(n) for n in _NUMBER.findall(match.group(1))):
            if number in allowed and number not in cited:
                cited.append(number)
    return cited


def generate_answer(
    question: str, passages: Sequence[tuple[int, str]], *, client: LlmClient | None, embed: Embedder
) -> AnswerResult:
    """Answer from numbered ``(source_number, text)`` passages; no passages → the not-enough-information answer."""
    passages = [(number, text) for number, text in passages if text.strip()]
    if not passages:
        return AnswerResult(NOT_ENOUGH_INFORMATION, "none")
    if client is None:
        started = time.perf_counter()
        extractive = answer_extractively(question, passages, embed)
        return AnswerResult(
            extractive.text,
            "extractive",
            latency_ms=(time.perf_counter() - started) * 1000,
            citations=extractive.citations,
        )
    result = client.chat(rag_answer_messages(question, passages), temperature=0.0)
    return AnswerResult(
        text=result.text,
        mode="llm",
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        latency_ms=result.latency_ms,
        citations=parse_citations(result.text, [number for number, _ in passages]),
    )
