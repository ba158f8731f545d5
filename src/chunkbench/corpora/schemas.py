"""API models of the corpora domain."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from chunkbench.corpora.catalog import CorpusContents
from chunkbench.models import CORPUS_NAME_RULE
from chunkbench.storage.schema import CorpusRow

# One request names at most this many documents (a corpus itself may grow past it, request by request).
MAX_DOCUMENTS_PER_REQUEST = 10_000
MAX_DESCRIPTION_CHARS = 2000
# No NUL: PostgreSQL text cannot hold one, so it would fail in the database instead of as a bad request.
_NO_NUL = r"^[^\x00]*$"

DocumentId = Annotated[str, Field(min_length=1, max_length=64, pattern=_NO_NUL, description="A document id")]


class CorpusIn(BaseModel):
    name: str = Field(description=f"A name is {CORPUS_NAME_RULE}.")
    description: str | None = Field(None, max_length=MAX_DESCRIPTION_CHARS, pattern=_NO_NUL)
    document_ids: list[DocumentId] = Field([], max_length=MAX_DOCUMENTS_PER_REQUEST, description="Initial members")


class CorpusDocumentsIn(BaseModel):
    document_ids: list[DocumentId] = Field(min_length=1, max_length=MAX_DOCUMENTS_PER_REQUEST)


class CorpusSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    description: str | None
    document_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: CorpusRow, document_count: int) -> CorpusSummary:
        return cls(
            id=row.id,
            name=row.name,
            description=row.description,
            document_count=document_count,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


class CorpusDocumentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    source_key: str
    filename: str
    status: str
    language: str | None
    page_count: int | None
    chunk_counts: dict[str, int]


class CorpusDetail(CorpusSummary):
    documents: list[CorpusDocumentOut] = Field(description="The members, by source key")

    @classmethod
    def of_contents(cls, contents: CorpusContents) -> CorpusDetail:
        return cls(
            **CorpusSummary.of(contents.corpus, len(contents.documents)).model_dump(),
            documents=[CorpusDocumentOut.model_validate(row) for row in contents.documents],
        )


class CorpusDocumentsAdded(BaseModel):
    corpus: str
    added: int = Field(description="Documents that were not members yet")
    document_count: int
