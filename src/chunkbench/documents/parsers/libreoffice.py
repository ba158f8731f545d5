"""LibreOffice headless conversions (.doc, .odt, .rtf, Strict Open XML → .docx; tests also make PDFs, DOCs)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.errors import ConversionError, ConverterUnavailableError

DEBIAN_PACKAGE = "libreoffice-writer-nogui"
LEGACY_WORD = "Legacy Word (.doc) files"


def find_soffice(settings: Settings, needed_for: str = LEGACY_WORD) -> str:
    """Path of the ``soffice`` binary, or a 415 that says which files need it and which package to install."""
    binary = shutil.which(settings.libreoffice_binary)
    if binary is None:
        raise ConverterUnavailableError(
            f"{needed_for} need LibreOffice, which is not installed here "
            f"('{settings.libreoffice_binary}' not found). Install it "
            f"(Debian/Ubuntu: apt-get install --no-install-recommends {DEBIAN_PACKAGE}), "
            "or save the file as .docx and upload that.",
            package=DEBIAN_PACKAGE,
        )
    return binary


def convert(source: Path, target_format: str, out_dir: Path, settings: Settings, needed_for: str = LEGACY_WORD) -> Path:
    """Convert ``source`` with LibreOffice into ``out_dir``; return the produced file.

    Each run gets its own throw-away user profile: two soffice processes sharing one profile fail.
    """
    binary = find_soffice(settings, needed_for)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chunkbench-lo-") as profile:
        command = [
            binary,
            f"-env:UserInstallation={Path(profile).as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            target_format,
            "--outdir",
            str(out_dir),
            str(source),
        ]
        try:
            completed = subprocess.run(
                command, capture_output=True, timeout=settings.libreoffice_timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ConversionError(
                f"LibreOffice did not finish converting '{source.name}' within "
                f"{settings.libreoffice_timeout_s:g} s. The file may be damaged or very large; "
                "raise CHUNKBENCH_LIBREOFFICE_TIMEOUT_S or convert it to .docx yourself."
            ) from exc
    extension = target_format.split(":", 1)[0]
    produced = out_dir / f"{source.stem}.{extension}"
    if completed.returncode != 0 or not produced.exists() or produced.stat().st_size == 0:
        detail = (completed.stderr or completed.stdout).decode(errors="replace").strip()[-300:]
        raise ConversionError(
            f"LibreOffice could not convert '{source.name}' (the file is probably damaged, or not the "
            f"format its name says). {detail}".strip()
        )
    return produced
