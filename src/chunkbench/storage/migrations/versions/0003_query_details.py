"""queries: how each ran (config), its numbered sources and the citations of its answer

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 15:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("config", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("sources", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.add_column(sa.Column("citations", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_column("citations")
        batch_op.drop_column("sources")
        batch_op.drop_column("config")
