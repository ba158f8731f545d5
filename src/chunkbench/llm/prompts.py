"""The prompts chunkbench sends to an LLM, as pure functions that return chat message lists (the listwise
rerank prompt lives with its reranker, ``retrieval/rerank.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources

Message = dict[str, str]

NOT_ENOUGH_INFORMATION = "The documents do not contain enough information to answer this question."

# --------------------------------------------------------------------------- RAG answer

RAG_SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages you are given.\n"
    "- Use only facts stated in the context; never add outside knowledge.\n"
    "- After every sentence that uses a passage, cite it as [Source n] with the passage's number, "
    "e.g. [Source 2]; cite several passages as [Source 1] [Source 3].\n"
    f'- If the context does not contain the answer, reply exactly: "{NOT_ENOUGH_INFORMATION}"\n'
    "- If the context answers only part of the question, answer that part and say what is missing.\n"
    "- Answer in the language of the question, concisely."
)


def format_context(passages: Sequence[tuple[int, str]]) -> str:
    """The passages as ``[Source n]`` blocks, in the given order."""
    return "\n\n".join(f"[Source {number}]\n{text.strip()}" for number, text in passages)


def rag_answer_messages(question: str, passages: Sequence[tuple[int, str]]) -> list[Message]:
    """System rules + the numbered context and the question."""
    return [
        {"role": "system", "content": RAG_SYSTEM_PROMPT},
        {"role": "user", "content": f"Context:\n\n{format_context(passages)}\n\nQuestion: {question.strip()}"},
    ]


# --------------------------------------------------------------------------- contextual retrieval

# Anthropic's contextual-retrieval prompt, word for word, split where the chunk starts.
_CONTEXTUAL_CHUNK_TEMPLATE = (
    "Here is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\n"
    "Please give a short succinct context to situate this chunk within the overall document for the "
    "purposes of improving search retrieval of the chunk. Answer only with the succinct context and nothing else."
)


def contextual_document_part(document: str) -> str:
    """The ``<document>`` block: built once per document, the identical prefix of every chunk's request."""
    return f"<document>\n{document}\n</document>\n"


def contextual_messages(document_part: str, chunk: str) -> list[Message]:
    """One user message: the document block first, the chunk last.

    A single message, not separate document and chunk turns: some chat templates (Gemma's) refuse two
    user turns in a row, and the document block is still a token prefix that a server can cache.
    """
    return [{"role": "user", "content": document_part + _CONTEXTUAL_CHUNK_TEMPLATE.format(chunk=chunk)}]


# --------------------------------------------------------------------------- LLM-as-judge (docs/benchmarks.md)

JUDGE_KEYS = ("context_relevance", "answer_similarity", "faithfulness", "hallucination", "reasoning")

JUDGE_SYSTEM_PROMPT = (
    "You evaluate one answer of a retrieval-augmented generation system. Score strictly:\n"
    "- context_relevance (1-10): how much of the retrieved context is relevant to the question and "
    "covers what is needed to answer it.\n"
    "- answer_similarity (1-10): how closely the generated answer matches the expected answer in meaning "
    "(not wording).\n"
    "- faithfulness (1-10): how fully every claim of the generated answer is supported by the retrieved context.\n"
    "- hallucination (true/false): true if the generated answer states anything not supported by the context.\n"
    "- reasoning: one or two sentences justifying the scores.\n"
    "Reply with one JSON object with exactly these keys: "
    + ", ".join(JUDGE_KEYS)
    + ". Scores are integers from 1 to 10."
)


def judge_messages(
    question: str, expected_answer: str, generated_answer: str, contexts: Sequence[str]
) -> list[Message]:
    """The judge's input: question, expected and generated answers, and the retrieved context numbered."""
    payload = {
        "question": question,
        "expected_answer": expected_answer,
        "generated_answer": generated_answer,
        "retrieved_context": [f"[Source {n}] {text.strip()}" for n, text in enumerate(contexts, start=1)],
    }
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, indent=1)},
    ]


# --------------------------------------------------------------------------- synthetic questions (Chroma)

# Chroma's question-maker prompts, word for word (MIT, Copyright (c) 2024 Brandon Smith; see
# llm/chroma_prompts/PROVENANCE.md). Package data rather than literals: the texts keep their exact whitespace.
_CHROMA_PROMPTS = "chroma_prompts"


@cache
def _chroma_prompt(name: str) -> str:
    return resources.files("chunkbench.llm").joinpath(_CHROMA_PROMPTS, name).read_text(encoding="utf-8")


def question_maker_messages(document: str, previous_questions: Sequence[str]) -> list[Message]:
    """Chroma's request for one question with exact excerpts from ``document``, avoiding earlier questions."""
    user = (
        _chroma_prompt("question_maker_user.txt")
        .replace("{document}", document)
        .replace("{prev_questions_str}", "\n".join(previous_questions))
    )
    return [
        {"role": "system", "content": _chroma_prompt("question_maker_system.txt")},
        {"role": "user", "content": user},
    ]
