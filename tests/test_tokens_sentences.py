"""The cl100k tokenizer matches tiktoken exactly and maps tokens to exact source slices; sentence spans."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import bpe_openai
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.text.sentences import split_sentences
from chunkbench.text.tokens import get_tokenizer

REPO = Path(__file__).resolve().parents[1]
CORPORA = DEFAULT_CHROMA_DIR / "corpora"

MIXED = (
    "Revenue grew 2.5% in Q3 — see table 4.\n\n"
    "## گزارش مالی\n\nمی‌خواهم درآمد سال ۱۴۰۲ را بررسی کنم؟ بله؛ این بخش۔\n\n"
    "Emoji: 👩‍💻🚀👍🏽 and flags 🇮🇷🇬🇧; CJK: 漢字かなカナ한국어。\n\n"
    "```python\ndef f(x: int) -> int:\n    return x ** 2  # square\n```\n\n"
    "Combining: e\u0301 n\u0303; zero-width: a\u200bb\u200cc; tabs\tand   spaces\r\n<|endoftext|> stays text."
)

_WORDS = st.sampled_from(
    ["the", "tokenizer", "x", "2.5", "۲.۵", "می‌خواهم", "گزارش", "👩‍💻", "🚀", "漢字", "かな", "e\u0301", "::", "\t"]
)
_TEXTS = st.lists(st.one_of(_WORDS, st.sampled_from([" ", "\n", "\n\n", "  "]), st.text(max_size=8)), max_size=60).map(
    "".join
)


@pytest.fixture(scope="module")
def reference() -> tiktoken.Encoding:
    """tiktoken on bpe-openai's bundled cl100k file: the reference encoder, offline."""
    return tiktoken.Encoding(**bpe_openai.registry.cl100k_base())


def _corpus_text(limit: int = 200_000) -> str:
    return "\n\n".join(path.read_text(encoding="utf-8") for path in sorted(CORPORA.glob("*.md")))[:limit]


def _assert_exact_boundaries(text: str) -> None:
    ids, offsets = get_tokenizer().boundaries(text)
    assert len(offsets) == len(ids) + 1
    assert offsets[0] == 0 and offsets[-1] == len(text)
    assert all(a <= b for a, b in pairwise(offsets.tolist()))
    bounds = offsets.tolist()
    assert "".join(text[a:b] for a, b in pairwise(bounds)) == text


def test_hello_world_ids() -> None:
    assert get_tokenizer().encode("hello world").tolist() == [15339, 1917]
    assert get_tokenizer().count("hello world") == 2


def test_mixed_text_ids_and_counts_match_tiktoken(reference: tiktoken.Encoding) -> None:
    tokenizer = get_tokenizer()
    expected = reference.encode_ordinary(MIXED)
    assert tokenizer.encode(MIXED).tolist() == expected
    assert tokenizer.boundaries(MIXED)[0].tolist() == expected
    assert tokenizer.count(MIXED) == len(expected)
    parts = MIXED.split("\n\n")
    assert tokenizer.count_many(parts) == [len(reference.encode_ordinary(p)) for p in parts]
    assert tokenizer.count("") == 0 and tokenizer.count_many([]) == []


def test_corpus_ids_match_tiktoken(reference: tiktoken.Encoding) -> None:
    text = _corpus_text() + "\n\n" + MIXED
    assert get_tokenizer().encode(text).tolist() == reference.encode_ordinary(text)
    _assert_exact_boundaries(text)


def test_boundaries_of_characters_split_across_tokens() -> None:
    text = "👩‍💻 ok 🇮🇷 漢字"
    ids, offsets = get_tokenizer().boundaries(text)
    # The emoji bytes span several tokens: the tokens ending inside it share its start offset.
    assert len(ids) > len(text.split())
    assert any(a == b for a, b in pairwise(offsets.tolist()))
    _assert_exact_boundaries(text)
    _assert_exact_boundaries(MIXED)
    _assert_exact_boundaries("")


@settings(max_examples=80, deadline=None)
@given(_TEXTS)
def test_boundaries_property(text: str) -> None:
    _assert_exact_boundaries(text)


def _texts(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


def test_decimals_are_not_sentence_ends() -> None:
    assert _texts("The price rose 2.5 percent. Then it fell! Did it? Yes.") == [
        "The price rose 2.5 percent.",
        "Then it fell!",
        "Did it?",
        "Yes.",
    ]
    farsi = "قیمت ۲.۵ درصد افزایش یافت. آیا درست است؟ بله؛ درست است۔ پایان"
    assert _texts(farsi) == ["قیمت ۲.۵ درصد افزایش یافت.", "آیا درست است؟", "بله؛", "درست است۔", "پایان"]


def test_fallback_chain() -> None:
    # No sentence punctuation: one unit per non-empty line (English and Farsi).
    assert _texts("alpha beta\n gamma delta  \nepsilon") == ["alpha beta", "gamma delta", "epsilon"]
    assert _texts("سلام دنیا\nخط دوم") == ["سلام دنیا", "خط دوم"]
    # Blank-line paragraphs are units even without punctuation.
    assert _texts("alpha beta\n\ngamma") == ["alpha beta", "gamma"]
    # One line, no punctuation: the whole (trimmed) text is one unit.
    assert _texts("  just one unit without an end  ") == ["just one unit without an end"]
    assert split_sentences("") == [] and split_sentences(" \n\t ") == []


@settings(max_examples=80, deadline=None)
@given(_TEXTS)
def test_sentence_spans_are_exact(text: str) -> None:
    spans = split_sentences(text)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()
        assert text[previous_end:start].strip() == ""  # nothing but whitespace is left out
        previous_end = end
    assert text[previous_end:].strip() == ""
