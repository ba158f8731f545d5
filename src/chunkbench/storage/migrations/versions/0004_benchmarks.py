"""experiments become resumable benchmark runs: status, plan, provenance, decision; one row per finished cell

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 16:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("status", sa.String(length=16), nullable=False, server_default="completed"))
        batch_op.add_column(sa.Column("error", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("configurations", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.add_column(sa.Column("provenance", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("decision", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("cost", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("runner_host", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("runner_pid", sa.Integer(), nullable=True))
        # Per-question results now live one row per cell in benchmark_cells (resumable).
        batch_op.drop_column("per_question")
    op.create_table(
        "benchmark_cells",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "experiment_id", sa.String(length=32), sa.ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("config_key", sa.String(length=200), nullable=False),
        sa.Column("question_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("experiment_id", "config_key", "question_id", name="uq_benchmark_cell"),
    )
    op.create_index("ix_benchmark_cells_experiment_id", "benchmark_cells", ["experiment_id"])


def downgrade() -> None:
    op.drop_index("ix_benchmark_cells_experiment_id", table_name="benchmark_cells")
    op.drop_table("benchmark_cells")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("per_question", sa.JSON(), nullable=False, server_default="[]"))
        for column in (
            "runner_pid", "runner_host", "finished_at", "started_at", "cost", "decision", "provenance",
            "configurations", "error", "status", "name",
        ):  # fmt: skip
            batch_op.drop_column(column)
