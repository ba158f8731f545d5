"""Which languages an embedding model covers, and what to say when a document's language is not among them.

A document's language is the code ``documents.language`` gives it (detected, declared by the file, or set by the
user: ISO 639-1 where one exists, ``und`` when undetermined). A model declares the codes it was trained on
(``EmbeddingModelSpec.languages``); a model that declares none is not checked (a remote or plugin model whose
coverage chunkbench cannot know).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

ENGLISH = frozenset({"en"})
# ISO 639-2's "undetermined": a document that is mostly code, too short, or has no confident language. No model is
# checked against it, so it never refuses a model or switches one.
UNDETERMINED = "und"

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


@dataclass(frozen=True)
class LanguageWarning:
    """A model that does not cover the language of documents it embedded: what it says and what fixes it."""

    role: str  # "corpus" | "boundary"
    model_id: str
    language: str
    documents: tuple[str, ...]  # the documents' names (source keys or filenames)
    covering: tuple[str, ...]  # registered models that do cover the language
    model_languages: frozenset[str] | None = None  # what the model does cover

    @property
    def _subject(self) -> str:
        """``'a.md' is in Persian (fa)``, ``'a.md', 'b.md' and 2 more are in …``."""
        shown = ", ".join(f"'{name}'" for name in self.documents[:3])
        more = len(self.documents) - 3
        verb = "is" if len(self.documents) == 1 else "are"
        return f"{shown}{f' and {more} more' if more > 0 else ''} {verb} in {language_label(self.language)}"

    @property
    def _role(self) -> str:
        return "Corpus model" if self.role == "corpus" else "Boundary model"

    @property
    def message(self) -> str:
        """The warning shown wherever results built on this model appear."""
        what = "its chunks and questions were embedded" if self.role == "corpus" else "its semantic cuts were found"
        fix = f"process with {self.covering[0]}" if self.covering else "no registered model declares this language"
        return (
            f"{self._subject}, which the {self._role} {self.model_id} does not cover: {what} by a model that cannot "
            f"read it, so its results are not meaningful ({fix})."
        )

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
        """The same warning about one of its documents only."""
        return replace(self, documents=(name,))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "language_not_covered",
            "role": self.role,
            "model_id": self.model_id,
            "language": self.language,
            "documents": list(self.documents),
            "covering_models": list(self.covering),
            "message": self.message,
        }


def uncovered(languages: Mapping[str, str | None], covered: frozenset[str] | None) -> dict[str, list[str]]:
    """Language → the documents (of ``languages``: name → code) a model covering ``covered`` does not read."""
    out: dict[str, list[str]] = {}
    if covered is None:
        return out
    for name, code in languages.items():
        if code is not None and code != UNDETERMINED and code not in covered:
            out.setdefault(code, []).append(name)
    return out
