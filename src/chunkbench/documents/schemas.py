"""API models of the documents domain."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from chunkbench.documents.discovery import SkipReason
from chunkbench.documents.ingest_results import IngestOutcome, IngestResult, IngestSummary
from chunkbench.documents.library import LanguageChange
from chunkbench.documents.parsers import DocumentParser
from chunkbench.models import CORPUS_NAME_RULE, DocumentTree
from chunkbench.schemas import ErrorOut
from chunkbench.storage.schema import DocumentRow


class HeadingOut(BaseModel):
    level: int
    heading: str


class DocumentSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    tenant_id: str
    filename: str = Field(description="The base name, for display")
    source_key: str = Field(
        description="The document's identity: its path relative to the folder it was ingested from, or the "
        "filename of a single file or upload"
    )
    status: str
    mime_type: str
    file_size: int
    content_hash: str
    page_count: int | None
    language: str | None = Field(
        description="The written language: ISO 639-1 where one exists; 'und' when undetermined (mostly code, too "
        "short, no confident language)"
    )
    language_confidence: float | None = Field(
        None, description="How sure the detector was, 0–1 (1 for a declared or user-set language)"
    )
    language_source: str | None = Field(
        None, description="detected | declared (by the file: HTML lang, DOCX/PPTX core property) | user"
    )
    kind: str = Field("text", description="text | code")
    code_language: str | None = Field(None, description="A code document's programming language")
    parent_id: str | None = Field(None, description="The document this one was found inside (a mail's attachment)")
    paragraph_count: int
    heading_count: int
    heading_source: str | None
    ocr_pages: list[int] | None = Field(
        description="Pages (1-based) of a PDF whose text was read by OCR (CHUNKBENCH_OCR=on); null when none was"
    )
    chunk_counts: dict[str, int]
    error_message: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime

    @computed_field(  # type: ignore[prop-decorator]  # pydantic's documented form; mypy cannot type it
        description="Whether any of the text was read by OCR: see ocr_pages"
    )
    @property
    def ocr(self) -> bool:
        return bool(self.ocr_pages)

    @classmethod
    def of(cls, row: DocumentRow) -> DocumentSummary:
        return cls.model_validate(row)


class DocumentDetail(DocumentSummary):
    corpora: list[str] = Field(description="Names of the corpora the document belongs to")
    headings: list[HeadingOut]
    tree: dict[str, Any]
    markdown_preview: str
    markdown_chars: int = Field(description="Length of the whole markdown")
    markdown_truncated: bool

    @classmethod
    def of_row(cls, row: DocumentRow, preview_chars: int, corpora: list[str]) -> DocumentDetail:
        tree = DocumentTree.from_dict(row.document_tree)
        markdown = row.parsed_text
        preview = markdown if preview_chars == 0 else markdown[:preview_chars]
        return cls(
            **DocumentSummary.of(row).model_dump(),
            corpora=corpora,
            headings=[HeadingOut(level=level, heading=text) for level, text in tree.headings()],
            tree=row.document_tree,
            markdown_preview=preview,
            markdown_chars=len(markdown),
            markdown_truncated=len(preview) < len(markdown),
        )


class FormatOut(BaseModel):
    """A file type the server ingests: its suffix and the parser that reads it."""

    suffix: str = Field(examples=[".pptx"])
    label: str = Field(description="The format in words", examples=["PowerPoint presentation"])
    mime_type: str = Field(description="What its documents' mime_type is")
    kind: str = Field(description="text | code (source code: no written-language rule applies)")
    verbatim: bool = Field(description="Whether it can be ingested verbatim (--verbatim)")

    @classmethod
    def of(cls, suffix: str, parser: DocumentParser) -> FormatOut:
        return cls(
            suffix=suffix, label=parser.label, mime_type=parser.mime_type, kind=parser.kind, verbatim=parser.verbatim
        )


class DocumentPage(BaseModel):
    items: list[DocumentSummary]
    total: int
    limit: int
    offset: int


class IngestOut(BaseModel):
    filename: str
    source_key: str
    outcome: IngestOutcome
    document: DocumentSummary | None = None
    duplicate_of: str | None = None
    replaced_id: str | None = None
    warnings: list[str] = []
    error: ErrorOut | None = None
    skip_reason: SkipReason | None = Field(
        None,
        description="Why a file found in a folder was not read (outcome skipped): unsupported_type, hidden, "
        "too_large, empty, not_a_regular_file or unreadable, with a message and details",
    )
    attachments: list[IngestOut] = Field(
        [],
        description="The files found inside this one (a mail's attachments), each ingested as its own document "
        "whose parent_id is this one and whose source key is this one's + '//' + the attachment's filename; an "
        "attachment that failed is listed with its error (and in warnings), and never fails the mail",
    )

    @classmethod
    def of(cls, result: IngestResult) -> IngestOut:
        return cls(
            filename=result.filename,
            source_key=result.source_key,
            outcome=result.outcome,
            document=DocumentSummary.of(result.document) if result.document is not None else None,
            duplicate_of=result.duplicate_of,
            replaced_id=result.replaced_id,
            warnings=list(result.warnings),
            error=ErrorOut(**result.error.to_dict()) if result.error is not None else None,
            skip_reason=result.skip_reason,
            attachments=[cls.of(attachment) for attachment in result.attachments],
        )


class IndexDirectoryIn(BaseModel):
    path: str = Field(min_length=1, description="Folder relative to the data directory")
    corpus: str | None = Field(
        None,
        description="Every file ingested (created, replaced or unchanged) joins this corpus, made if missing. "
        f"A name is {CORPUS_NAME_RULE}.",
    )


class IndexDirectoryOut(BaseModel):
    """Every file under the folder, in path order: ingested, refused (failed) or skipped with its reason."""

    path: str
    results: list[IngestOut]
    ingested: int = Field(description="Created or replaced (summary.ingested counts unchanged ones too)")
    unchanged: int
    failed: int
    skipped: int = Field(0, description="Files not read (a hidden folder counts its files): see summary")
    summary: IngestSummary

    @classmethod
    def of(cls, path: str, results: list[IngestResult]) -> IndexDirectoryOut:
        summary = IngestSummary.of(results)
        return cls(
            path=path,
            results=[IngestOut.of(r) for r in results],
            ingested=summary.created + summary.replaced,
            unchanged=summary.unchanged,
            failed=summary.refused,
            skipped=summary.skipped,
            summary=summary,
        )


class DocumentPatch(BaseModel):
    """What a user may change of a document: its written language."""

    language: str = Field(
        min_length=1,
        max_length=35,
        description="An ISO 639-1 code (a BCP 47 tag such as en-US is read as en) or 'und' (undetermined)",
        examples=["de"],
    )


class LanguageChangeOut(BaseModel):
    """The documents whose language was set, and what the models that already processed them cannot read."""

    language: str
    corpus: str | None = Field(None, description="The corpus whose every member was set, when one was")
    documents: list[DocumentSummary]
    warnings: list[str] = Field(
        description="Corpus or Boundary models that processed a document and do not cover its new language: its "
        "results are not meaningful until it is processed again with a model that does"
    )

    @classmethod
    def of(cls, change: LanguageChange, corpus: str | None = None) -> LanguageChangeOut:
        return cls(
            language=change.language,
            corpus=corpus,
            documents=[DocumentSummary.of(row) for row in change.documents],
            warnings=change.warnings,
        )
