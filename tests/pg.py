"""A throwaway PostgreSQL server for the store tests.

``postgres_server`` (session-scoped) makes a cluster with ``initdb`` in a temporary folder,
starts it on 127.0.0.1 and a free port (its socket in that folder too) and stops it with
``pg_ctl stop -m immediate`` at the end of the session. As root, the server runs as the
``postgres`` system user (PostgreSQL refuses to run as root). ``postgres_url`` gives each test
a fresh, empty schema on it (as good as a new database to the store, and much faster).

Without PostgreSQL's binaries the tests that need it are skipped, loudly; with ``CI`` set in
the environment they fail instead, because CI installs ``postgresql`` and must run them.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_counter = itertools.count()


def find_bin() -> Path | None:
    """The newest PostgreSQL server's ``bin`` folder, or ``None`` if none is installed."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _runner(folder: Path) -> list[str]:
    """The command prefix that runs a PostgreSQL program as a non-root user owning ``folder``."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            continue
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        return ["runuser", "-u", user, "--"]
    pytest.fail("running as root, and neither a 'postgres' nor a 'nobody' user exists")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """URL of the ``postgres`` database on a fresh PostgreSQL server (stopped at the end)."""
    bindir = find_bin()
    if bindir is None:
        reason = (
            "PostgreSQL not installed: no initdb under /usr/lib/postgresql/*/bin or on PATH; "
            "the PostgreSQL store tests did NOT run (apt-get install postgresql; CI installs it)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason + " [CI is set, so this is a failure]")
        pytest.skip(reason)
    folder = Path(tempfile.mkdtemp(prefix="opsgym-pg-"))
    data, log = folder / "data", folder / "log"
    run_as = _runner(folder)
    port = _free_port()

    def pg(*args: str) -> None:
        subprocess.run([*run_as, *args], check=True, capture_output=True, timeout=60)

    try:
        pg(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
           "-E", "UTF8", "--no-sync", "--no-instructions")  # fmt: skip
        options = f"-k {folder} -h 127.0.0.1 -p {port} -F -c full_page_writes=off"
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options,
           "-w", "-t", "30", "start")  # fmt: skip
    except subprocess.CalledProcessError as exc:
        text = (exc.stderr or b"").decode(errors="replace")
        if log.exists():
            text += log.read_text(errors="replace")
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL from {bindir}: {text.strip()[-2000:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "stop", "-m", "immediate"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """URL of a new, empty schema on the session's PostgreSQL server, first on the URL's
    ``search_path``: to the store, an empty database (one takes ~1 ms, a database ~0.5 s).
    """
    import psycopg

    name = f"opsgym_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return f"{postgres_server}?options=-csearch_path%3D{name}"
