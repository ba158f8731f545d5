"""corpora: named sets of a tenant's documents; a document's source key; Experiments and jobs over a corpus

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 12:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A document's identity within its tenant becomes its source key (the path relative to the ingested folder,
    # or the filename of a single upload): two ``notes.txt`` in different subfolders are two documents.
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_key", sa.String(length=1024), nullable=True))
    op.execute("UPDATE documents SET source_key = filename")
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.alter_column("source_key", existing_type=sa.String(length=1024), nullable=False)
        batch_op.drop_constraint("uq_documents_tenant_filename", type_="unique")
        batch_op.create_unique_constraint("uq_documents_tenant_source_key", ["tenant_id", "source_key"])

    op.create_table(
        "corpora",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name", name="uq_corpora_tenant_name"),
    )
    op.create_table(
        "corpus_documents",
        sa.Column("corpus_id", sa.String(length=32), nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["corpus_id"], ["corpora.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("corpus_id", "document_id"),
    )
    with op.batch_alter_table("corpus_documents", schema=None) as batch_op:
        batch_op.create_index("ix_corpus_documents_document_id", ["document_id"], unique=False)

    # An Experiment over a corpus has no single document: it names its corpus (kept by name if the corpus is
    # deleted later) and the documents it was run on.
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.alter_column("document_id", existing_type=sa.String(length=32), nullable=True)
        batch_op.add_column(sa.Column("corpus_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("corpus_name", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("document_ids", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.create_foreign_key("fk_experiments_corpus_id", "corpora", ["corpus_id"], ["id"], ondelete="SET NULL")
        batch_op.create_index("ix_experiments_corpus_id", ["corpus_id"], unique=False)
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("corpus_id", sa.String(length=32), nullable=True))
        batch_op.create_foreign_key("fk_jobs_corpus_id", "corpora", ["corpus_id"], ["id"], ondelete="CASCADE")
        batch_op.create_index("ix_jobs_corpus_id", ["corpus_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_corpus_id")
        batch_op.drop_constraint("fk_jobs_corpus_id", type_="foreignkey")
        batch_op.drop_column("corpus_id")
    op.execute("DELETE FROM experiments WHERE document_id IS NULL")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_index("ix_experiments_corpus_id")
        batch_op.drop_constraint("fk_experiments_corpus_id", type_="foreignkey")
        batch_op.drop_column("document_ids")
        batch_op.drop_column("corpus_name")
        batch_op.drop_column("corpus_id")
        batch_op.alter_column("document_id", existing_type=sa.String(length=32), nullable=False)
    with op.batch_alter_table("corpus_documents", schema=None) as batch_op:
        batch_op.drop_index("ix_corpus_documents_document_id")
    op.drop_table("corpus_documents")
    op.drop_table("corpora")
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.drop_constraint("uq_documents_tenant_source_key", type_="unique")
        batch_op.create_unique_constraint("uq_documents_tenant_filename", ["tenant_id", "filename"])
        batch_op.drop_column("source_key")
