"""question files: a tenant's question sets in the database, so replicas and workers need no shared data folder

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 07:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The files already under {data_dir}/files are not read here (a migration knows no data folder): the evaluation
    # service imports each tenant's folder once, on the tenant's first use of its question files
    # (evaluation/service.py, import_legacy_files).
    op.create_table(
        "question_files",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name", name="uq_question_files_tenant_name"),
    )


def downgrade() -> None:
    op.drop_table("question_files")
