"""The server the workbench's episode benchmarks run against: a real ``opsgym serve`` on a
temporary SQLite store of 10,000 episodes and the 2,000-step one of ``e2e/seed_long.py``.

    python e2e/bench/serve_bench.py --port 8766

Playing 10,000 episodes would take minutes; the bench measures the workbench, not the
harness, so a small evaluation is played and its rows are copied in SQLite (outside any
evaluation, so that no evaluation's seal is touched) until the store holds enough.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # e2e/: seed_long

from seed_long import seed_long

from opsgym.evaluation.harness import evaluate
from opsgym.server import ServerSettings, serve

STORED = 10_000


def fill(db: Path, total: int) -> int:
    """Copy the stored episodes (and their events) until ``db`` holds ``total``; each copy is
    another trial of the same episode. Returns how many episodes it holds.
    """
    with sqlite3.connect(db) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(episodes)")]
        (played,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
        (last,) = conn.execute("SELECT MAX(id) FROM episodes").fetchone()
        copied = {"id": "id + :shift", "evaluation_id": "NULL", "trial": "trial + :copy"}
        select = ", ".join(copied.get(c, c) for c in columns)
        held, copy = played, 0
        while held < total:
            copy += 1
            shift = last * copy
            n = min(played, total - held)
            window = {"shift": shift, "copy": copy, "first": 1, "last": n}
            conn.execute(
                f"INSERT INTO episodes ({', '.join(columns)}) SELECT {select} FROM episodes "
                "WHERE id BETWEEN :first AND :last",
                window,
            )
            conn.execute(
                "INSERT INTO events (episode_id, steps, truth_hidden) SELECT episode_id + :shift, "
                "steps, truth_hidden FROM events WHERE episode_id BETWEEN :first AND :last",
                window,
            )
            held += n
        return held


def main() -> None:
    """Seed the store, then serve it until stopped."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opsgym-bench-") as tmp:
        db = Path(tmp) / "store.sqlite"
        evaluate("release", ["oracle", "naive"], episodes=10, db=db, name="bench", seeds="public")
        fill(db, STORED - 1)
        seed_long(db)
        settings = ServerSettings(
            host="127.0.0.1", port=args.port, db=str(db), runs_dir=str(Path(tmp) / "runs")
        )
        serve(settings)


if __name__ == "__main__":
    main()
