"""Where the store lives: resolving what the user gave into a URL, and making the engine.

* ``None``: the ``OPSGYM_DB`` environment variable, else ``opsgym.sqlite`` in the user's data
  directory (``platformdirs.user_data_dir("opsgym")``).
* A path (anything without ``://``): that SQLite file; its folder is created.
* A URL: any SQLAlchemy URL. ``postgresql://`` (and ``postgres://``) mean psycopg 3.

SQLite runs in WAL mode with foreign keys on and a busy timeout, because several processes
(evaluation workers) write to one file; a write transaction starts with ``BEGIN IMMEDIATE`` so
that two writers queue for the lock instead of failing when one upgrades from reading.
``synchronous=NORMAL`` is WAL's usual setting: a killed process loses nothing committed; a power
cut may lose the last commits, never consistency.
"""

from __future__ import annotations

import json
import os
import re
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import platformdirs
from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url

ENV_VAR = "OPSGYM_DB"
"""Environment variable naming the store when none is given."""

DEFAULT_FILE = "opsgym.sqlite"
SQLITE_BUSY_TIMEOUT_S = 60.0
"""How long a SQLite writer waits for another process's write lock before failing."""

CONNECT_TIMEOUT_S = 5
"""How long a connection to a database server may take (unless the URL says otherwise)."""

_WAL_PAGES = 10_000
"""SQLite checkpoints its WAL into the database (two fsyncs) once it holds this many pages
(40 MB at 4 KiB a page; SQLite's default is 1,000): an evaluation writes tens of megabytes, and
each checkpoint's fsyncs cost more than the copying. The last connection to close checkpoints
what is left, so a finished evaluation leaves no WAL behind."""

WRITE = "opsgym_write"
"""Execution option marking a connection that will write (``BEGIN IMMEDIATE`` on SQLite)."""

_json_dumps = partial(json.dumps, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """JSON text of a column value: orjson (several times faster; floats written shortest and
    exact, as ``json`` writes them), and ``json`` for what orjson refuses (integers beyond 64
    bits). Records never hold NaN or infinities (``jsonable`` writes them as text); orjson would
    write them as ``null``.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return _json_dumps(value)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def loads(text: str | bytes) -> Any:
    """The value of a column's JSON text: orjson (floats read exactly, as ``json`` reads them),
    and ``json`` for text with a run of 19 digits or more, which may be an integer beyond 64 bits
    (orjson would read it as a float) or a literal orjson refuses. Anything but text is
    ``json``'s ``TypeError``.
    """
    if isinstance(text, str):
        text = text.encode()
    # The run is looked for with two C loops over bytes (a regex costs more than the parse).
    if isinstance(text, bytes) and text.translate(_DIGITS_AS_ZERO).find(_LONG_NUMBER) < 0:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def default_path() -> Path:
    """The default SQLite file, in the user's data directory."""
    return Path(platformdirs.user_data_dir("opsgym")) / DEFAULT_FILE


def mask(url: str | URL) -> str:
    """``url`` as text with its password replaced by ``***``."""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def resolve(url: str | Path | None) -> URL:
    """The SQLAlchemy URL for what the user gave (see the module docstring).

    Raises:
        ValueError: ``url`` is empty or malformed.
        OSError: the folder of a SQLite file cannot be created.
    """
    if url is None:
        url = os.environ.get(ENV_VAR) or default_path()
    if isinstance(url, str) and not url.strip():
        raise ValueError("empty database URL or path")
    if isinstance(url, Path) or "://" not in url:
        path = Path(url).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return URL.create("sqlite+pysqlite", database=str(path))
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def make_engine(url: URL) -> Engine:
    """An engine for ``url`` with the store's settings (SQLite pragmas, connect timeout)."""
    backend = url.get_backend_name()
    if backend == "sqlite":
        engine = create_engine(
            url,
            json_serializer=dumps,
            json_deserializer=loads,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S},
        )
        _configure_sqlite(engine)
        return engine
    connect_args = {}
    if backend == "postgresql" and "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    return create_engine(
        url,
        json_serializer=dumps,
        json_deserializer=loads,
        connect_args=connect_args,
        pool_pre_ping=True,
    )


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own implicit BEGIN would be DEFERRED; _on_begin chooses instead.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute(f"PRAGMA wal_autocheckpoint = {_WAL_PAGES}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        writing = connection.get_execution_options().get(WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")
