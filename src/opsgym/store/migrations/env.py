"""Alembic environment for the store: runs on the connection that ``migrate.upgrade`` holds.

Given only a URL (``alembic_config(url)``, for ``command.revision(..., autogenerate=True)``),
it connects by itself.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from opsgym.store.migrate import VERSION_TABLE
from opsgym.store.models import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER much
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


_connection = context.config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:
    with create_engine(context.config.get_main_option("sqlalchemy.url")).begin() as _conn:
        _run(_conn)
