"""document kind and language: what a document is (text or code), how its language was found, its parent

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 22:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing documents are text whose language was detected (their confidence was not kept: NULL).
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("language_confidence", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("language_source", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="text"))
        batch_op.add_column(sa.Column("code_language", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("parent_id", sa.String(length=32), nullable=True))
        batch_op.create_foreign_key("fk_documents_parent_id", "documents", ["parent_id"], ["id"], ondelete="SET NULL")
    op.execute("UPDATE documents SET language_source = 'detected' WHERE language IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.drop_constraint("fk_documents_parent_id", type_="foreignkey")
        for column in ("parent_id", "code_language", "kind", "language_source", "language_confidence"):
            batch_op.drop_column(column)
