"""The extractive answerer: the context's best sentences for the question, each cited, no LLM needed."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from chunkbench.llm.prompts import NOT_ENOUGH_INFORMATION
from chunkbench.text.sentences import split_sentences

__all__ = ["NOT_ENOUGH_INFORMATION", "Answer", "ExtractiveAnswerer", "answer_extractively"]

# Texts in, one L2-normalised row per text out (the Corpus model).
Embedder = Callable[[list[str]], np.ndarray]

_WORD = re.compile(r"\w+", re.UNICODE)
_HEADING_MARK = re.compile(r"^\s*#{1,6}\s+")
_FINAL_PUNCTUATION = re.compile(r"[.!?؟。…]+[\"'”’)\]]*$")
# English function words: matching them says nothing about whether a sentence answers the question.
_STOPWORD_TEXT = (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "me my no not of on or our she so than that the their them then there these they this to was we were what "
    "when where which who whom why will with would you your about after before between during per"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Passages whose sentences are kept: the same chunks come back across the questions asked of a document.
_PASSAGE_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Answer:
    """An extractive answer: the text with ``[Source n]`` citations, the sources cited, and the sentences used."""

    text: str
    citations: list[int]
    sentences: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "extractive"


@dataclass(frozen=True)
class _Sentence:
    start: int  # offset in its passage
    text: str  # whitespace-collapsed, heading marks removed
    words: frozenset[str]  # lower-cased, for the lexical bonus


@dataclass(frozen=True)
class _Candidate:
    position: int  # the passage's place in the context
    source: int
    sentence: _Sentence

    @property
    def start(self) -> int:
        return self.sentence.start

    @property
    def text(self) -> str:
        return self.sentence.text


@lru_cache(maxsize=_PASSAGE_CACHE_SIZE)
def _passage_sentences(passage: str, min_words: int) -> tuple[_Sentence, ...]:
    """The sentences of a passage with at least ``min_words`` words, in order."""
    sentences: list[_Sentence] = []
    for start, end in split_sentences(passage):
        text = " ".join(_HEADING_MARK.sub("", passage[start:end]).split())
        # Headings and fragments ("Revenue", "Table 3") name a topic; they answer nothing.
        if len(text.split()) >= min_words:
            sentences.append(_Sentence(start, text, frozenset(_WORD.findall(text.lower()))))
    return tuple(sentences)


def _query_terms(text: str) -> dict[str, float]:
    """Content words of the question; terms with digits weigh double (IDs, amounts, years)."""
    terms: dict[str, float] = {}
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        terms[word] = 2.0 if any(ch.isdigit() for ch in word) else 1.0
    return terms


def _cite(sentence: str, source: int) -> str:
    """``sentence [Source n].`` — the citation goes inside the final punctuation."""
    match = _FINAL_PUNCTUATION.search(sentence)
    if match:
        return f"{sentence[: match.start()].rstrip()} [Source {source}]{match.group()}"
    return f"{sentence} [Source {source}]"


class ExtractiveAnswerer:
    """Scores every sentence of the context against the question and cites the best few."""

    def __init__(
        self,
        embed: Embedder,
        *,
        max_sentences: int = 3,
        max_words: int = 80,
        min_score: float = 0.3,
        relative_cutoff: float = 0.8,
        lexical_weight: float = 0.15,
        duplicate_similarity: float = 0.92,
        min_words: int = 3,
    ) -> None:
        self.embed = embed
        self.max_sentences = max_sentences
        self.max_words = max_words
        self.min_score = min_score
        # A sentence joins the best one only when it is nearly as good: weak extras dilute the answer.
        self.relative_cutoff = relative_cutoff
        self.lexical_weight = lexical_weight
        self.duplicate_similarity = duplicate_similarity
        self.min_words = min_words

    def answer(self, question: str, passages: Sequence[tuple[int, str]]) -> Answer:
        """The answer to ``question`` from ``(source_number, text)`` passages, or NOT_ENOUGH_INFORMATION."""
        candidates = self._candidates(passages)
        if not question.strip() or not candidates:
            return Answer(NOT_ENOUGH_INFORMATION, [])
        vectors = np.asarray(self.embed([question.strip()] + [c.text for c in candidates]), dtype=np.float32)
        question_vector, sentence_vectors = vectors[0], vectors[1:]
        scores = sentence_vectors @ question_vector + self.lexical_weight * self._lexical(question, candidates)
        chosen = self._select(scores, sentence_vectors, candidates)
        if not chosen:
            return Answer(NOT_ENOUGH_INFORMATION, [])
        # Sources in the order the context lists them, sentences in document order within each.
        chosen.sort(key=lambda i: (candidates[i].position, candidates[i].start))
        citations: list[int] = []
        for index in chosen:
            if candidates[index].source not in citations:
                citations.append(candidates[index].source)
        return Answer(
            text=" ".join(_cite(candidates[i].text, candidates[i].source) for i in chosen),
            citations=citations,
            sentences=[
                {"source": candidates[i].source, "text": candidates[i].text, "score": round(float(scores[i]), 4)}
                for i in chosen
            ],
        )

    def _candidates(self, passages: Sequence[tuple[int, str]]) -> list[_Candidate]:
        return [
            _Candidate(position, source, sentence)
            for position, (source, passage) in enumerate(passages)
            for sentence in _passage_sentences(passage, self.min_words)
        ]

    def _lexical(self, question: str, candidates: list[_Candidate]) -> np.ndarray:
        """Share of the question's (weighted) content words each sentence contains, in [0, 1]."""
        terms = _query_terms(question)
        total = sum(terms.values())
        if not total:
            return np.zeros(len(candidates), dtype=np.float32)
        overlap = np.empty(len(candidates), dtype=np.float32)
        for index, candidate in enumerate(candidates):
            words = candidate.sentence.words
            overlap[index] = sum(weight for term, weight in terms.items() if term in words) / total
        return overlap

    def _select(self, scores: np.ndarray, vectors: np.ndarray, candidates: list[_Candidate]) -> list[int]:
        order = np.argsort(-scores, kind="stable")
        best = float(scores[order[0]])
        if best < self.min_score:
            return []
        floor = max(self.min_score, best * self.relative_cutoff)
        chosen: list[int] = []
        seen_texts: set[str] = set()
        words = 0
        for index in (int(i) for i in order):
            if len(chosen) >= self.max_sentences or scores[index] < floor:
                break
            text = candidates[index].text
            key = text.casefold()
            # Overlapping chunks repeat sentences; a paraphrase adds nothing either.
            if key in seen_texts or any(
                float(vectors[index] @ vectors[j]) >= self.duplicate_similarity for j in chosen
            ):
                continue
            length = len(text.split())
            # The best sentence always goes in, however long; the rest only within the word budget.
            if chosen and words + length > self.max_words:
                continue
            chosen.append(index)
            seen_texts.add(key)
            words += length
        return chosen


def answer_extractively(question: str, passages: Sequence[tuple[int, str]], embed: Embedder) -> Answer:
    """The extractive answer with the default budget (3 sentences, ~80 words)."""
    return ExtractiveAnswerer(embed).answer(question, passages)
