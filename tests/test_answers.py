"""Answer metrics: SQuAD-style normalisation, exact match and token F1 (English, Farsi, citations), and the
cosine answer similarity, by hand and on the real MiniLM."""

from __future__ import annotations

import math

import pytest

from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import embed_texts
from chunkbench.evaluation.answers import (
    AnswerMetrics,
    answer_metrics,
    answer_similarity,
    exact_match,
    normalize_answer,
    token_f1,
)

ZWNJ = "\u200c"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Cat sat on a mat!", "cat sat on mat"),
        ("Paris is the capital. [Source 1]", "paris is capital"),
        ("It was 1889 [Source 1] [source 3].", "it was 1889"),
        ("Two sources [Sources 1, 2] agree", "two sources agree"),
        ("state-of-the-art   results", "state of art results"),
        ("  An   apple,\n\tthen THE pear  ", "apple then pear"),
        # "the" inside a word is not an article.
        ("theory and anthem", "theory and anthem"),
        ("[Source 1]", ""),
        # Farsi: Farsi comma and full stop removed, letters intact; Arabic ي/ك become Farsi ی/ک.
        ("پایتخت ایران، تهران است. [Source 2]", "پایتخت ایران تهران است"),
        ("كتاب علي؟", "کتاب علی"),
        # ZWNJ is part of a Farsi word and stays.
        (f"من می{ZWNJ}خواهم.", f"من می{ZWNJ}خواهم"),
        # Citation with Farsi digits.
        ("تهران [Source ۲]", "تهران"),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_ignores_case_punctuation_articles_and_citations() -> None:
    assert exact_match("The Eiffel Tower. [Source 1]", "eiffel tower") == 1.0
    assert exact_match("Eiffel Tower, Paris", "Eiffel Tower") == 0.0
    assert exact_match("علي", "علی") == 1.0
    assert exact_match("تهران.", "تهران") == 1.0
    assert exact_match("", "") == 1.0


def test_token_f1_hand_computed() -> None:
    # [cat, sat, on, mat] vs [cat, on, mat]: 3 shared, P = 3/4, R = 1, F1 = 6/7.
    assert token_f1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)
    # Multiset overlap: [x, x, y] vs [x, y, y]: shared x1 + y1 = 2, P = R = 2/3, F1 = 2/3.
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    # Farsi: 1 of 4 predicted tokens shared, the only expected one: P = 1/4, R = 1, F1 = 0.4.
    assert token_f1("تهران پایتخت ایران است", "تهران.") == pytest.approx(0.4)
    assert token_f1("Paris [Source 1]", "paris") == 1.0
    assert token_f1("London", "Paris") == 0.0


def test_token_f1_of_empty_answers() -> None:
    assert token_f1("", "") == 1.0
    assert token_f1("[Source 1]", "the") == 1.0  # both normalise to nothing
    assert token_f1("", "Paris") == 0.0
    assert token_f1("Paris", "") == 0.0


def test_answer_similarity_is_the_cosine_of_unnormalised_vectors() -> None:
    assert answer_similarity([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert answer_similarity([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert answer_similarity([1.0, 1.0], [-2.0, -2.0]) == pytest.approx(-1.0)
    assert answer_similarity([1.0, 0.0], [5.0, 5.0]) == pytest.approx(1 / math.sqrt(2))
    # Rounding never pushes it out of [-1, 1].
    assert answer_similarity([0.1] * 384, [0.1] * 384) <= 1.0


def test_answer_similarity_zero_vector_and_mismatch() -> None:
    assert answer_similarity([0.0, 0.0], [1.0, 2.0]) == 0.0
    with pytest.raises(ValueError, match="different dimensions cannot be compared: 2 and 3"):
        answer_similarity([1.0, 0.0], [1.0, 0.0, 0.0])


def test_answer_metrics_with_and_without_vectors() -> None:
    without = answer_metrics("The cat sat on the mat", "a cat on a mat")
    assert without == AnswerMetrics(exact_match=0.0, token_f1=pytest.approx(6 / 7), answer_similarity=None)
    assert without.to_dict()["answer_similarity"] is None
    with_vectors = answer_metrics("Paris.", "paris", [3.0, 4.0], [6.0, 8.0])
    assert with_vectors.exact_match == 1.0 and with_vectors.token_f1 == 1.0
    assert with_vectors.answer_similarity == pytest.approx(1.0)
    # One vector alone is not enough.
    assert answer_metrics("a", "b", [1.0], None).answer_similarity is None


@pytest.mark.model
def test_answer_similarity_on_minilm_ranks_paraphrase_above_unrelated(settings: Settings) -> None:
    spec = get_spec("all-MiniLM-L6-v2")
    vectors = embed_texts(
        spec,
        ["The capital of France is Paris.", "Paris is France's capital city.", "Bananas are rich in potassium."],
        "document",
        settings,
    )
    paraphrase = answer_similarity(vectors[0], vectors[1])
    unrelated = answer_similarity(vectors[0], vectors[2])
    assert paraphrase > 0.8
    assert unrelated < 0.3
    metrics = answer_metrics(
        "Paris is France's capital city.", "The capital of France is Paris.", vectors[1], vectors[0]
    )
    assert metrics.answer_similarity == pytest.approx(paraphrase)
    assert metrics.exact_match == 0.0
