"""Alembic environment: runs on the connection chunkbench hands over (see ``storage/db.py``)."""

from typing import cast

from alembic import context
from sqlalchemy import create_engine

from chunkbench.storage.schema import Base, is_orm_object

target_metadata = Base.metadata
config = context.config


def _run(connection) -> None:
    # SQLite cannot ALTER most things in place: batch mode rebuilds tables when a migration needs it.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        include_name=is_orm_object,  # procrastinate's schema is not the ORM's: autogenerate leaves it alone
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # the ``alembic`` command line, with sqlalchemy.url set in its config
    url = cast(str, config.get_main_option("sqlalchemy.url"))  # alembic.ini sets it
    with create_engine(url).connect() as own_connection:
        _run(own_connection)
