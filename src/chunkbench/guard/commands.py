"""``chunkbench pii``: the PII detectors side by side (masked output only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from chunkbench.console import JsonOption, fail, out, print_json
from chunkbench.errors import ChunkbenchError

pii_app = typer.Typer(help="PII detection: compare the regex and Presidio detectors.", no_args_is_help=True)


@pii_app.command("compare")
def compare_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (documents are parsed, others read as text)")],
    details: Annotated[bool, typer.Option(help="List every masked detection, not only the counts")] = False,
    min_score: Annotated[float, typer.Option(help="Presidio's minimum confidence (0–1)")] = 0.5,
    as_json: JsonOption = False,
) -> None:
    """Run the regex and Presidio detectors under the same policy (CHUNKBENCH_PII_*) and show what each found:
    entity type, offset and length only, never the detected text."""
    from chunkbench.config import get_settings
    from chunkbench.guard.compare import compare_files
    from chunkbench.guard.pii import PiiDetector, RegexDetector, policy_from_settings
    from chunkbench.guard.presidio import PresidioDetector

    settings = get_settings()
    try:
        presidio = PresidioDetector(min_score=min_score)
        detectors: dict[str, PiiDetector] = {"regex": RegexDetector(), "presidio": presidio}
        results = compare_files(paths, detectors, policy_from_settings(settings), settings)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({"presidio_ner": presidio.has_ner, "files": [r.to_dict() for r in results]})
        return
    table = Table(title="PII detections (masked)")
    for column in ("file", "chars", "regex", "presidio", "both", "overlap", "regex only", "presidio only", "redacted"):
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in results:
        if r.error:
            table.add_row(r.path, "—", "—", "—", "—", "—", "—", "—", f"error: {r.error}")
            continue
        redacted = {name: sum(d.action == "redact" for d in found) for name, found in r.detections.items()}
        table.add_row(
            r.path, str(r.characters), str(len(r.detections["regex"])), str(len(r.detections["presidio"])),
            str(r.agreement.both), str(r.agreement.overlap), str(r.agreement.only["regex"]),
            str(r.agreement.only["presidio"]), f"{redacted['regex']} / {redacted['presidio']}",
        )  # fmt: skip
    out.print(table)
    if not presidio.has_ner:
        out.print("Presidio ran without a spaCy NER model: pattern recognizers only, no PERSON.")
    if details:
        listing = Table(title="Detections: type, offset, length, policy action (no text)")
        for column in ("file", "detector", "entity", "offset", "length", "action"):
            listing.add_column(column)
        for r in results:
            for name, found in r.detections.items():
                for d in found:
                    listing.add_row(r.path, name, d.entity, str(d.start), str(d.length), d.action)
        out.print(listing)
