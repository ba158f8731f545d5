"""initial schema: documents, queries, experiments, app_settings

Revision ID: 0001
Revises:
Create Date: 2026-11-29 13:38:22.473606
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_settings",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "documents",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("filename", sa.String(length=512), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("file_size", sa.Integer(), nullable=False),
        sa.Column("mime_type", sa.String(length=128), nullable=False),
        sa.Column("page_count", sa.Integer(), nullable=True),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column("paragraph_count", sa.Integer(), nullable=False),
        sa.Column("heading_count", sa.Integer(), nullable=False),
        sa.Column("heading_source", sa.String(length=32), nullable=True),
        sa.Column("parsed_text", sa.Text(), nullable=False),
        sa.Column("document_tree", sa.JSON(), nullable=False),
        sa.Column("chunk_counts", sa.JSON(), nullable=False),
        sa.Column("last_corpus_embedding_model_id", sa.String(length=128), nullable=True),
        sa.Column("last_boundary_embedding_model_id", sa.String(length=128), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('discovered', 'parsing', 'parsed', 'chunking', 'embedding', 'indexed', 'failed')",
            name="ck_documents_status",
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "filename", name="uq_documents_tenant_filename"),
    )
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.create_index("ix_documents_tenant_hash", ["tenant_id", "content_hash"], unique=False)

    op.create_table(
        "experiments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("benchmark_config", sa.JSON(), nullable=False),
        sa.Column("questions", sa.JSON(), nullable=False),
        sa.Column("per_question", sa.JSON(), nullable=False),
        sa.Column("aggregate_metrics", sa.JSON(), nullable=False),
        sa.Column("strategies_used", sa.JSON(), nullable=False),
        sa.Column("embedding_model_id", sa.String(length=128), nullable=True),
        sa.Column("embedding_provider", sa.String(length=64), nullable=True),
        sa.Column("boundary_embedding_model_id", sa.String(length=128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_experiments_document_id"), ["document_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_experiments_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "queries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("strategy_name", sa.String(length=64), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("retrieved_chunks", sa.JSON(), nullable=False),
        sa.Column("expansion_tree", sa.JSON(), nullable=False),
        sa.Column("latency_breakdown", sa.JSON(), nullable=False),
        sa.Column("token_usage", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_queries_document_id"), ["document_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_queries_tenant_id"), ["tenant_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_queries_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_queries_document_id"))

    op.drop_table("queries")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_experiments_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_experiments_document_id"))

    op.drop_table("experiments")
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.drop_index("ix_documents_tenant_hash")

    op.drop_table("documents")
    op.drop_table("app_settings")
