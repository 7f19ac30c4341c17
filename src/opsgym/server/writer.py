"""The store writer process: ``python -m opsgym.server.writer [URL]``.

Reads finished episodes from standard input, each a frame of a 4-byte big-endian length and the
JSON of :meth:`~opsgym.store.Store.add_episode`'s arguments by name, the record as its unsealed
``draft`` (:meth:`~opsgym.core.episode.Episode.draft`; hashed here, by
:func:`~opsgym.store.records.prepare_draft`, so the server's process does not spend its time on
hash chains), and stores them in batches of up to 64, a transaction each
(all of a batch or none). After each batch it writes a line
``<stored> <refused>`` to standard output. An empty frame, or the end of its input, stops it.

A plain subprocess rather than :mod:`multiprocessing`: a spawned child re-imports the parent's
``__main__``, which runs the parent's script again when it lacks an ``if __name__`` guard.
"""

from __future__ import annotations

import logging
import queue
import struct
import sys
import threading
from typing import BinaryIO

from opsgym.store.engine import loads
from opsgym.store.records import Prepared, prepare, prepare_draft
from opsgym.store.store import ENTRY_KEYS

BATCH = 64
ENTRY = ("draft", *ENTRY_KEYS)
"""What a frame may hold: ``add_episodes``'s entry, or the same with a ``draft`` for its
``record``."""
HEADER = struct.Struct(">I")
log = logging.getLogger("opsgym.server.writer")


def frame(payload: bytes) -> bytes:
    """``payload`` with its length in front."""
    return HEADER.pack(len(payload)) + payload


def _read_frames(stream: BinaryIO, inbox: queue.Queue[bytes | None]) -> None:
    while True:
        head = stream.read(HEADER.size)
        if len(head) < HEADER.size:
            break
        (size,) = HEADER.unpack(head)
        if size == 0:
            break
        inbox.put(stream.read(size))
    inbox.put(None)


def _prepared(payload: bytes) -> Prepared:
    """A frame's episode, ready to be written: a draft (hashed and written as JSON in one pass,
    :func:`~opsgym.store.records.prepare_draft`) or a sealed record (checked first).
    """
    entry = loads(payload)  # the store's reader: an integer beyond 64 bits stays an integer
    unknown = sorted(set(entry) - set(ENTRY))
    if unknown:
        raise TypeError(f"Entry has unknown keys {unknown}; known: {list(ENTRY)}.")
    if "draft" in entry:
        return prepare_draft(entry.pop("draft"), **entry)
    return prepare(**entry)


def main(url: str | None = None) -> None:
    """Store what arrives on standard input until it ends."""
    from opsgym.store import open_store

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    inbox: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_read_frames, args=(sys.stdin.buffer, inbox), daemon=True).start()
    out = sys.stdout
    with open_store(url) as store:
        done = False
        while not done:
            item = inbox.get()
            if item is None:
                break
            batch = [item]
            while len(batch) < BATCH:
                try:
                    nxt = inbox.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    done = True
                    break
                batch.append(nxt)
            try:
                store.add_prepared([_prepared(b) for b in batch])
                out.write(f"{len(batch)} 0\n")
            except Exception as exc:  # noqa: BLE001 -- one bad batch must not stop the writer
                log.error(
                    "could not store %d episodes: %s: %s", len(batch), type(exc).__name__, exc
                )
                out.write(f"0 {len(batch)}\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None)
