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
from chunkbench.text.tokens import get_tokenizer

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


def truncate_tokens(text: str, max_tokens: int) -> str:
    """``text`` cut after its first ``max_tokens`` cl100k tokens (at the source characters, never mid-character)."""
    _ids, offsets = get_tokenizer().boundaries(text)
    if len(offsets) - 1 <= max_tokens:
        return text
    return text[: int(offsets[max_tokens])].rstrip()


def generate_answer(
    question: str,
    passages: Sequence[tuple[int, str]],
    *,
    client: LlmClient | None,
    embed: Embedder,
    max_tokens: int | None = None,
) -> AnswerResult:
    """Answer from numbered ``(source_number, text)`` passages; no passages → the not-enough-information answer.

    ``max_tokens`` bounds the answer: the LLM's completion, or the extractive answer cut at that many cl100k tokens.
    """
    passages = [(number, text) for number, text in passages if text.strip()]
    if not passages:
        return AnswerResult(NOT_ENOUGH_INFORMATION, "none")
    if client is None:
        started = time.perf_counter()
        extractive = answer_extractively(question, passages, embed)
        text = extractive.text if max_tokens is None else truncate_tokens(extractive.text, max_tokens)
        citations = extractive.citations if text == extractive.text else parse_citations(text, extractive.citations)
        return AnswerResult(
            text,
            "extractive",
            latency_ms=(time.perf_counter() - started) * 1000,
            citations=citations,
        )
    result = client.chat(rag_answer_messages(question, passages), temperature=0.0, max_tokens=max_tokens)
    return AnswerResult(
        text=result.text,
        mode="llm",
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        latency_ms=result.latency_ms,
        citations=parse_citations(result.text, [number for number, _ in passages]),
    )
