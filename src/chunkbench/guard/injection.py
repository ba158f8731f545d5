"""Prompt-injection detector: the patterns of ``injection_patterns/`` give a text a risk score and its reasons."""

# Two uses (docs/service.md): a *query* whose verdict is flagged is refused with a fixed answer and never reaches
# retrieval, the cache or the LLM; an ingested *chunk* whose verdict is flagged is indirect injection (instructions
# planted in a document), and the context builder marks or drops it. Each pattern carries a weight; the risk is
# ``1 - Π(1 - weight)`` over the patterns that match, so two weak signals add up and one strong signal is enough.
# Heuristics, not a classifier: the detection and false-positive rates on a labelled set are measured by
# ``perf/guard.py`` (README, "Guards"). The pattern table is data (injection_patterns/, one file per family of
# attacks) so that tuning it is an edit of what is looked for, apart from the code that reads texts and scores them.

from __future__ import annotations

import operator
import re
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, reduce
from importlib import resources
from typing import Any

from chunkbench.guard.quick_search import QuickSearch, words_of


@dataclass(frozen=True)
class InjectionPattern:
    name: str
    weight: float
    regex: re.Pattern[str]
    # Tried on the de-obfuscated readings too (not for shapes such as base64 blobs that joining letters creates).
    deobfuscate: bool = True
    # Every group must have one word in the text (casefolded, spaces collapsed) for the pattern to match.
    keywords: tuple[tuple[str, ...], ...] = ()
    # Searched on the text as written; the others are written in lower case and searched on the lower-cased text,
    # which ``re`` scans about twice as fast as with IGNORECASE.
    cased: bool = False

    @cached_property
    def quick(self) -> QuickSearch:
        """The regex searched with shortcuts read from it (quick_search): faster, the same matches. Worked out when
        first used (~5 ms a pattern), so that a process that never screens a text does not pay for it."""
        return QuickSearch.of(self.regex, cased=self.cased)

    def search(self, reading: Reading) -> bool:
        """Whether the pattern matches one reading of a text."""
        if not self.quick.found(reading, reading.text if self.cased else reading.lower):
            return False
        # The keywords last: they are looked up only for the few texts the regex matches.
        return all(any(reading.has(word) for word in group) for group in self.keywords)


class Reading:
    """One reading of a text: as written and lower-cased; lower-cased with whitespace runs as one space, and its
    whole words, computed when a pattern first needs them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self._has: dict[str, bool] = {}

    @cached_property
    def folded(self) -> str:
        return " ".join(self.lower.split())

    @cached_property
    def words(self) -> set[bytes]:
        return words_of(self.lower)

    def has(self, keyword: str) -> bool:
        """Whether the folded text holds ``keyword``, each keyword looked for once however many patterns use it."""
        found = self._has.get(keyword)
        if found is None:
            found = self._has[keyword] = keyword in self.folded
        return found


PATTERN_FOLDER = "injection_patterns"
# ``{NAME}`` in a regex is the fragment NAME; as a whole keyword, the word list NAME.
_REFERENCE = re.compile(r"\{([A-Z][A-Z_]*)\}")
_PATTERN_KEYS = frozenset({"name", "weight", "regex", "deobfuscate", "cased", "keywords"})


def load_patterns() -> tuple[InjectionPattern, ...]:
    """The patterns of the ``injection_patterns/`` tables shipped in this package, compiled, family by family."""
    folder = resources.files(__package__).joinpath(PATTERN_FOLDER)
    shared = tomllib.loads(folder.joinpath("shared.toml").read_text(encoding="utf-8"))
    # A family file that shared.toml does not list would be ignored without a word: refuse that, and a missing one.
    expected = {"shared.toml", *(f"{family}.toml" for family in shared["families"])}
    found = {entry.name for entry in folder.iterdir() if entry.name.endswith(".toml")}
    if found != expected:
        raise ValueError(f"{PATTERN_FOLDER}/ holds {sorted(found)}, shared.toml names {sorted(expected)}")
    flags = reduce(operator.or_, (re.RegexFlag[flag] for flag in shared["flags"]), re.NOFLAG)
    fragments: dict[str, str] = {}
    for name, value in shared["fragments"].items():
        fragments[name] = _expand(value, fragments)
    words: Mapping[str, list[str]] = shared["words"]
    patterns = []
    for family in shared["families"]:
        for entry in tomllib.loads(folder.joinpath(f"{family}.toml").read_text(encoding="utf-8"))["patterns"]:
            unknown = set(entry) - _PATTERN_KEYS
            if unknown:
                raise ValueError(f"injection pattern {entry.get('name')!r}: unknown keys {sorted(unknown)}")
            keywords = tuple(
                tuple(word for item in group for word in _words(item, words)) for group in entry.get("keywords", ())
            )
            regex = re.compile(_expand(entry["regex"], fragments), flags)
            deobfuscate, cased = entry.get("deobfuscate", True), entry.get("cased", False)
            patterns.append(InjectionPattern(entry["name"], entry["weight"], regex, deobfuscate, keywords, cased))
    return tuple(patterns)


def _expand(regex: str | list[str], fragments: Mapping[str, str]) -> str:
    # A long regex is written as a list of pieces joined with nothing; an unknown {NAME} fails the load (KeyError).
    joined = regex if isinstance(regex, str) else "".join(regex)
    return _REFERENCE.sub(lambda match: fragments[match.group(1)], joined)


def _words(item: str, words: Mapping[str, Any]) -> tuple[str, ...]:
    reference = _REFERENCE.fullmatch(item)
    return tuple(words[reference.group(1)]) if reference else (item,)


PATTERNS: tuple[InjectionPattern, ...] = load_patterns()
# A pattern matched only once the text was de-obfuscated (spaced, leet, split by quotes…): hiding is a signal.
OBFUSCATED = InjectionPattern("obfuscated", 0.3, re.compile(r"(?!)"))
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class InjectionVerdict:
    """The risk (0–1) of a text, the names of the patterns that matched, and whether it reaches the threshold."""

    risk: float
    reasons: tuple[str, ...]
    flagged: bool


class InjectionDetector:
    """Scores texts against ``PATTERNS``; ``flagged`` when the combined risk reaches ``threshold``.

    Each pattern is tried on the text and on de-obfuscated readings of it (``readings``), so spaced, dotted,
    leet-speak, full-width, zero-width-split and reversed spellings of an attack match the same patterns.
    """

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, patterns: tuple[InjectionPattern, ...] = PATTERNS) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("the injection threshold must be in (0, 1]")
        self.threshold = threshold
        self.patterns = patterns

    def check(self, text: str) -> InjectionVerdict:
        original, *others = [Reading(reading) for reading in readings(text)]
        matched = [pattern for pattern in self.patterns if pattern.search(original)]
        hidden = [
            pattern
            for pattern in self.patterns
            if pattern.deobfuscate and pattern not in matched and any(pattern.search(other) for other in others)
        ]
        if hidden:
            hidden.append(OBFUSCATED)
        keep = 1.0
        for pattern in (*matched, *hidden):
            keep *= 1 - pattern.weight
        reasons = tuple(pattern.name for pattern in (*matched, *hidden))
        risk = round(1 - keep, 4)
        return InjectionVerdict(risk=risk, reasons=reasons, flagged=risk >= self.threshold)


# Invisible characters that split words without showing (zero-width space/joiners, word joiner, BOM, soft hyphen).
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
# These regexes start with the character they are about and look behind it for what comes before, rather than
# start with a lookbehind: ``re`` then skips every other position in its own loop instead of trying each one (3-8×
# faster on a chunk). Each finds what the lookbehind-first form finds: "x(?<=\wx)" holds where "(?<=\w)x" does.
# One separator between single characters: "i.g.n.o.r.e", "I-G-N-O-R-E", "r*u*l*e*s"; then "I g n o r e".
_MARKED = re.compile(r"[.*_-](?<=\b\w[.*_-])(?=\w\b)")
_SPACED = re.compile(r" (?<=\b\w )(?=\w\b)")
_QUOTED = re.compile(r"[\"'“”‘’]([^\"'“”‘’\n]{1,60})[\"'“”‘’]")
# Only texts that show a trick get its reading: most text is read once. The tests only ask whether a text shows
# it, so a search may start anywhere in the trick: at the first punctuation after a word of three punctuated words
# ("IGNORE. ALL. PREVIOUS."), at the first of two hyphens inside a word, at the first leet digit.
_PUNCTUATED = re.compile(r"[.!?,;:](?<=\w[.!?,;:])[.!?,;:]*\s+(?:\w+[.!?,;:]+\s+){2}")
_HYPHENATED = re.compile(r"[-_](?:(?<=\w[-_])\w+[-_]\w|(?<=[A-Za-z]-)[a-z]{3})")
_LEET_WORD = re.compile(r"[013457@$](?:(?<=[A-Za-z][013457@$])[013457@$]*[A-Za-z]|(?<=\b[013457])[A-Za-z]{2})")
_REVERSED_WORDS = re.compile(r"\b(?:eht|dna|uoy|ruoy|erongi|snoitcurtsni|lla|siht)\b", re.IGNORECASE)
_INNER_HYPHEN = re.compile(r"-(?<=[A-Za-z]-)(?=[a-z])")
_WORD_PUNCTUATION = re.compile(r"[.!?,;:](?<=\w[.!?,;:])[.!?,;:]*(?=\s)")


def readings(text: str) -> list[str]:
    """The text first, then its de-obfuscated readings where the text shows the trick: NFKC with invisible
    characters removed; separators between single letters closed; hyphens and underscores as spaces or removed;
    leet digits as letters; the text reversed; quoted pieces read together (payload splitting)."""
    plain = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    variants = [text, plain]
    # Marks first, then spaces: "i.g.n.o.r.e p.r.e.v" becomes "ignore prev", not "ignoreprev".
    joined = _SPACED.sub("", _MARKED.sub("", plain))
    if joined != plain:
        variants.append(joined)
    if _PUNCTUATED.search(plain):  # "IGNORE. ALL. PREVIOUS. INSTRUCTIONS."
        variants.append(_WORD_PUNCTUATION.sub("", plain))
    if _HYPHENATED.search(plain):
        variants += [re.sub(r"[-_]+", " ", plain), _INNER_HYPHEN.sub("", plain)]
    if _LEET_WORD.search(joined):
        variants.append(joined.translate(_LEET))
    if len(_REVERSED_WORDS.findall(plain)) >= 2:
        variants.append(plain[::-1])
    quoted = _QUOTED.findall(plain)
    if len(quoted) >= 2:
        variants += ["".join(quoted), " ".join(quoted)]
    return list(dict.fromkeys(variants))
