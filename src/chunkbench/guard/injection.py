"""Prompt-injection guard: pattern heuristics that give a text a risk score and the reasons behind it.

Two uses (seed 003): a *query* whose verdict is flagged is refused with a fixed answer and never reaches
retrieval, the cache or the LLM; an ingested *chunk* whose verdict is flagged is indirect injection (instructions
planted in a document), and the context builder marks or drops it. Each pattern carries a weight; the risk is
``1 - Π(1 - weight)`` over the patterns that match, so two weak signals add up and one strong signal is enough.
Heuristics, not a classifier: the detection and false-positive rates on a labelled set are measured by
``bench/guard.py`` (README, "Guards").
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class InjectionPattern:
    name: str
    weight: float
    regex: re.Pattern[str]


def _pattern(name: str, weight: float, expression: str) -> InjectionPattern:
    return InjectionPattern(name, weight, re.compile(expression, re.IGNORECASE | re.DOTALL))


# Words that name what an attacker wants ignored or revealed.
_TARGET = (
    r"(?:instructions?|prompts?|rules?|directives?|guidelines?|context|system\s+message|guardrails?|polic(?:y|ies))"
)
_PREVIOUS = (
    r"(?:all\s+|any\s+|the\s+|your\s+|of\s+)*"
    r"(?:previous|prior|above|preceding|earlier|foregoing|original|initial|existing)"
)

PATTERNS: tuple[InjectionPattern, ...] = (
    _pattern(
        "ignore_previous_instructions",
        0.9,
        rf"\b(?:ignore|disregard|forget|skip|override|bypass|drop)\b[\w\s,]{{0,30}}?{_PREVIOUS}\s+(?:\w+\s+){{0,2}}{_TARGET}",
    ),
    _pattern(
        "ignore_instructions",
        0.6,
        rf"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|your\s+|these\s+|the\s+)*{_TARGET}",
    ),
    _pattern(
        "reveal_system_prompt",
        0.85,
        rf"\b(?:reveal|show|print|repeat|output|display|leak|tell\s+me|give\s+me|what\s+(?:is|are))\b[\w\s,]{{0,30}}?\b(?:system|hidden|secret|initial|original)\s+{_TARGET}",
    ),
    _pattern(
        "role_override",
        0.6,
        r"\b(?:you\s+are\s+now|from\s+now\s+on\s+you\s+(?:are|will)|act\s+as\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|jailbroken|evil)|pretend\s+(?:to\s+be|you\s+are)\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|different))",
    ),
    _pattern("jailbreak_persona", 0.8, r"\b(?:DAN|do\s+anything\s+now|developer\s+mode|jailbreak(?:ed)?|god\s+mode)\b"),
    _pattern(
        "no_restrictions",
        0.5,
        r"\b(?:without|no|free\s+of|ignore)\s+(?:any\s+)?(?:restrictions|limitations|filters|censorship|safety\s+(?:rules|guidelines))\b",
    ),
    _pattern(
        "fake_system_turn",
        0.7,
        r"(?:^|\n)\s*(?:#+\s*)?(?:system|assistant)\s*:|<\|?(?:im_start|system|endoftext)\|?>|\[/?(?:INST|SYS)\]|<</?SYS>>",
    ),
    _pattern(
        "new_instructions", 0.55, r"\b(?:new|updated|real|actual)\s+(?:instructions?|rules|task)\s*(?::|are\b|is\b)"
    ),
    _pattern(
        "exfiltration",
        0.7,
        r"\b(?:send|post|upload|forward|exfiltrate|transmit)\b[\w\s,]{0,40}?\b(?:to\s+)?(?:https?://|www\.|\S+@\S+\.\w+|this\s+(?:url|address|endpoint))",
    ),
    _pattern("markdown_image_exfiltration", 0.6, r"!\[[^\]]*\]\(\s*https?://[^)]*[?&][^)]*=\s*[{$<]"),
    _pattern(
        "instruction_to_model",
        0.45,
        r"\b(?:AI|assistant|language\s+model|LLM|chatbot)\b[\w\s,]{0,20}?\b(?:must|should|will)\s+(?:now\s+)?(?:ignore|respond|answer|reply|say|output|only)\b",
    ),
    _pattern(
        "stop_answer_override",
        0.5,
        r"\b(?:instead|rather)\b[\w\s,]{0,20}?\b(?:respond|reply|answer|say|output)\s+(?:only\s+)?(?:with|by|that)\b",
    ),
    _pattern("encoded_payload", 0.35, r"\b(?:base64|rot13|hex)[\s-]*(?:decode|encoded|decoded)\b"),
)
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class InjectionVerdict:
    """The risk (0–1) of a text, the names of the patterns that matched, and whether it reaches the threshold."""

    risk: float
    reasons: tuple[str, ...]
    flagged: bool


class InjectionDetector:
    """Scores texts against ``PATTERNS``; ``flagged`` when the combined risk reaches ``threshold``."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, patterns: tuple[InjectionPattern, ...] = PATTERNS) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("the injection threshold must be in (0, 1]")
        self.threshold = threshold
        self.patterns = patterns

    def check(self, text: str) -> InjectionVerdict:
        reasons = tuple(pattern.name for pattern in self.patterns if pattern.regex.search(text))
        keep = 1.0
        for pattern in self.patterns:
            if pattern.name in reasons:
                keep *= 1 - pattern.weight
        risk = round(1 - keep, 4)
        return InjectionVerdict(risk=risk, reasons=reasons, flagged=risk >= self.threshold)
