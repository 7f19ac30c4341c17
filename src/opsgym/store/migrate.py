"""Alembic migrations, run in code: the store's schema is brought to head when it is opened.

The migration scripts ship inside the package (``opsgym/store/migrations``); no ``alembic.ini``
is needed. Opening an up-to-date database only reads its revision (Alembic is not even
imported). Upgrades run in one transaction under a lock (``BEGIN IMMEDIATE`` on SQLite, an
advisory lock on PostgreSQL), so processes opening a new database at once do not race.

To add a migration after changing :mod:`opsgym.store.models`::

    from alembic import command
    from opsgym.store.migrate import alembic_config
    command.revision(alembic_config("sqlite:///scratch.sqlite"), "what changed",
                     autogenerate=True, rev_id="0002")

then review the script, and set :data:`HEAD` to its revision.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from opsgym.store.engine import WRITE

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPTS = Path(__file__).with_name("migrations")
"""The Alembic script directory, shipped as package data."""

HEAD = "0005"
"""The newest revision in :data:`SCRIPTS` (a test checks that they agree)."""

VERSION_TABLE = "opsgym_alembic_version"
"""Alembic's bookkeeping table; named for opsgym so a shared database can hold others."""

_PG_LOCK = 0x6F7073_67796D  # "opsgym": the advisory lock key that serialises upgrades


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for the store's scripts, on ``connection`` or ``url``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, or ``None`` for a database opsgym never touched."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    return connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def upgrade(engine: Engine) -> None:
    """Bring the database's schema to :data:`HEAD`; a no-op when it is there already.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database cannot be reached or changed.
        alembic.util.CommandError: the database is at a revision this opsgym does not know.
    """
    with engine.connect() as connection:
        if current_revision(connection) == HEAD:
            return
    from alembic import command

    with engine.execution_options(**{WRITE: True}).begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        command.upgrade(alembic_config(connection=connection), "head")
