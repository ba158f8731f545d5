"""PII detection and redaction: checksums keep look-alikes, the policy keeps role mailboxes and kept types."""

from __future__ import annotations

import pytest

from chunkbench.guard.pii import (
    EntityType,
    PiiEntity,
    PiiPolicy,
    RegexDetector,
    iban_valid,
    luhn_valid,
    redact,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write to jane.doe+rag@example.co.uk today.", "Write to [EMAIL] today."),
        ("Card 4111 1111 1111 1111 was charged.", "Card [CREDIT_CARD] was charged."),
        ("Card 4111-1111-1111-1111.", "Card [CREDIT_CARD]."),
        ("Pay to DE89 3704 0044 0532 0130 00 by Friday.", "Pay to [IBAN] by Friday."),
        ("Pay to GB82WEST12345698765432.", "Pay to [IBAN]."),
        ("The server at 192.168.10.254 answered.", "The server at [IPV4] answered."),
        ("Call +49 30 1234 5678 or (030) 123-4567-89.", "Call [PHONE] or [PHONE]."),
    ],
)
def test_each_entity_type_is_found_and_replaced(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "Order 4111 1111 1111 1112 is a number that fails the Luhn check.",
        "Version 10.2.3.4.5 and address 999.1.1.1 are not IPv4 addresses.",
        "The IBAN DE89 3704 0044 0532 0130 01 has a wrong check digit.",
        "In 2026 the rate rose 3.5 points; see page 12.",
        "Send it to support@example.com or info@example.org.",
    ],
)
def test_look_alikes_and_role_mailboxes_are_left_alone(text):
    result = redact(text)
    assert result.text == text and result.redacted == ()


def test_the_policy_keeps_what_it_is_told_and_counts_what_it_redacts():
    text = "Mail jane@example.com from 10.0.0.1, or support@example.com."
    kept_ips = PiiPolicy(redact=frozenset({EntityType.EMAIL}))
    assert redact(text, kept_ips).text == "Mail [EMAIL] from 10.0.0.1, or support@example.com."
    strict = PiiPolicy(keep_role_mailboxes=False)
    result = redact(text, strict)
    assert result.text == "Mail [EMAIL] from [IPV4], or [EMAIL]."
    assert result.counts == {"email": 2, "ipv4": 1}
    assert [span for _kind, *span in result.redacted] == [[5, 21], [27, 35], [40, 59]]


def test_checksums_on_known_values():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert luhn_valid("79927398713")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89 3704 0044 0532 0130 01")


def test_another_detector_stands_behind_the_same_policy():
    class NamesDetector:  # stands for an optional detector such as Presidio
        def detect(self, text):
            start = text.index("Jane Doe")
            return [PiiEntity(EntityType.EMAIL, start, start + 8, "Jane Doe")]

    text = "Jane Doe wrote from 10.1.2.3."
    result = redact(text, detectors=[RegexDetector(), NamesDetector()])
    assert result.text == "[EMAIL] wrote from [IPV4]."


def test_farsi_text_around_entities_is_untouched():
    text = "ایمیل من reza@example.ir است و شماره کارت ۱۲۳۴ نیست."
    assert redact(text).text == "ایمیل من [EMAIL] است و شماره کارت ۱۲۳۴ نیست."


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Call +33 1 42 68 53 00 now.", [("phone", "+33 1 42 68 53 00")]),  # one-digit area code after +CC
        ("Call +1 415 555 0132.", [("phone", "+1 415 555 0132")]),
        ("The meeting is on 2024-05-17 at ten.", []),  # an ISO date is not a phone number
        ("Version 10.2.3.4 of the firmware.", []),  # nor a version an address
        ("Chapter 3.2.1.4 explains it.", []),
        ("The host 10.2.3.4 answered.", [("ipv4", "10.2.3.4")]),
    ],
)
def test_phone_and_address_look_alikes(text, found):
    assert [(e.type.value, e.text) for e in RegexDetector().detect(text)] == found
