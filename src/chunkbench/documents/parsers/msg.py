"""Outlook .msg files are refused with the reason: no permissively licensed reader fits (see docs/formats.md)."""

from __future__ import annotations

from chunkbench.documents.parsers.base import refuse

# extract-msg, the maintained reader, is GPL-3.0 (chunkbench is MIT); a reader of our own over olefile (BSD) could
# not be tested on a real .msg: only Outlook writes them, and no permissive package writes OLE2 files.
refuse(
    ".msg",
    "Outlook .msg files are not supported: the maintained reader (extract-msg) is GPL-3.0, which this MIT project "
    "cannot ship. Save the mail as .eml instead (Outlook on the web and the new Outlook: ⋯ → Save as / Download; "
    "Thunderbird and Apple Mail: Save As) and ingest the .eml.",
)
