"""Text encodings of TXT, MD and HTML files through the real folder ingest: UTF-8 (with or without BOM), UTF-16
with or without BOM, legacy code pages guessed, and binary files still refused."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PIL import Image

from chunkbench.config import Settings
from chunkbench.documents.discovery import discover_files
from chunkbench.documents.ingest import ingest_paths
from chunkbench.documents.ingest_results import IngestResult
from chunkbench.documents.parsers.encoding import decode, looks_like_text
from chunkbench.errors import CorruptDocumentError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.text.normalize import normalize_text

# A few sentences: detectors are unreliable on one short line. ZWNJ (U+200C) is part of Farsi words and is in
# windows-1256 (0x9D); پ چ ژ گ ک are the Farsi letters outside Arabic's.
FARSI = [
    "این یک سند آزمایشی است. متن فارسی برای آزمون رمزگذاری نوشته شده است و چند جمله دارد.",
    "پاراگراف دوم می‌گوید که گربه‌ها چای نمی‌نوشند و ژاله گلدان را آب داد.",
]
FARSI_TITLE = "راهنمای سند"
WESTERN = "“Smart quotes” cost 5 € — naïve café façade, déjà vu. It’s a test."
FRENCH = "Le cœur coûte 5 € à l'œuvre: déjà naïve, ça va très bien."
POLISH = "Zażółć gęślą jaźń. Łódź i Kraków są piękne."


def _codec_bytes(text: str, codec: str) -> bytes:
    # windows-1256 has Arabic yeh (ي) but not Farsi yeh (ی): Farsi written in it uses the Arabic letter, which
    # normalisation turns back into ی.
    return (text.replace("ی", "ي") if codec == "cp1256" else text).encode(codec)


def _title(paragraphs: list[str]) -> str:
    return FARSI_TITLE if paragraphs is FARSI else "Notes"


def _document(kind: str, paragraphs: list[str], title: str) -> str:
    if kind == "txt":
        return "\n\n".join(paragraphs)
    if kind == "md":
        return f"# {title}\n\n" + "\n\n".join(paragraphs)
    body = "".join(f"<p>{paragraph}</p>\n" for paragraph in paragraphs)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>\n{body}</body></html>"


def _expected(kind: str, paragraphs: list[str], title: str) -> str:
    heading = [] if kind == "txt" else [f"# {title}"]
    return "\n\n".join(normalize_text(block) for block in [*heading, *paragraphs])


def _ingest(settings: Settings, folder: Path) -> dict[str, IngestResult]:
    database = Database.from_settings(settings)
    try:
        results = ingest_paths(database, settings, discover_files([folder]), tenant_id=DEFAULT_TENANT)
        return {result.source_key: result for result in results}
    finally:
        database.dispose()


# (file stem, codec, text, what the parse records about the encoding: a fragment of its note, or None)
CASES = [
    ("fa-utf16le", "utf-16-le", FARSI, "UTF-16-LE (it has no byte-order mark"),
    ("fa-utf16be", "utf-16-be", FARSI, "UTF-16-BE (it has no byte-order mark"),
    ("fa-windows1256", "cp1256", FARSI, "windows-1256 (detected"),
    ("fa-utf8bom", "utf-8-sig", FARSI, None),
    ("fa-utf16bom", "utf-16", FARSI, "byte-order mark)"),
    ("en-windows1252", "cp1252", [WESTERN], "windows-1252 (detected"),
    ("fr-iso8859-15", "iso8859_15", [FRENCH], "ISO-8859-15 (detected"),
    ("pl-iso8859-2", "iso8859_2", [POLISH], "ISO-8859-2 (detected"),
]


@pytest.fixture
def ingested(tmp_path: Path, settings: Settings) -> dict[str, IngestResult]:
    """One folder with every case in every text format, ingested once as `chunkbench ingest FOLDER` would."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    for stem, codec, paragraphs, _note in CASES:
        for kind in ("txt", "md", "html"):
            (folder / f"{stem}.{kind}").write_bytes(
                _codec_bytes(_document(kind, paragraphs, _title(paragraphs)), codec)
            )
    return _ingest(settings, folder)


@pytest.mark.parametrize("kind", ["txt", "md", "html"])
@pytest.mark.parametrize(("stem", "codec", "paragraphs", "note"), CASES, ids=[case[0] for case in CASES])
def test_each_encoding_is_stored_as_its_text(
    ingested: dict[str, IngestResult], kind: str, stem: str, codec: str, paragraphs: list[str], note: str | None
) -> None:
    result = ingested[f"{stem}.{kind}"]
    assert result.error is None, result.error
    assert result.document is not None
    assert result.document.parsed_text == _expected(kind, paragraphs, _title(paragraphs))
    # An unsure language guess is said too (English with café and naïve reads French at 0.79: stored und instead).
    decoding = [w for w in result.warnings if not w.startswith("Language undetermined")]
    if note is None:  # UTF-8 is the default: nothing to say
        assert decoding == []
    else:
        assert len(decoding) == 1 and note in decoding[0], result.warnings
    expected = stem.split("-", 1)[0]  # the sample's language: fr-iso8859-15, en-windows1252, …
    assert result.document.language in (expected, "und"), result.document.language  # never another language
    if paragraphs is FARSI:
        assert result.document.language == "fa"


def _png(path: Path) -> None:
    Image.new("RGB", (16, 16), (200, 30, 30)).save(path, "PNG")


def test_binary_files_named_as_text_are_still_415(tmp_path: Path, settings: Settings) -> None:
    folder = tmp_path / "binary"
    folder.mkdir()
    _png(folder / "picture.txt")
    (folder / "noise.md").write_bytes(random.Random(15).randbytes(4096))
    # Zero bytes on both sides of the 16-bit units: neither UTF-16 nor text.
    (folder / "records.html").write_bytes(b"<html>\x00\x00\x01\x00id\x00\x00\x07\x00\x00name" * 40)
    results = _ingest(settings, folder)
    assert set(results) == {"picture.txt", "noise.md", "records.html"}
    for name, result in results.items():
        assert result.error is not None and result.error.status_code == 415, name
        kind = {"txt": "a text file", "md": "a Markdown file", "html": "an HTML page"}[name.rsplit(".", 1)[1]]
        assert result.error.message == (
            f"'{name}' is named like {kind} but its content is not one. "
            "Check the file, or rename it with the extension of its real format."
        )


def test_api_upload_of_utf16_without_bom_reports_its_encoding(client) -> None:
    data = "\n\n".join(FARSI).encode("utf-16-be")
    response = client.post("/documents", files={"file": ("notes.txt", data)})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["warnings"] == ["Decoded as UTF-16-BE (it has no byte-order mark; recognised by its zero bytes)."]
    markdown = client.get(f"/documents/{body['document']['id']}/markdown").text
    assert markdown == _expected("txt", FARSI, FARSI_TITLE)


def test_api_upload_of_a_png_named_txt_is_415(client, tmp_path: Path) -> None:
    _png(tmp_path / "x.png")
    response = client.post("/documents", files={"file": ("photo.txt", (tmp_path / "x.png").read_bytes())})
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_file_type"


# ------------------------------------------------------------------------------------- detection, byte by byte


@pytest.mark.parametrize(
    ("codec", "text"),
    [
        ("cp1256", "این یک سند آزمایشی است"),  # one short line: the scoring, not the detector, gets it right
        ("cp1256", "هذا نص عربي قصير للاختبار. السلام عليكم ورحمة الله."),
        ("cp1250", POLISH),
        ("iso8859_2", "Příliš žluťoučký kůň úpěl ďábelské ódy."),
        # Clean Latin words in windows-1252 too ("Øekl", "pøijde"), but letters no one language uses together.
        ("cp1250", "Dobrý den, jak se máte? Řekl, že přijde zítra."),
        ("iso8859_2", "Naše kuća je lijepa, živimo u Zagrebu."),
        ("cp1252", "Ærø er en ø i Danmark, på dansk."),
        ("cp1251", "Привет, это короткий тестовый документ на русском языке."),
        ("koi8_r", "Привет, это короткий тестовый документ на русском языке."),
        ("cp1253", "Αυτό είναι ένα σύντομο ελληνικό κείμενο."),
        ("cp1252", "Größe, Straße und Übermaß: schön. El niño comió mañana. ¿Qué tal?"),
        ("iso8859_15", "Prix : 5 € seulement."),  # € is 0xA4 here, the sign ¤ in windows-1252
    ],
)
def test_legacy_encodings_are_told_apart(codec: str, text: str) -> None:
    decoded = decode(_codec_bytes(text, codec))
    assert normalize_text(decoded.text) == normalize_text(text)
    assert decoded.source == "detected"


def test_valid_utf8_wins_over_a_wrong_declaration() -> None:
    decoded = decode("café".encode(), "windows-1252")
    assert (decoded.text, decoded.notes) == ("café", [])


def test_a_declared_charset_is_used_when_the_bytes_are_not_utf8() -> None:
    decoded = decode("café".encode("cp1252"), "ISO-8859-1")  # a Latin-1 label is read as windows-1252
    assert decoded.text == "café"
    assert decoded.notes == ["Decoded as windows-1252 (the charset the file declares)."]


def test_utf16_without_bom_is_recognised_by_its_zero_bytes() -> None:
    data = ("Plain ASCII line.\n" * 1000).encode("utf-16-le")
    assert b"\x00" in data[:8192] and looks_like_text(data[:8192])
    # UTF-32 puts zero bytes on both sides of the 16-bit units: without a BOM it is not recognised.
    assert not looks_like_text(("Plain ASCII line.\n" * 1000).encode("utf-32-le")[:8192])


def test_utf16_without_bom_broken_after_its_first_block_is_corrupt() -> None:
    data = ("text " * 2000).encode("utf-16-le") + b"\x00\xd8" + "more".encode("utf-16-le")  # a lone surrogate
    with pytest.raises(CorruptDocumentError, match="UTF-16-LE without a byte-order mark"):
        decode(data)


def test_text_without_zero_bytes_but_full_of_control_bytes_is_not_text() -> None:
    noise = bytes(value % 255 + 1 for value in random.Random(6).randbytes(8192))  # every byte value but 0
    with pytest.raises(CorruptDocumentError, match="could not be recognised"):
        decode(noise)
