"""Which process runs an evaluation, and whether it still does.

An evaluation marks itself ``failed`` or ``interrupted`` when it raises or is stopped, but a
process killed outright (``SIGKILL``, the out-of-memory killer, a lost machine) writes nothing.
So a running evaluation names its runner (host, process id and the process's start time, which
tells a reused id from the original), and a reader on the same host can see that the runner is
gone. A runner on another host cannot be checked from here: its evaluation reads ``running``
until it is resumed or read on its own host.
"""

from __future__ import annotations

import os
import socket
from typing import Any


def runner() -> dict[str, Any]:
    """This process, as a running evaluation names it."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "since": _started(pid)}


def gone(named: Any) -> bool:
    """Whether the runner ``named`` (from :func:`runner`) has certainly ended.

    ``False`` whenever it cannot be told: another host, a system without process ids to probe,
    a process of another user that is alive.
    """
    if not isinstance(named, dict) or os.name != "posix":
        return False  # on Windows, os.kill(pid, 0) would terminate the process
    pid = named.get("pid")
    if named.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, and someone else's
        pass
    except OSError:
        return False
    since, now = named.get("since"), _started(pid)
    return since is not None and now is not None and since != now  # the id was reused


def _started(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (Linux), else ``None``."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None
