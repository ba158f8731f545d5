"""PII (docs/service.md): a detector finds entities, a policy decides what to keep or redact — two separate things.

The default ``RegexDetector`` finds e-mail addresses, phone numbers, payment card numbers (Luhn-checked), IPv4
addresses (each octet 0–255) and IBANs (mod-97-checked), so digit runs that merely look like them (order numbers,
versions, dates) are not redacted. The ``PiiPolicy`` keeps or redacts each entity type and keeps published role
contacts (``support@``, ``info@``…) that are not personal data. Another detector (e.g. Presidio) can stand behind
the same policy by returning the same ``PiiEntity`` spans: ``PresidioDetector`` (guard/presidio.py, the optional
``presidio`` extra) does. ``detector_from_settings`` and ``policy_from_settings`` build both from ``Settings``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from chunkbench.config import Settings


class EntityType(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    CREDIT_CARD = "credit_card"
    IPV4 = "ipv4"
    IBAN = "iban"
    PERSON = "person"  # found by Presidio's NER only (the regex detector has no names)


@dataclass(frozen=True)
class PiiEntity:
    """One detection: ``text[start:end]`` is of ``type``."""

    type: EntityType
    start: int
    end: int
    text: str


class PiiDetector(Protocol):
    def detect(self, text: str) -> list[PiiEntity]: ...


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?![\w-])")
# Card numbers: 13–19 digits, optionally grouped by single spaces or hyphens.
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")  # a sentence may end after it
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b")
# International (+CC …) or national numbers written with separators; 8–15 digits in all.
# After a country code the first group may be one digit (+33 1 …, +1 415 …).
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}|(?:\(\d{1,4}\)[ .-]?)?\d{2,4})(?:[ .-]\d{2,4}){1,4}"
    r"(?![\w])"
)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Dotted numbers after these words are versions or section numbers, not addresses.
_NOT_AN_ADDRESS = re.compile(r"(?:version|release|v|chapter|section|§|paragraph|clause)\s*$", re.IGNORECASE)


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """ISO 13616 mod-97 check: the country code and check digits moved to the end, letters as 10–35."""
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def ipv4_valid(candidate: str) -> bool:
    """Four octets of 0–255 (``ipaddress`` rules: no leading zeros)."""
    try:
        ipaddress.IPv4Address(candidate)
    except ValueError:
        return False
    return True


class RegexDetector:
    """The default detector: patterns narrowed by checksums and validity, so look-alikes are left alone."""

    def detect(self, text: str) -> list[PiiEntity]:
        found: list[PiiEntity] = []
        taken: list[tuple[int, int]] = []

        def add(kind: EntityType, match: re.Match[str]) -> None:
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                return  # already part of a stronger detection (an IBAN's digits are not a phone number)
            taken.append((start, end))
            found.append(PiiEntity(kind, start, end, match.group()))

        for match in _EMAIL.finditer(text):
            add(EntityType.EMAIL, match)
        for match in _IBAN.finditer(text):
            if iban_valid(match.group()):
                add(EntityType.IBAN, match)
        for match in _CARD.finditer(text):
            digits = re.sub(r"\D", "", match.group())
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                add(EntityType.CREDIT_CARD, match)
        for match in _IPV4.finditer(text):
            if ipv4_valid(match.group()) and not _NOT_AN_ADDRESS.search(
                text[max(0, match.start() - 12) : match.start()]
            ):
                add(EntityType.IPV4, match)
        for match in _PHONE.finditer(text):
            digits = re.sub(r"\D", "", match.group())
            if 8 <= len(digits) <= 15 and not _ISO_DATE.fullmatch(match.group()):
                add(EntityType.PHONE, match)
        return sorted(found, key=lambda entity: entity.start)


# Mailboxes of a role, not a person: published on purpose, kept by default.
DEFAULT_ROLE_MAILBOXES = frozenset(
    {"support", "info", "help", "helpdesk", "contact", "sales", "press", "hr", "jobs", "privacy", "security",
     "billing", "noreply", "no-reply", "admin", "office", "service", "team"}
)  # fmt: skip


@dataclass(frozen=True)
class PiiPolicy:
    """What to do with each entity type: redact the listed types, keep the rest; role mailboxes are kept."""

    redact: frozenset[EntityType] = frozenset(EntityType)
    keep_role_mailboxes: bool = True
    role_mailboxes: frozenset[str] = field(default=DEFAULT_ROLE_MAILBOXES)

    def should_redact(self, entity: PiiEntity) -> bool:
        if entity.type not in self.redact:
            return False
        if entity.type is EntityType.EMAIL and self.keep_role_mailboxes:
            return entity.text.split("@", 1)[0].lower() not in self.role_mailboxes
        return True


@dataclass(frozen=True)
class Redaction:
    """The redacted text and what was replaced (the original values are not kept)."""

    text: str
    redacted: tuple[tuple[EntityType, int, int], ...]

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind, _start, _end in self.redacted:
            counts[kind.value] = counts.get(kind.value, 0) + 1
        return counts


def redact(text: str, policy: PiiPolicy | None = None, detectors: Sequence[PiiDetector] | None = None) -> Redaction:
    """``text`` with every entity the policy redacts replaced by ``[TYPE]`` (e.g. ``[EMAIL]``)."""
    policy = policy or PiiPolicy()
    entities = _merge(entity for detector in detectors or (RegexDetector(),) for entity in detector.detect(text))
    pieces: list[str] = []
    done: list[tuple[EntityType, int, int]] = []
    cursor = 0
    for entity in entities:
        if not policy.should_redact(entity):
            continue
        pieces.append(text[cursor : entity.start])
        pieces.append(f"[{entity.type.value.upper()}]")
        done.append((entity.type, entity.start, entity.end))
        cursor = entity.end
    pieces.append(text[cursor:])
    return Redaction("".join(pieces), tuple(done))


def _merge(entities: Iterable[PiiEntity]) -> list[PiiEntity]:
    """Detections of several detectors, overlaps resolved in favour of the longer span."""
    chosen: list[PiiEntity] = []
    for entity in sorted(entities, key=lambda e: (e.start, -(e.end - e.start))):
        if chosen and entity.start < chosen[-1].end:
            continue
        chosen.append(entity)
    return chosen


def policy_from_settings(settings: Settings) -> PiiPolicy:
    """The policy of ``CHUNKBENCH_PII_REDACT_ENTITIES`` (empty = every type) and ``…_PII_KEEP_ROLE_MAILBOXES``."""
    types = frozenset(EntityType(name) for name in settings.pii_redact_entities) or frozenset(EntityType)
    return PiiPolicy(redact=types, keep_role_mailboxes=settings.pii_keep_role_mailboxes)


def detector_from_settings(settings: Settings) -> PiiDetector:
    """The detector of ``CHUNKBENCH_PII_DETECTOR``: ``regex`` (default) or ``presidio`` (503 if not installed);
    one per process and name, since Presidio loads a spaCy model (~20 s)."""
    return _detector(settings.pii_detector)


@cache
def _detector(name: str) -> PiiDetector:
    if name == "presidio":
        from chunkbench.guard.presidio import PresidioDetector

        return PresidioDetector()
    return RegexDetector()
