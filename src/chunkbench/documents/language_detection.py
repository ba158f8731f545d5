"""A document's written language: detected from samples of its prose, declared by the file, or set by the user.

Detection classifies several windows spread over the whole text (beginning, middle, end) after stripping what is
not prose (code, URLs, e-mail addresses, base64, numbers, all-capitals runs, markdown markup), with py3langid
restricted to the languages the embedding registry can speak of (see docs/languages.md, "Language
detection", for the measurement behind the choice). A text that is mostly code, too short, or without a confident
language is ``und``; so is every ``kind == "code"`` document.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from chunkbench.embedding.languages import UNDETERMINED, XLMR_LANGUAGES, language_label
from chunkbench.errors import InvalidRequestError
from chunkbench.models import ParseResult


class LanguageSource(StrEnum):
    DETECTED = "detected"
    DECLARED = "declared"  # by the file itself: an HTML lang attribute, a DOCX/PPTX core property
    USER = "user"


# Every ISO 639-1 code: what a user may set (plus ``und``).
_ISO_639_1_CODES = (
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el "
    "en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu "
    "ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na "
    "nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so "
    "sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
)
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())
# ISO 639-2 codes a file may declare instead of the 639-1 one (the languages users have asked about so far).
_ISO_639_2 = {
    "eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "fas": "fa", "per": "fa",
    "ita": "it", "por": "pt", "nld": "nl", "dut": "nl", "rus": "ru", "ara": "ar", "zho": "zh", "chi": "zh",
    "jpn": "ja", "kor": "ko", "tur": "tr", "pol": "pl", "swe": "sv", "nor": "no", "nob": "no", "nno": "no",
}  # fmt: skip
# The registry names Norwegian "no" (XLM-R's training data); Bokmål and Nynorsk are read as it.
_SAME_AS = {"nb": "no", "nn": "no", "iw": "he", "in": "id", "ji": "yi"}

# Detection: how much prose there must be, how it is sampled, and how sure the classifier must be.
MIN_PROSE_LETTERS = 24  # "Test page" (8 letters) is too short to tell
MAX_CODE_SHARE = 0.5  # more of the text's characters in code lines than this: the document is code, und
MAX_READ_CHARS = 240_000  # of a longer text, READ_SLICES stretches spread over it are read
READ_SLICES = 30
WINDOW_CHARS = 800
MAX_WINDOWS = 9
MIN_CONFIDENCE = 0.35  # below, or less than MIN_MARGIN times as probable as the runner-up: und
MIN_MARGIN = 2.0
# A detection this sure overrides a contradicting declared language (Word files say "en-US" whatever their text).
CONFIDENT_CONTRADICTION = 0.9

Distribution = Mapping[str, float]
Classifier = Callable[[str], Distribution]


@dataclass(frozen=True)
class LanguageGuess:
    """A document's language (ISO 639-1 or ``und``), how sure, where it came from, and what to tell the user."""

    code: str
    confidence: float
    source: LanguageSource
    note: str | None = None  # an ingest warning (a declared language the text contradicts)


def normalise_code(tag: str | None) -> str | None:
    """ISO 639-1 (or ``und``) of a BCP 47 tag or ISO 639 code (``en-US`` → ``en``, ``fa_IR`` → ``fa``); None when
    it names no language chunkbench knows."""
    if not tag:
        return None
    primary = re.split(r"[-_]", tag.strip().lower(), maxsplit=1)[0]
    primary = _ISO_639_2.get(primary, primary)
    primary = _SAME_AS.get(primary, primary)
    if primary == UNDETERMINED or primary in ISO_639_1:
        return primary
    return None


def user_code(code: str) -> str:
    """The language a user asked for, normalised; a 400 naming the valid codes when it is none."""
    normalised = normalise_code(code)
    if normalised is None:
        raise InvalidRequestError(
            f"'{code}' is not a language code. Give an ISO 639-1 code (en, de, fr, es, fa, … — any of the "
            f"{len(ISO_639_1)} two-letter codes; a regional tag such as en-US is read as en) or 'und' (undetermined).",
            language=code,
            valid=sorted(ISO_639_1 | {UNDETERMINED}),
        )
    return normalised


# --- prose extraction --------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_INLINE_CODE = re.compile(r"`[^`]*`")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")  # base64, hashes, ids
_WITH_DIGITS = re.compile(r"\b\w*\d\w*\b")  # numbers and codes such as 3M, H2O, v1
_ALL_CAPS = re.compile(r"\b[A-Z][A-Z'’\-]+\b")  # two capitals or more: headings, tables of contents, acronyms
_MARKUP = re.compile(r"[#*_>|~=^\\\[\](){}<>+•·…\"“”„«»]+")
_LEADERS = re.compile(r"(?:\s*[.·…_-]){3,}")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE_START = re.compile(
    r"^\s*(?:def|class|import|from\s+\S+\s+import|return|#include|#!|public|private|protected|static|var|let|const|"
    r"function|func|fn|package|using|namespace|try|catch|except|elif|else|for|while|if|switch|case|print|echo|"
    r"SELECT|INSERT|UPDATE|CREATE|@\w+)\b[^.]*$"
)
_CODE_END = re.compile(r"[;{}]\s*$|\)\s*:\s*$|^\s*[})\]]")
_CODE_SYMBOLS = frozenset("{}[]()<>=;$\\&|^~/*+%#@")
_CODE_OPERATORS = re.compile(
    r"==|!=|->|=>|::|\+\+|&&|\|\||[-+*/]=|\w\(\)|\w\.\w+\(|[a-z]_[a-z]|[a-z_]{2,}\.[a-z_]{2,}|^\s*\w+\s*=\s*\S"
)


def _is_code_line(line: str) -> bool:
    """Whether a line outside a code fence reads as code rather than prose."""
    stripped = line.strip()
    if _CODE_START.match(stripped) and (
        _CODE_OPERATORS.search(stripped) or _CODE_END.search(stripped) or stripped.endswith(":")
    ):
        return True
    if _CODE_END.search(stripped) and not stripped.endswith((".", "?", "!")):
        return True
    visible = [c for c in stripped if not c.isspace()]
    symbols = sum(c in _CODE_SYMBOLS for c in visible)
    operators = len(_CODE_OPERATORS.findall(stripped))
    # One operator is code in a line that is no sentence (``self.size = size``), two even in one that is.
    sentence = stripped.endswith((".", "?", "!", '."', ".”")) and len(stripped.split()) >= 4
    return bool(visible) and (symbols / len(visible) > 0.12 or operators >= 2 or (operators == 1 and not sentence))


_HEADING_MARK = re.compile(r"^\s*(?:#{1,6}|>+)\s+")


def _without_markup(line: str) -> str:
    """A line without what makes prose look like code: markdown heading, quote and list marks, table pipes, links,
    URLs and e-mail addresses."""
    line = _HEADING_MARK.sub("", line)
    line = _LIST_MARK.sub("", line)
    line = _LINK.sub(r"\1", line)
    line = _URL.sub("", line)
    line = _EMAIL.sub("", line)
    return line.replace("|", " ") if line.lstrip().startswith("|") else line


def _prose_of_line(line: str) -> str:
    """The words of a line of prose, without markup, links, numbers, codes or all-capitals runs."""
    line = _LIST_MARK.sub(" ", line)
    line = _LINK.sub(r" \1 ", line)
    line = _HTML_TAG.sub(" ", line)
    line = _INLINE_CODE.sub(" ", line)
    line = _URL.sub(" ", line)
    line = _EMAIL.sub(" ", line)
    line = _LONG_TOKEN.sub(" ", line)
    line = _WITH_DIGITS.sub(" ", line)
    line = _ALL_CAPS.sub(" ", line)
    line = _LEADERS.sub(" ", line)
    line = _MARKUP.sub(" ", line)
    line = re.sub(r"\s*[,;\t]\s*(?=[,;\t]|$)", " ", line)  # empty CSV cells
    return " ".join(word for word in line.split() if any(c.isalpha() for c in word))


@dataclass(frozen=True)
class Prose:
    """The prose of a text and the share of its characters that were code."""

    text: str
    code_share: float


def extract_prose(text: str) -> Prose:
    """The text's prose lines, cleaned, and how much of it was code (fenced blocks and code-like lines)."""
    prose: list[str] = []
    code_chars = prose_chars = 0
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        size = len(line.strip())
        if not size:
            continue
        if in_fence or _is_code_line(_without_markup(line)):
            code_chars += size
            continue
        prose_chars += size
        words = _prose_of_line(line)
        if words:
            prose.append(words)
    total = code_chars + prose_chars
    return Prose("\n".join(prose), code_chars / total if total else 0.0)


# --- classification ----------------------------------------------------------------------------------------------


@cache
def _identifier():
    """py3langid's model (it ships in the wheel), with probabilities, over the registry's languages."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    # Its 142 labels include languages no model here reads and that short or odd English text falls into
    # (pcm, bcl, nn, zxx …): only XLM-R's 100, which every model's ``languages`` is a subset of, are told apart.
    identifier.set_languages(sorted(XLMR_LANGUAGES & set(identifier.labels)))
    return identifier


def py3langid_classifier(text: str) -> Distribution:
    """Language → probability of one sample (py3langid, restricted to the registry's languages)."""
    return dict(_identifier().rank(text))


def sample_windows(prose: str, window: int = WINDOW_CHARS, most: int = MAX_WINDOWS) -> list[str]:
    """Windows of about ``window`` characters spread evenly over ``prose`` (first and last included), cut at
    spaces; the whole prose when it is short."""
    if len(prose) <= window * 2:
        return [prose]
    count = min(most, max(2, len(prose) // window))
    step = (len(prose) - window) / (count - 1)
    windows = []
    for index in range(count):
        start = round(index * step)
        if start:  # start after a space: no cut word
            space = prose.find(" ", start)
            start = space + 1 if 0 <= space < start + 50 else start
        windows.append(prose[start : start + window])
    return windows


def classify_prose(prose: str, classify: Classifier = py3langid_classifier) -> tuple[str, float]:
    """The most probable language over the prose's windows (probabilities averaged) and its mean probability;
    ``und`` when too short, below ``MIN_CONFIDENCE`` or not ``MIN_MARGIN`` times as probable as the next."""
    if sum(c.isalpha() for c in prose) < MIN_PROSE_LETTERS:
        return UNDETERMINED, 0.0
    windows = sample_windows(prose)
    totals: dict[str, float] = {}
    for window in windows:
        for code, probability in classify(window).items():
            code = _SAME_AS.get(code, code)
            totals[code] = totals.get(code, 0.0) + probability
    if not totals:
        return UNDETERMINED, 0.0
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))  # ties: the first code alphabetically
    code, total = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    confidence = total / len(windows)
    if confidence < MIN_CONFIDENCE or total < MIN_MARGIN * runner_up:
        return UNDETERMINED, round(confidence, 4)
    return code, round(confidence, 4)


def _slices(text: str, most: int = MAX_READ_CHARS, count: int = READ_SLICES) -> str:
    """The whole text when it is short; else ``count`` stretches of whole lines spread evenly over it, ``most``
    characters in all (stripping costs about a second a megabyte: an 872-page handbook is read in slices)."""
    if len(text) <= most:
        return text
    size = most // count
    step = (len(text) - size) / (count - 1)
    parts = []
    for index in range(count):
        start = round(index * step)
        start = text.find("\n", start) + 1 if start else 0  # whole lines: a cut line could look like code
        end = len(text) if start + size >= len(text) else text.rfind("\n", start, start + size)
        parts.append(text[start : end if end > start else start + size])
    return "\n".join(parts)


def detect_text(text: str, classify: Classifier = py3langid_classifier) -> tuple[str, float]:
    """The language of a text (``und`` when mostly code, too short or unsure) and the confidence."""
    prose = extract_prose(_slices(text))
    if prose.code_share > MAX_CODE_SHARE:
        return UNDETERMINED, round(prose.code_share, 4)
    return classify_prose(prose.text, classify)


def document_language(
    parsed: ParseResult, classify: Classifier = py3langid_classifier, *, min_confidence: float = 0.8
) -> LanguageGuess:
    """A parsed document's language: ``und`` for code, else the detection combined with what the file declares.

    A declared language is kept when detection agrees, is unsure, or finds nothing; a confident contradiction
    (≥ ``CONFIDENT_CONTRADICTION``) keeps the detection, and the note says so. A detection below ``min_confidence``
    (``CHUNKBENCH_LANGUAGE_MIN_CONFIDENCE``: what the language rules call confident) is ``und`` — never a made-up
    language — and the note names the best guess.
    """
    if parsed.kind == "code":
        return LanguageGuess(UNDETERMINED, 1.0, LanguageSource.DETECTED)
    code, confidence = detect_text(parsed.markdown or parsed.plain_text, classify)
    declared = normalise_code(parsed.declared_language)
    if declared is None or declared == UNDETERMINED:
        if code != UNDETERMINED and confidence < min_confidence:
            note = (
                f"Language undetermined: the text reads most like {language_label(code)}, but only with confidence "
                f"{confidence:.2f} (below {min_confidence:g}). If you know it, set it with "
                "`chunkbench documents set-language DOC CODE` (API: PATCH /documents/{id})."
            )
            return LanguageGuess(UNDETERMINED, confidence, LanguageSource.DETECTED, note)
        return LanguageGuess(code, confidence, LanguageSource.DETECTED)
    if code in (declared, UNDETERMINED) or confidence < CONFIDENT_CONTRADICTION:
        return LanguageGuess(declared, 1.0, LanguageSource.DECLARED)
    note = (
        f"The file declares its language as '{parsed.declared_language}', but its text reads as "
        f"{language_label(code)} (confidence {confidence:.2f}): {code} is kept. If the file is right, set it with "
        f"`chunkbench documents set-language DOC {declared}` (API: PATCH /documents/{{id}})."
    )
    return LanguageGuess(code, confidence, LanguageSource.DETECTED, note)
