"""OCR with Tesseract: an image in, its text lines with their boxes and font size out (hOCR)."""

# The binary is called directly (no wrapper package): one subprocess per image, the image on stdin, hOCR on stdout.
# hOCR rather than plain text because it keeps each line's box and Tesseract's estimate of its font size
# (``x_size``), so OCRed lines go through the same paragraph, table and heading rules as a text layer's lines.

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from lxml import etree

from chunkbench.config import Settings
from chunkbench.errors import OcrFailedError, OcrUnavailableError

_XHTML = "{http://www.w3.org/1999/xhtml}"
# Tesseract 5 marks a line as one of these (captions, headers and floating text are lines too).
_LINE_CLASSES = frozenset({"ocr_line", "ocr_caption", "ocr_header", "ocr_textfloat"})
_PROPERTY = re.compile(r"(\w+)\s+([^;]*)")
_STDERR_TAIL = 500


@dataclass(frozen=True, slots=True)
class OcrLine:
    """One recognised line, in image pixels (y grows downwards)."""

    text: str
    x0: float
    x1: float
    top: float
    baseline: float
    # Tesseract's estimate of the line's font size (x_size), in pixels.
    size: float


def _install_hint(language: str) -> str:
    return f"tesseract-ocr-{language.lower().replace('_', '-')}"


def tesseract(settings: Settings) -> str:
    """The Tesseract binary to run, once it and every language of CHUNKBENCH_OCR_LANGUAGES are installed."""
    binary = shutil.which(settings.tesseract_binary)
    languages = settings.ocr_languages.split("+")
    packages = " ".join(["tesseract-ocr", *(_install_hint(language) for language in languages)])
    if binary is None:
        raise OcrUnavailableError(
            f"OCR is on (CHUNKBENCH_OCR=on) but the Tesseract binary '{settings.tesseract_binary}' is not "
            f"installed. Install it (Debian/Ubuntu: `sudo apt-get install {packages}`), point "
            "CHUNKBENCH_TESSERACT_BINARY at it, or turn OCR off (CHUNKBENCH_OCR=off).",
            binary=settings.tesseract_binary,
        )
    try:
        listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OcrUnavailableError(
            f"The Tesseract binary {binary} does not run ({exc}). Reinstall it (`sudo apt-get install {packages}`).",
            binary=binary,
        ) from exc
    # One language per line after a title ("List of available languages in …"); old releases print it to stderr.
    output = (listed.stdout + listed.stderr).splitlines()
    installed = {line.strip() for line in output if line.strip() and " " not in line.strip()}
    missing = [language for language in languages if language not in installed]
    if missing:
        hint = " ".join(_install_hint(language) for language in missing)
        raise OcrUnavailableError(
            f"OCR languages {'+'.join(missing)} (CHUNKBENCH_OCR_LANGUAGES={settings.ocr_languages}) are not "
            f"installed for Tesseract (installed: {', '.join(sorted(installed)) or 'none'}). Install them "
            f"(Debian/Ubuntu: `sudo apt-get install {hint}`) or change CHUNKBENCH_OCR_LANGUAGES.",
            missing_languages=missing,
            installed_languages=sorted(installed),
        )
    return binary


def recognize(image: bytes, *, dpi: int, binary: str, settings: Settings, what: str) -> list[OcrLine]:
    """The text lines Tesseract reads in an image (any format Leptonica reads: PNG, PNM, TIFF…) at ``dpi``.

    ``what`` names the image in an error ("page 3 of 'scan.pdf'").
    """
    command = [binary, "stdin", "stdout", "-l", settings.ocr_languages, "--dpi", str(dpi), "hocr"]
    try:
        done = subprocess.run(command, input=image, capture_output=True, timeout=settings.ocr_timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise OcrFailedError(
            f"OCR of {what} took longer than {settings.ocr_timeout_s:g} s (CHUNKBENCH_OCR_TIMEOUT_S). Raise the "
            "timeout, or lower CHUNKBENCH_OCR_DPI for very large pages.",
            timeout_s=settings.ocr_timeout_s,
        ) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()[-_STDERR_TAIL:]
        raise OcrFailedError(
            f"Tesseract failed on {what} (exit status {done.returncode}): {stderr or 'no message'}. "
            "Check the Tesseract installation (`tesseract --version`).",
            returncode=done.returncode,
        )
    try:
        return parse_hocr(done.stdout)
    except etree.XMLSyntaxError as exc:
        raise OcrFailedError(
            f"Tesseract's output for {what} is not the hOCR it should be ({exc}). Check the Tesseract installation "
            "(`tesseract --version`; version 4 or later)."
        ) from exc


def _properties(title: str) -> dict[str, str]:
    return {match.group(1): match.group(2).strip() for match in _PROPERTY.finditer(title)}


def parse_hocr(hocr: bytes) -> list[OcrLine]:
    """The lines of Tesseract's hOCR, in reading order; words in the order Tesseract reads them (logical order,
    right-to-left scripts included)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.fromstring(hocr, parser)
    lines: list[OcrLine] = []
    for span in root.iter(f"{_XHTML}span"):
        if span.get("class") not in _LINE_CLASSES:
            continue
        words = [
            "".join(word.itertext()).strip() for word in span.iter(f"{_XHTML}span") if word.get("class") == "ocrx_word"
        ]
        text = " ".join(word for word in words if word)
        if not text:
            continue
        found = _properties(span.get("title", ""))
        if "bbox" not in found:
            continue
        x0, top, x1, bottom = (float(value) for value in found["bbox"].split())
        # ``baseline slope offset``: the baseline is ``offset`` pixels from the box's bottom at its left edge.
        offset = float(found.get("baseline", "0 0").split()[1])
        size = float(found.get("x_size", bottom - top))
        lines.append(OcrLine(text, x0, x1, top, bottom + offset, size))
    return lines
