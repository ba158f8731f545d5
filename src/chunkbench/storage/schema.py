"""Metadata store tables (docs/architecture.md), as SQLAlchemy 2 ORM classes.

Migrations under ``migrations/versions`` are the source of truth for the database; these classes
must match them (``tests/test_storage.py`` checks that the migrated schema and the ORM agree).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from chunkbench.models import DocumentState

DEFAULT_TENANT = "default"


def utcnow() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp that comes back timezone-aware in UTC from every database.

    SQLite stores no zone and hands back naive values; PostgreSQL's ``timestamptz`` hands back aware ones in the
    session's zone. Without this the API would write ``…T10:00:00`` on one and ``…T10:00:00+00:00`` on the other,
    and comparing the two in Python raises.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


def _filename_as_key(context: Any) -> str:
    return context.get_current_parameters()["filename"]


_STATES = ", ".join(f"'{state.value}'" for state in DocumentState)


class DocumentRow(Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("tenant_id", "source_key", name="uq_documents_tenant_source_key"),
        CheckConstraint(f"status IN ({_STATES})", name="ck_documents_status"),
        Index("ix_documents_tenant_hash", "tenant_id", "content_hash"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False)
    filename: Mapped[str] = mapped_column(String(512), nullable=False)
    # The document's identity within its tenant: its path relative to the folder it was ingested from, or the
    # filename of a single upload (the default). Ingesting the same key again replaces the document.
    source_key: Mapped[str] = mapped_column(String(1024), nullable=False, default=_filename_as_key)
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    file_size: Mapped[int] = mapped_column(Integer, nullable=False)
    mime_type: Mapped[str] = mapped_column(String(128), nullable=False)
    page_count: Mapped[int | None] = mapped_column(Integer)
    # The written language (ISO 639-1 where one exists; "und": undetermined, e.g. mostly code or too short), how sure
    # the detector was (0–1; 1 for a declared or user-set language) and where it came from: "detected",
    # "declared" (by the file: HTML lang, DOCX/PPTX core property) or "user" (set by a person).
    language: Mapped[str | None] = mapped_column(String(16))
    language_confidence: Mapped[float | None] = mapped_column(Float)
    language_source: Mapped[str | None] = mapped_column(String(16))
    # "text" or "code"; a code document's programming language ("python", "rust", …).
    kind: Mapped[str] = mapped_column(String(16), default="text", nullable=False)
    code_language: Mapped[str | None] = mapped_column(String(32))
    # The document this one was found inside (a mail's attachment → the mail); its own row, its own source key.
    parent_id: Mapped[str | None] = mapped_column(String(32), ForeignKey("documents.id", ondelete="SET NULL"))
    paragraph_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    heading_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    heading_source: Mapped[str | None] = mapped_column(String(32))
    # Pages (1-based) whose text was read by OCR (CHUNKBENCH_OCR=on); NULL when none was.
    ocr_pages: Mapped[list[int] | None] = mapped_column(JSON)
    # The two big columns load only when read: lists and queries need neither.
    parsed_text: Mapped[str] = mapped_column(Text, nullable=False, deferred=True)
    document_tree: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, deferred=True)
    chunk_counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict, nullable=False)
    last_corpus_embedding_model_id: Mapped[str | None] = mapped_column(String(128))
    last_boundary_embedding_model_id: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default=DocumentState.DISCOVERED.value, nullable=False)
    error_message: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False)
    # While chunking/embedding: the process doing it, its lease, and what the run has written so far.
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    owner_token: Mapped[str | None] = mapped_column(String(32), index=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    processing_run: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class QueryRow(Base):
    __tablename__ = "queries"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False, index=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), nullable=False, index=True)
    strategy_name: Mapped[str] = mapped_column(String(64), nullable=False)
    question: Mapped[str] = mapped_column(Text, nullable=False)
    answer: Mapped[str | None] = mapped_column(Text)
    # How the query ran: retriever, top_k, neighbours, rerank, Corpus model, score floor, answer mode.
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    # The numbered context passages the answer could cite, and the numbers it did cite.
    sources: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    citations: Mapped[list[int]] = mapped_column(JSON, default=list, nullable=False)
    retrieved_chunks: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    expansion_tree: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    latency_breakdown: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    token_usage: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class ExperimentRow(Base):
    """A benchmark run (docs/benchmarks.md): its plan, provenance, status and, once finished, aggregates, decision."""

    __tablename__ = "experiments"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False, index=True)
    # A one-document Experiment names its document (and goes when it goes); a corpus Experiment names its corpus
    # (by id while it exists, by name for ever) and lists the documents it ran on.
    document_id: Mapped[str | None] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    corpus_id: Mapped[str | None] = mapped_column(
        ForeignKey("corpora.id", ondelete="SET NULL", name="fk_experiments_corpus_id"), index=True
    )
    corpus_name: Mapped[str | None] = mapped_column(String(200))
    document_ids: Mapped[list[str]] = mapped_column(JSON, default=list, nullable=False, server_default="[]")
    name: Mapped[str | None] = mapped_column(String(200))
    # running → completed | failed | interrupted (a killed run; resumable) | cancelled
    status: Mapped[str] = mapped_column(String(16), default="running", nullable=False)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    benchmark_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    questions: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    configurations: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    aggregate_metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    decision: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    cost: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    strategies_used: Mapped[list[str]] = mapped_column(JSON, default=list, nullable=False)
    embedding_model_id: Mapped[str | None] = mapped_column(String(128))
    embedding_provider: Mapped[str | None] = mapped_column(String(64))
    boundary_embedding_model_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # The process running it: a "running" Experiment whose process is gone was killed and can be resumed.
    runner_host: Mapped[str | None] = mapped_column(String(255))
    runner_pid: Mapped[int | None] = mapped_column(Integer)


class BenchmarkCellRow(Base):
    """One question × configuration result, written as soon as it finishes so a killed run resumes there."""

    __tablename__ = "benchmark_cells"
    __table_args__ = (UniqueConstraint("experiment_id", "config_key", "question_id", name="uq_benchmark_cell"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False, index=True
    )
    config_key: Mapped[str] = mapped_column(String(200), nullable=False)
    question_id: Mapped[str] = mapped_column(String(200), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)  # ok | failed
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class AppSettingRow(Base):
    """Key/value settings changed at run time (embedding model roles, threshold overrides)."""

    __tablename__ = "app_settings"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False)


class StrategyRunRow(Base):
    """One strategy run on one document: its validated parameters, models, outcome and diagnostics."""

    __tablename__ = "strategy_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), nullable=False, index=True)
    strategy_name: Mapped[str] = mapped_column(String(64), nullable=False)
    # completed (its points are in ``collection``) | failed | not_indexed (storage.index_state: points removed)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    # What the run decided beyond its parameters: threshold used, context-prefix mode, …
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    corpus_model_id: Mapped[str] = mapped_column(String(128), nullable=False)
    boundary_model_id: Mapped[str | None] = mapped_column(String(128))
    collection: Mapped[str | None] = mapped_column(String(255))
    chunk_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    diagnostics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    error_message: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class JobRow(Base):
    """Long work (processing) run in the background, with progress the client can poll."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False, index=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    # queued | running | cancelling (asked to stop) | succeeded | failed | cancelled
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    document_id: Mapped[str | None] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    corpus_id: Mapped[str | None] = mapped_column(
        ForeignKey("corpora.id", ondelete="CASCADE", name="fk_jobs_corpus_id"), index=True
    )
    progress: Mapped[float] = mapped_column(Float, default=0.0, nullable=False)
    message: Mapped[str | None] = mapped_column(Text)
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # The process that will run it (queued) or runs it, and the lease it renews meanwhile.
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    owner_token: Mapped[str | None] = mapped_column(String(32), index=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # What it runs (a registered job kind's JSON payload: any worker can run it) and the fingerprint of the
    # strategy registry it was planned with (a worker with other strategies refuses it).
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    strategy_registry: Mapped[str | None] = mapped_column(String(64))
    # The procrastinate job carrying it (PostgreSQL); NULL when the accepting process runs it itself.
    queue_job_id: Mapped[int | None] = mapped_column(BigInteger)


class JobAttemptRow(Base):
    """One attempt of a job's task by one worker: the job's history (a killed worker's attempt reads ``lost``)."""

    __tablename__ = "job_attempts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False, index=True)
    # The job_tasks row it ran (NULL: the job's first task, which plans and may fan out), and its label.
    task_id: Mapped[str | None] = mapped_column(String(32))
    task: Mapped[str] = mapped_column(String(255), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    worker: Mapped[str] = mapped_column(String(255), nullable=False)
    # The worker process's token (storage.ownership): what it claimed is recovered once it is known to be gone.
    worker_token: Mapped[str | None] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # running | succeeded | failed | cancelled | retrying (failed, tried again) | lost (its worker stopped)
    outcome: Mapped[str] = mapped_column(String(16), nullable=False)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class JobTaskRow(Base):
    """One piece of a job that fans out (a batch of documents × a strategy, a batch of cells, the closing task):
    run by any worker, ended once; the closing task runs when every other task of the job has ended."""

    __tablename__ = "job_tasks"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False, index=True)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    label: Mapped[str] = mapped_column(String(255), nullable=False)
    args: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    # What progress counts it as: ``size`` units (documents, cells) of ``group`` (a strategy, "cells").
    group_name: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    size: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # The queue lock it runs under: tasks sharing one never run at once, and a task queued twice runs once.
    lock: Mapped[str] = mapped_column(String(255), nullable=False)
    # queued | running | succeeded | failed | cancelled
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    progress: Mapped[float] = mapped_column(Float, default=0.0, nullable=False)
    message: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class CorpusRow(Base):
    """A named set of a tenant's documents: what a corpus job processes and a corpus benchmark searches.

    Membership is by document id; a document may belong to several corpora, and deleting a corpus never
    deletes a document (only its memberships).
    """

    __tablename__ = "corpora"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_corpora_tenant_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False)


class CorpusDocumentRow(Base):
    """One document's membership of one corpus."""

    __tablename__ = "corpus_documents"

    corpus_id: Mapped[str] = mapped_column(ForeignKey("corpora.id", ondelete="CASCADE"), primary_key=True)
    document_id: Mapped[str] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    added_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class TenantRow(Base):
    """A tenant (docs/service.md): its own documents, keys and request budget; ``default``: the local user's."""

    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # a slug; documents.tenant_id etc. hold it
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    # Overrides of Settings.rate_limit_per_minute / rate_limit_burst; NULL = the Settings' values.
    rate_limit_per_minute: Mapped[float | None] = mapped_column(Float)
    rate_limit_burst: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class ApiKeyRow(Base):
    """An API key of a tenant. Only the SHA-256 of the key is stored; ``prefix`` finds it and names it."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16), nullable=False, unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    scopes: Mapped[list[str]] = mapped_column(JSON, default=list, nullable=False)  # "query", "admin"
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class QuestionFileRow(Base):
    """A tenant's question file (an evaluation question set), its bytes exactly as uploaded or written.

    In the database rather than under ``{data_dir}/files`` so that replicas and workers with no shared disk see the
    same files; the bytes are kept as they came (never re-encoded), so a download and ``content_hash`` are those of
    the file the user gave.
    """

    __tablename__ = "question_files"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_question_files_tenant_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), default=DEFAULT_TENANT, nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)  # a bare file name (no path), with its suffix
    content: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)  # sha256 of ``content``, hex
    size_bytes: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


# procrastinate's own tables, types and functions (the task queue on PostgreSQL, migration 0011) are its schema, not
# the ORM's: comparing the ORM with a database, or autogenerating a migration, leaves every name with this prefix out.
QUEUE_SCHEMA_PREFIX = "procrastinate_"


def is_orm_object(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's ``include_name`` hook: False for procrastinate's objects."""
    return not (name or "").startswith(QUEUE_SCHEMA_PREFIX)
