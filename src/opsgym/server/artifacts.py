"""A training job's files over HTTP: paths that stay inside the job's folder, the listing, the
streamed ``tar.gz``, and the log read by offset.

A client names a file by its path relative to the run's folder. :func:`inside` refuses anything
that could lead out of it: an absolute path, a ``..`` or ``.`` segment (``%2e%2e`` arrives
decoded, as ``..``), a backslash or NUL, and a symbolic link anywhere on the way (a trainer
never writes one; a link is how a folder would point at the rest of the machine). Listings and
archives skip links for the same reason.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

CHUNK = 1 << 16
"""Bytes a streamed archive or log read moves at a time."""


class OutsideError(ValueError):
    """A path that does not stay inside the job's folder (a 403)."""


def inside(root: Path, relative: str) -> Path:
    """The file ``relative`` names inside ``root``.

    Raises:
        OutsideError: ``relative`` could lead outside ``root`` (see the module docstring).
        FileNotFoundError: it stays inside, but nothing is there.
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\0" in relative:
        raise OutsideError(f"path {relative!r} must be relative to the job's folder")
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OutsideError(f"path {relative!r} has an empty, '.' or '..' segment")
    if root.is_symlink():
        raise OutsideError("the job's folder is a symbolic link")
    path = root
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise OutsideError(f"path {relative!r} goes through a symbolic link")
    if not path.resolve().is_relative_to(root.resolve()):
        raise OutsideError(f"path {relative!r} leads outside the job's folder")
    if not path.is_file():
        raise FileNotFoundError(f"no file {relative!r} in the job's folder")
    return path


def files_of(root: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` as ``(relative path, path)``, sorted; symbolic links
    (and whatever they lead to) are left out.
    """
    if not root.is_dir() or root.is_symlink():
        return []
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file():
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def listing(root: Path, *, hashes: bool = False) -> list[dict[str, Any]]:
    """``files_of(root)`` as ``{"path", "size", "modified"}`` (ISO 8601, UTC), and with
    ``hashes`` each file's ``sha256`` (hex), so that a client can check what it downloaded.
    """
    out = []
    for relative, path in files_of(root):
        try:
            stat = path.stat()
            digest = sha256(str(path), stat.st_size, stat.st_mtime_ns) if hashes else None
        except OSError:  # deleted since the walk (a trainer rotating its checkpoints)
            continue
        modified = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat()
        row = {"path": relative, "size": stat.st_size, "modified": modified}
        out.append(row if digest is None else {**row, "sha256": digest})
    return out


@lru_cache(maxsize=4096)
def sha256(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 (hex) of the file at ``path``, remembered while its size and modification time
    stay the same (a run's model can be large, and its listing is asked for again and again).
    """
    del size, mtime_ns  # the cache's key: a file rewritten since is hashed again
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def archive(root: Path, top: str) -> Iterator[bytes]:
    """``root``'s files as a ``tar.gz`` under folder ``top``, streamed in chunks as it is
    written (a thread writes into a pipe; nothing is held whole in memory). Closing the
    iterator early (a client that left) stops the writer.
    """
    read_end, write_end = os.pipe()
    files = files_of(root)

    def write() -> None:
        try:
            with (
                os.fdopen(write_end, "wb") as sink,
                tarfile.open(fileobj=sink, mode="w|gz", format=tarfile.PAX_FORMAT) as tar,
            ):
                for relative, path in files:
                    try:
                        tar.add(path, arcname=f"{top}/{relative}", recursive=False)
                    except FileNotFoundError:
                        continue
        except (BrokenPipeError, OSError, ValueError):
            pass  # the reader went away

    writer = threading.Thread(target=write, name="opsgym-archive", daemon=True)
    writer.start()
    with os.fdopen(read_end, "rb") as source:
        while chunk := source.read(CHUNK):
            yield chunk
    writer.join()


def read_log(path: Path, offset: int, limit: int, final: bool) -> tuple[list[str], int, int]:
    """Whole lines of the log from byte ``offset`` (at most about ``limit`` bytes): ``(lines,
    next offset, size)``. A last line without its newline yet waits, unless ``final`` (the job
    is over and the log complete).
    """
    try:
        with path.open("rb") as log:
            size = os.fstat(log.fileno()).st_size
            log.seek(min(offset, size))
            data = log.read(limit)
    except FileNotFoundError:
        return [], offset, 0
    if not final or len(data) == limit:
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) == limit:
            cut = len(data)  # a line longer than the limit goes in pieces
        data = data[:cut]
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines, min(offset, size) + len(data), size
