"""job queue: what a job runs (kind + payload, so any worker can run it), its tasks, their attempts; on
PostgreSQL the procrastinate task queue's own schema

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 07:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        # What the job runs, as JSON a worker on another machine can read (``request`` is what clients see).
        batch_op.add_column(sa.Column("payload", sa.JSON(), nullable=True))
        # The procrastinate job carrying it (PostgreSQL); NULL for a job run by the process that accepted it.
        batch_op.add_column(sa.Column("queue_job_id", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("strategy_registry", sa.String(length=64), nullable=True))
    op.create_table(
        "job_attempts",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("job_id", sa.String(length=32), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("task_id", sa.String(length=32), nullable=True),
        sa.Column("task", sa.String(length=255), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=False),
        sa.Column("worker_token", sa.String(length=32), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
    )
    op.create_index("ix_job_attempts_job_id", "job_attempts", ["job_id"])
    op.create_table(
        "job_tasks",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("job_id", sa.String(length=32), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("group_name", sa.String(length=64), nullable=False, server_default=""),
        sa.Column("size", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("lock", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False, server_default="0"),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
    )
    op.create_index("ix_job_tasks_job_id", "job_tasks", ["job_id"])
    if op.get_bind().dialect.name == "postgresql":
        # procrastinate's own schema (jobs/queue.py), in this transaction. On the DBAPI cursor with no parameters:
        # the SQL holds literal ``%`` signs that a parameterised execute would read as placeholders.
        # Skipped where the schema is there already: a database whose chunkbench tables were dropped and re-made
        # keeps procrastinate's (its own schema, not the ORM's), and applying it twice fails on its first type.
        from procrastinate.schema import SchemaManager

        present = op.get_bind().exec_driver_sql("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").scalar()
        if not present:
            cursor = op.get_bind().connection.cursor()
            try:
                cursor.execute(SchemaManager.get_schema())
            finally:
                cursor.close()


# procrastinate ships no downgrade; everything its schema makes is named procrastinate_*: tables (their triggers and
# identity sequences go with them), then functions, then enum types.
_DROP_QUEUE_SCHEMA = r"""
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT tablename FROM pg_tables
           WHERE schemaname = current_schema() AND tablename LIKE 'procrastinate\_%' LOOP
    EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', r.tablename);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\_%' LOOP
    EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', r.signature);
  END LOOP;
  FOR r IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate\_%' AND t.typtype = 'e' LOOP
    EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', r.typname);
  END LOOP;
END $$;
"""


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        cursor = op.get_bind().connection.cursor()  # literal % signs, as in upgrade
        try:
            cursor.execute(_DROP_QUEUE_SCHEMA)
        finally:
            cursor.close()
    op.drop_index("ix_job_tasks_job_id", table_name="job_tasks")
    op.drop_table("job_tasks")
    op.drop_index("ix_job_attempts_job_id", table_name="job_attempts")
    op.drop_table("job_attempts")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        for column in ("strategy_registry", "queue_job_id", "payload"):
            batch_op.drop_column(column)
