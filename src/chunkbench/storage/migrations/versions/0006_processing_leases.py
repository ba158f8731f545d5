"""processing leases: documents and jobs record the process working on them and a lease it renews

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-29 19:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_TABLES = ("documents", "jobs")


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("owner_host", sa.String(length=255), nullable=True))
            batch_op.add_column(sa.Column("owner_pid", sa.Integer(), nullable=True))
            batch_op.add_column(sa.Column("owner_token", sa.String(length=32), nullable=True))
            batch_op.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
            if table == "documents":
                # What the run in progress writes (strategies, Corpus model, strategy runs recorded so far),
                # so a recovery can remove exactly its points and rows.
                batch_op.add_column(sa.Column("processing_run", sa.JSON(), nullable=True))
            batch_op.create_index(f"ix_{table}_owner_token", ["owner_token"])


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f"ix_{table}_owner_token")
            if table == "documents":
                batch_op.drop_column("processing_run")
            batch_op.drop_column("lease_expires_at")
            batch_op.drop_column("owner_token")
            batch_op.drop_column("owner_pid")
            batch_op.drop_column("owner_host")
