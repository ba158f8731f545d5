"""PII detectors side by side: Presidio behind the same protocol and policy, masked comparison output, the
settings that choose detector and policy. Presidio tests skip when the ``presidio`` extra is not installed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.guard.compare import Agreement, MaskedDetection, agreement, compare_files, compare_text
from chunkbench.guard.pii import (
    EntityType,
    PiiEntity,
    PiiPolicy,
    RegexDetector,
    detector_from_settings,
    policy_from_settings,
    redact,
)
from chunkbench.guard.presidio import PresidioDetector, presidio_available

RAW = ["maria.schmidt@example.de", "4111 1111 1111 1111", "+49 30 1234 5678", "DE89 3704 0044 0532 0130 00", "10.0.0.1"]
TEXT = (
    "Contact Maria Schmidt at maria.schmidt@example.de or support@example.com. Card 4111 1111 1111 1111, "
    "phone +49 30 1234 5678. Server 10.0.0.1, IBAN DE89 3704 0044 0532 0130 00."
)
needs_presidio = pytest.mark.skipif(not presidio_available(), reason="the presidio extra is not installed")


@pytest.fixture(scope="module")
def presidio() -> PresidioDetector:
    if not presidio_available():
        pytest.skip("the presidio extra is not installed")
    detector = PresidioDetector()
    detector.detect("warm up")  # loads spaCy once for the module
    return detector


def _entity(kind: EntityType, start: int, end: int) -> PiiEntity:
    return PiiEntity(kind, start, end, "x" * (end - start))


def test_agreement_counts_exact_overlapping_and_single_detections():
    first = [_entity(EntityType.EMAIL, 0, 10), _entity(EntityType.PHONE, 20, 30), _entity(EntityType.IPV4, 50, 58)]
    second = [_entity(EntityType.EMAIL, 0, 10), _entity(EntityType.PHONE, 18, 30), _entity(EntityType.PERSON, 70, 80)]
    assert agreement(first, second, ("a", "b")) == Agreement(both=1, overlap=1, only={"a": 1, "b": 1})


def test_masked_detections_carry_type_offset_length_and_the_policy_action_only():
    result = compare_text(TEXT, {"regex": RegexDetector(), "again": RegexDetector()}, PiiPolicy())
    dumped = json.dumps(result.to_dict())
    assert not any(value in dumped for value in [*RAW, "support@example.com"])
    email = result.detections["regex"][0]
    assert email == MaskedDetection("email", 25, 49, 24, "redact") and TEXT[25:49] == RAW[0]
    role = result.detections["regex"][1]
    assert (role.entity, role.action) == ("email", "keep")  # a role mailbox, kept by the policy
    assert result.agreement == Agreement(both=6, overlap=0, only={"regex": 0, "again": 0})


def test_two_detectors_are_needed():
    with pytest.raises(Exception, match="exactly two detectors"):
        compare_text(TEXT, {"regex": RegexDetector()}, PiiPolicy())


def test_policy_and_detector_come_from_settings(tmp_path):
    settings = Settings(_env_file=None, data_dir=tmp_path, pii_redact_entities=["email"], pii_keep_role_mailboxes=False)
    policy = policy_from_settings(settings)
    assert policy.redact == frozenset({EntityType.EMAIL}) and not policy.keep_role_mailboxes
    assert redact("Mail support@example.com, call +49 30 1234 5678.", policy).text == (
        "Mail [EMAIL], call +49 30 1234 5678."
    )
    assert policy_from_settings(Settings(_env_file=None, data_dir=tmp_path)).redact == frozenset(EntityType)
    assert isinstance(detector_from_settings(Settings(_env_file=None, data_dir=tmp_path)), RegexDetector)
    with pytest.raises(ValueError):
        Settings(_env_file=None, data_dir=tmp_path, pii_redact_entities=["passport"])


@needs_presidio
def test_presidio_maps_its_entities_to_ours(presidio):
    found = {(e.type, e.text) for e in presidio.detect(TEXT)}
    assert {(EntityType.EMAIL, RAW[0]), (EntityType.CREDIT_CARD, RAW[1]), (EntityType.PHONE, RAW[2])} <= found
    assert {(EntityType.IBAN, RAW[3]), (EntityType.IPV4, RAW[4])} <= found
    if presidio.has_ner:
        assert (EntityType.PERSON, "Maria Schmidt") in found
    assert not any(e.type is EntityType.IPV4 for e in presidio.detect("Host fe80::1ff:fe23:4567:890a is IPv6."))


@needs_presidio
def test_the_same_policy_decides_for_both_detectors(presidio):
    policy = PiiPolicy(redact=frozenset({EntityType.EMAIL, EntityType.PERSON}))
    result = compare_text(TEXT, {"regex": RegexDetector(), "presidio": presidio}, policy)
    for found in result.detections.values():
        actions = {(d.entity, d.start): d.action for d in found}
        assert actions[("email", 25)] == "redact"
        assert actions[("email", 53)] == "keep"  # support@ is a role mailbox under either detector
        assert all(action == "keep" for (entity, _), action in actions.items() if entity in {"phone", "iban"})
    redacted = redact(TEXT, policy, detectors=[presidio]).text
    assert RAW[0] not in redacted and "support@example.com" in redacted and RAW[2] in redacted
    if presidio.has_ner:
        assert redacted.startswith("Contact [PERSON] at [EMAIL]")


@needs_presidio
def test_pii_compare_cli_prints_masked_json_and_tables(tmp_path, presidio):
    (tmp_path / "notes.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "page.html").write_text(f"<html><body><p>{TEXT}</p></body></html>", encoding="utf-8")
    get_settings.cache_clear()
    runner = CliRunner()
    result = runner.invoke(cli_app, ["pii", "compare", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert [f["path"].rsplit("/", 1)[-1] for f in body["files"]] == ["notes.txt", "page.html"]
    assert not any(value in result.output for value in RAW)
    notes = body["files"][0]
    assert notes["agreement"]["both"] >= 5 and {d["entity"] for d in notes["detections"]["regex"]} == {
        "email", "credit_card", "phone", "ipv4", "iban"
    }  # fmt: skip
    table = runner.invoke(cli_app, ["pii", "compare", str(tmp_path / "notes.txt"), "--details"])
    assert table.exit_code == 0 and "presidio" in table.output and not any(value in table.output for value in RAW)


def test_pii_compare_of_a_missing_path_fails_clearly(tmp_path):
    settings = Settings(_env_file=None, data_dir=tmp_path)
    with pytest.raises(Exception, match="neither a file nor a folder"):
        compare_files([tmp_path / "nope.txt"], {"a": RegexDetector(), "b": RegexDetector()}, PiiPolicy(), settings)
