"""BM25 sparse vectors for Qdrant's ``IDF`` modifier: term-frequency saturation here, IDF at query time.

Tokenisation, in order:

- NFKC + casefold, so ligatures, full-width forms and Arabic presentation forms meet their plain spelling;
- Arabic-script cleanup: Arabic yeh/kaf/alef maksura become the Farsi letters, diacritics (harakat),
  tatweel and soft hyphens are removed, Persian and Arabic-Indic digits become ASCII digits — Farsi text
  mixes all of these freely, and a diacritic would otherwise split a word in two (it is not ``\\w``);
- Unicode word tokens (``\\w+``), with ZWNJ (U+200C) joining the parts of one Farsi word;
- a ZWNJ-joined word yields its fused form (ZWNJ removed) AND each part: the same Farsi word is written
  with a ZWNJ, with a space or fused ("می‌خواهم", "می خواهم", "میخواهم"), and emitting both forms lets
  every spelling of the query meet every spelling of the document; affix parts ("می", "ها") are so
  frequent that the IDF makes them nearly weightless;
- a small English stopword list; no stemming (it would need one stemmer per language, and BM25 here is
  the lexical complement of the dense vector, whose job is exactly the fuzzy matching).

Tokens map to sparse indices by CRC-32 masked to 31 bits: stable across processes and versions, with no
vocabulary to store. Two terms sharing an index (rare at 2^31 buckets) merely count as one term.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

ZWNJ = "\u200c"

# Common English function words; kept short on purpose, so that queries about e.g. "will" or "can" as
# nouns still have something to match.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being below
    between both but by could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself
    no nor not of off on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why with would you your yours yourself
    yourselves
"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_TRANSLATION = str.maketrans(
    {
        "\u064a": "\u06cc",  # Arabic yeh -> Farsi yeh
        "\u0649": "\u06cc",  # alef maksura -> Farsi yeh
        "\u0643": "\u06a9",  # Arabic kaf -> Farsi kaf
        "\u0640": None,  # tatweel (justification stretch)
        "\u0670": None,  # superscript alef
        "\u00ad": None,  # soft hyphen, left behind by PDF extraction
        **{chr(cp): None for cp in range(0x064B, 0x0660)},  # harakat
        **{chr(0x06F0 + d): str(d) for d in range(10)},  # Persian digits
        **{chr(0x0660 + d): str(d) for d in range(10)},  # Arabic-Indic digits
    }
)

_WORD = re.compile(r"\w+(?:\u200c\w+)*")


@dataclass(frozen=True, slots=True)
class SparseEmbedding:
    """A sparse vector: sorted, distinct ``indices`` and their ``values`` (Qdrant ``SparseVector`` shape)."""

    indices: list[int]
    values: list[float]


def tokenize(text: str) -> list[str]:
    """The index terms of ``text`` in order, after normalisation, ZWNJ expansion and stopword removal."""
    normalised = unicodedata.normalize("NFKC", text).casefold().translate(_TRANSLATION)
    tokens: list[str] = []
    for word in _WORD.findall(normalised):
        if ZWNJ in word:
            parts = word.split(ZWNJ)
            tokens.append("".join(parts))
            tokens.extend(parts)
        elif word not in ENGLISH_STOPWORDS:
            tokens.append(word)
    return tokens


def token_index(token: str) -> int:
    """The sparse index of a term: CRC-32 of its UTF-8 bytes, masked to 31 bits."""
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


class Bm25Encoder:
    """Encodes chunks and queries as BM25 sparse vectors for a collection with ``modifier=IDF``."""

    def __init__(self, k1: float = 1.2, b: float = 0.75, avg_doc_tokens: float = 256) -> None:
        if k1 < 0 or not 0 <= b <= 1 or avg_doc_tokens <= 0:
            raise ValueError(
                f"BM25 needs k1 >= 0, 0 <= b <= 1 and avg_doc_tokens > 0 (got {k1}, {b}, {avg_doc_tokens})"
            )
        self.k1 = k1
        self.b = b
        self.avg_doc_tokens = avg_doc_tokens

    def encode_document(self, text: str) -> SparseEmbedding:
        """One chunk: saturated term frequency ``tf*(k1+1) / (tf + k1*(1-b+b*len/avg))`` per term.

        ``len`` is the number of index terms (after stopword removal and ZWNJ expansion).
        """
        tokens = tokenize(text)
        # Counting by index (not by token) merges hash collisions: Qdrant rejects repeated indices.
        counts = Counter(token_index(token) for token in tokens)
        norm = self.k1 * (1 - self.b + self.b * len(tokens) / self.avg_doc_tokens)
        scale = self.k1 + 1
        indices = sorted(counts)
        return SparseEmbedding(indices, [counts[i] * scale / (counts[i] + norm) for i in indices])

    def encode_documents(self, texts: Iterable[str]) -> list[SparseEmbedding]:
        """One sparse vector per text, in order."""
        return [self.encode_document(text) for text in texts]

    def encode_query(self, text: str) -> SparseEmbedding:
        """A query: weight 1.0 per distinct term, so the score is the sum of matched terms' BM25 weights."""
        indices = sorted({token_index(token) for token in tokenize(text)})
        return SparseEmbedding(indices, [1.0] * len(indices))
