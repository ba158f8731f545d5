"""Which languages an embedding model covers, and what to say when a document's language is not among them.

A document's language is the code ``documents.language_detection`` gives it (detected, declared by the file, or set by
the user: ISO 639-1 where one exists, ``und`` when undetermined). A model declares the codes it was trained on
(``EmbeddingModelSpec.languages``); a model that declares none is not checked (a remote or plugin model whose
coverage chunkbench cannot know).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

ENGLISH = frozenset({"en"})
# ISO 639-2's "undetermined": a document that is mostly code, too short, or has no confident language. No model is
# checked against it, so it never refuses a model or switches one.
UNDETERMINED = "und"
# ISO 639-2's "no linguistic content" (py3langid's guess for JSON, tables of figures): no model reads it or fails to.
NO_LANGUAGE = "zxx"
NOT_LANGUAGES = frozenset({UNDETERMINED, NO_LANGUAGE})
# Where a document's language came from: the detector's guess, the file's own declaration, or a user's setting.
CONFIDENT_SOURCES = frozenset({"declared", "user"})

# The languages of XLM-RoBERTa's CC-100 training data, which multilingual-e5-small inherits (its model card lists
# these 100; romanised scripts and Burmese Zawgyi share their language's code, Chinese's two scripts one "zh").
XLMR_LANGUAGE_NAMES: dict[str, str] = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "as": "Assamese", "az": "Azerbaijani", "be": "Belarusian",
    "bg": "Bulgarian", "bn": "Bengali", "br": "Breton", "bs": "Bosnian", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto",
    "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "fy": "Western Frisian", "ga": "Irish", "gd": "Scottish Gaelic", "gl": "Galician", "gu": "Gujarati",
    "ha": "Hausa", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian",
    "id": "Indonesian", "is": "Icelandic", "it": "Italian", "ja": "Japanese", "jv": "Javanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin",
    "lo": "Lao", "lt": "Lithuanian", "lv": "Latvian", "mg": "Malagasy", "mk": "Macedonian", "ml": "Malayalam",
    "mn": "Mongolian", "mr": "Marathi", "ms": "Malay", "my": "Burmese", "ne": "Nepali", "nl": "Dutch",
    "no": "Norwegian", "om": "Oromo", "or": "Odia", "pa": "Punjabi", "pl": "Polish", "ps": "Pashto",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sa": "Sanskrit", "sd": "Sindhi", "si": "Sinhala",
    "sk": "Slovak", "sl": "Slovenian", "so": "Somali", "sq": "Albanian", "sr": "Serbian", "su": "Sundanese",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Filipino",
    "tr": "Turkish", "ug": "Uyghur", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese",
    "xh": "Xhosa", "yi": "Yiddish", "zh": "Chinese",
}  # fmt: skip
XLMR_LANGUAGES = frozenset(XLMR_LANGUAGE_NAMES)


def language_label(code: str) -> str:
    """``Persian (fa)``; a code without a known name stays the code."""
    name = XLMR_LANGUAGE_NAMES.get(code)
    return f"{name} ({code})" if name else code


def languages_label(codes: frozenset[str] | None) -> str:
    """What a model covers, in words: ``English``, ``93 languages``, or ``not declared``."""
    if codes is None:
        return "not declared"
    if len(codes) <= 3:
        return ", ".join(XLMR_LANGUAGE_NAMES.get(code, code) for code in sorted(codes))
    return f"{len(codes)} languages"


Standing = Literal["accepted", "minority", "unsure"]


def percent(share: float | None) -> str:
    """A share as the language sentences show it: ``3.8 %``."""
    return "?" if share is None else f"{share * 100:.1f} %"


@dataclass(frozen=True)
class LanguageEvidence:
    """What the language rule knows of one document: its language, how sure, where it came from, how much text."""

    name: str  # source key (or filename): how the warnings name it
    language: str | None
    confidence: float | None = None  # 0–1; None on rows detected before confidence was stored
    source: str | None = None  # detected | declared | user
    characters: int = 0  # of its parsed text


@dataclass(frozen=True)
class LanguageRule:
    """When the language of documents switches a model or refuses one: only on confident detections of documents
    that together hold a material share of the text (``Settings.language_min_confidence`` and
    ``language_material_share``; the README states why these values)."""

    min_confidence: float = 0.8
    material_share: float = 0.1

    def confident(self, document: LanguageEvidence) -> bool:
        """Declared and user-set languages are; a detection when sure enough; an old row (no confidence) is."""
        if document.source in CONFIDENT_SOURCES or document.confidence is None:
            return True
        return document.confidence >= self.min_confidence

    def text_share(self, documents: Iterable[LanguageEvidence], of: Sequence[LanguageEvidence]) -> float:
        """The share of ``of``'s characters held by ``documents`` (of its documents, when none has text)."""
        names = {d.name for d in documents}
        total = sum(d.characters for d in of)
        if total <= 0:
            return sum(d.name in names for d in of) / len(of) if of else 0.0
        return sum(d.characters for d in of if d.name in names) / total

    def standing(self, uncovered: Iterable[str], of: Sequence[LanguageEvidence]) -> Standing | None:
        """Whether documents ``uncovered`` (names of ``of``) in languages a model does not cover switch or refuse it
        (None), or let it through: ``minority`` when they hold less than the material share of the text, ``unsure``
        when they hold enough but their confident ones do not (a document processed alone is all of its text)."""
        names = set(uncovered)
        members = [d for d in of if d.name in names]
        if not members or not self.material(self.text_share(members, of)):
            return "minority" if members else None
        counted = [d for d in members if self.confident(d)]
        return None if counted and self.material(self.text_share(counted, of)) else "unsure"

    def material(self, share: float) -> bool:
        return share >= self.material_share


def evidence_of(languages: Mapping[str, str | None]) -> list[LanguageEvidence]:
    """Bare detected languages (name → code) as evidence: confident, equal shares."""
    return [LanguageEvidence(name, code) for name, code in languages.items()]


@dataclass(frozen=True)
class LanguageWarning:
    """A model that does not cover the language of documents it embedded: what it says and what fixes it."""

    role: str  # "corpus" | "boundary"
    model_id: str
    language: str
    documents: tuple[str, ...]  # the documents' names (source keys or filenames)
    covering: tuple[str, ...]  # registered models that do cover the language
    model_languages: frozenset[str] | None = None  # what the model does cover
    # The documents' share of the corpus they belong to (None for a document processed alone: the whole of it).
    total_documents: int = 1
    text_share: float | None = None
    # Why it was not refused: accepted with the flag, a minority of the text, or detections not confident enough.
    standing: Standing | None = None
    rule: LanguageRule | None = None

    @property
    def documents_share(self) -> float:
        return len(self.documents) / self.total_documents if self.total_documents else 1.0

    @property
    def share(self) -> str:
        """``2 of 52 documents, 1.2 % of the text``; empty for a document on its own."""
        if self.total_documents <= 1:
            return ""
        text = f", {percent(self.text_share)} of the text" if self.text_share is not None else ""
        return f"{len(self.documents)} of {self.total_documents} documents{text}"

    @property
    def _subject(self) -> str:
        """``'a.md' is in Persian (fa)``, ``'a.md', 'b.md' and 2 more are in …``."""
        shown = ", ".join(f"'{name}'" for name in self.documents[:3])
        more = len(self.documents) - 3
        verb = "is" if len(self.documents) == 1 else "are"
        share = f" ({self.share})" if self.share else ""
        return f"{shown}{f' and {more} more' if more > 0 else ''}{share} {verb} in {language_label(self.language)}"

    @property
    def _role(self) -> str:
        return "Corpus model" if self.role == "corpus" else "Boundary model"

    @property
    def message(self) -> str:
        """The warning shown wherever results built on this model appear."""
        what = "its chunks and questions were embedded" if self.role == "corpus" else "its semantic cuts were found"
        fix = f"process with {self.covering[0]}" if self.covering else "no registered model declares this language"
        message = (
            f"{self._subject}, which the {self._role} {self.model_id} does not cover: {what} by a model that cannot "
            f"read it, so its results are not meaningful ({fix})."
        )
        return f"{message} {self.standing_sentence}" if self.standing_sentence else message

    @property
    def standing_sentence(self) -> str:
        """Why the model was kept rather than switched or refused, when the language rule let it through."""
        rule = self.rule or LanguageRule()
        if self.standing == "minority":
            return (
                f"Together, documents the {self._role} does not cover hold less than the {percent(rule.material_share)}"
                f" of the text at which chunkbench switches or refuses a model, so they are processed with "
                f"{self.model_id} like the rest."
            )
        if self.standing == "unsure":
            return (
                f"The language was detected with a confidence below {rule.min_confidence:.2f}, too unsure to switch "
                f"or refuse a model, so {self.model_id} is kept; set the document's language if the guess is right."
            )
        return ""

    def refusal(self) -> str:
        """Why processing is refused, and the two ways on (a model that covers the language, or the flag)."""
        option = "corpus" if self.role == "corpus" else "boundary"
        if self.covering:
            model = self.covering[0]
            fix = f'Use one that does: --{option}-model {model} (API: "{option}_model_id": "{model}"), or'
        else:
            fix = "No registered model declares this language: register one (a plugin), or"
        return (
            f"{self._subject}, which the {self._role} {self.model_id} does not cover (it reads "
            f"{languages_label(self.model_languages)}). {fix} accept the mismatch with --allow-language-mismatch "
            '(API: "allow_language_mismatch": true); the run then records this warning.'
        )

    def chosen_instead(self, model_id: str) -> str:
        """What the run says when an untouched default gave way to a model that covers the language."""
        return (
            f"{self._subject}, which the default {self._role} {self.model_id} does not cover: {model_id} is used "
            f"instead. Pass --{'corpus' if self.role == 'corpus' else 'boundary'}-model, or set the role in Admin, "
            "to choose another."
        )

    def narrowed(self, name: str) -> LanguageWarning:
        """The same warning about one of its documents only (its share of the text is the group's: not known)."""
        return replace(self, documents=(name,), text_share=None)

    def with_share(
        self, total_documents: int, text_share: float | None, standing: Standing | None, rule: LanguageRule
    ) -> LanguageWarning:
        """The same warning with its documents' share of the corpus and why the model was kept."""
        return replace(self, total_documents=total_documents, text_share=text_share, standing=standing, rule=rule)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "language_not_covered",
            "role": self.role,
            "model_id": self.model_id,
            "language": self.language,
            "documents": list(self.documents),
            "covering_models": list(self.covering),
            "message": self.message,
            "total_documents": self.total_documents,
            "documents_share": self.documents_share,
            "text_share": self.text_share,
            "standing": self.standing,
        }


def uncovered(languages: Mapping[str, str | None], covered: frozenset[str] | None) -> dict[str, list[str]]:
    """Language → the documents (of ``languages``: name → code) a model covering ``covered`` does not read."""
    out: dict[str, list[str]] = {}
    if covered is None:
        return out
    for name, code in languages.items():
        if code is not None and code not in NOT_LANGUAGES and code not in covered:
            out.setdefault(code, []).append(name)
    return out
