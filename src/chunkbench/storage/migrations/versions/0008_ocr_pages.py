"""ocr pages: a document records which of its pages were read by OCR

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # 1-based page numbers whose text came from OCR (CHUNKBENCH_OCR=on); NULL, as for every existing document,
    # when none did.
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ocr_pages", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.drop_column("ocr_pages")
