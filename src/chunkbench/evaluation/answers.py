"""Answer metrics against an expected answer: SQuAD-style exact match and token F1, and embedding similarity.

Normalisation follows the SQuAD v1.1 evaluation script (lowercase, punctuation and English articles removed,
whitespace collapsed), made Unicode-aware so that Farsi and other non-Latin answers keep their letters:
punctuation is every Unicode ``P*`` character plus ASCII symbols, not ``string.punctuation`` alone, and the
text first goes through the parsers' normalisation (NFKC, Arabic ``ي``/``ك`` → Farsi ``ی``/``ک``, ZWNJ kept).
``[Source n]`` citation markers, which our answer prompt asks for, are stripped first: they are not content.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from chunkbench.text.normalize import normalize_text

# ``[Source 2]``, ``[source 1, 3]``, ``[Sources 1-2]``, ``[Source ۲]`` (any Unicode digits, Farsi comma too).
_CITATION = re.compile(r"\[\s*sources?\s*\d+(?:\s*[-–,،]\s*\d+)*\s*\]", re.IGNORECASE)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_ASCII_SYMBOLS = frozenset(string.punctuation)


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_SYMBOLS or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """Citations removed, NFKC + Farsi letters, lowercase, punctuation and a/an/the dropped, spaces collapsed."""
    text = _CITATION.sub(" ", text)
    text = normalize_text(text).lower()
    # Punctuation becomes a space, not nothing: "state-of-the-art" and "کتاب،دفتر" are two or more words.
    text = "".join(" " if _is_punctuation(char) else char for char in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, expected: str) -> float:
    """1.0 when the normalised answers are identical, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(expected))


def token_f1(prediction: str, expected: str) -> float:
    """Harmonic mean of token precision and recall on normalised answers (multiset overlap, as SQuAD).

    Two empty answers score 1.0; one empty answer scores 0.0.
    """
    predicted_tokens = normalize_answer(prediction).split()
    expected_tokens = normalize_answer(expected).split()
    if not predicted_tokens or not expected_tokens:
        return float(predicted_tokens == expected_tokens)
    common = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted_tokens)
    recall = common / len(expected_tokens)
    return 2 * precision * recall / (precision + recall)


def answer_similarity(
    prediction_vector: Sequence[float] | np.ndarray, expected_vector: Sequence[float] | np.ndarray
) -> float:
    """Cosine similarity of two embeddings, in [-1, 1]; the vectors need not be normalised.

    A zero vector has no direction: its similarity to anything is 0.0 (not NaN). Vectors of different
    dimensions are a ``ValueError`` (they come from different models).
    """
    a = np.asarray(prediction_vector, dtype=np.float64).ravel()
    b = np.asarray(expected_vector, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"Vectors of different dimensions cannot be compared: {a.shape[0]} and {b.shape[0]}.")
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norms == 0.0 or not np.isfinite(norms):
        return 0.0
    # Rounding can push the cosine of (nearly) parallel vectors a hair outside [-1, 1].
    return float(np.clip(np.dot(a, b) / norms, -1.0, 1.0))


@dataclass(frozen=True)
class AnswerMetrics:
    """One answer's scores; ``answer_similarity`` is ``None`` when no embeddings were given."""

    exact_match: float
    token_f1: float
    answer_similarity: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def answer_metrics(
    prediction: str,
    expected: str,
    prediction_vector: Sequence[float] | np.ndarray | None = None,
    expected_vector: Sequence[float] | np.ndarray | None = None,
) -> AnswerMetrics:
    """Exact match, token F1 and (when both embeddings are given) the cosine similarity of one answer."""
    similarity = (
        answer_similarity(prediction_vector, expected_vector)
        if prediction_vector is not None and expected_vector is not None
        else None
    )
    return AnswerMetrics(
        exact_match=exact_match(prediction, expected),
        token_f1=token_f1(prediction, expected),
        answer_similarity=similarity,
    )
