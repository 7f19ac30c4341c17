"""The server the browser tests run against: a real `opsgym serve` (Uvicorn, loopback) on a
temporary SQLite store seeded with small evaluations of every world, one stored episode
tampered with, and a fixtures file telling the specs what is where.

    python e2e/serve.py --port 8765 --fixtures e2e/.fixtures.json

Nothing touches the user's store: the store, the runs folder and the fixtures live in a
temporary directory (the fixtures file is also copied where asked), removed on exit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from seed_long import seed_long  # e2e/, beside this file

from opsgym.core.request import EpisodeRequest
from opsgym.evaluation.harness import evaluate
from opsgym.server import ServerSettings, serve

EVALUATIONS = {
    "e2e-release": ("release", ["oracle", "naive"], 12),
    "e2e-fleet": ("fleet", ["oracle", "naive"], 4),
    "e2e-oversight": ("oversight", ["oracle", "naive"], 4),
}


def timeout_after_commit() -> int:
    """A test seed on which release ``mixed`` draws ``deploy_timeout``, and the deploy
    commits but reports a timeout."""
    for seed in range(9, 10_000, 10):
        episode = EpisodeRequest(env="release", scenario="mixed", seed=seed, split="test").start()
        facts = episode.world.facts
        if (
            episode.family.name == "deploy_timeout"
            and facts.get("deploy_times_out")
            and facts.get("deploy_committed")
            and not facts.get("v2_broken")
        ):
            return seed
    raise RuntimeError("no release seed with a committed deploy that times out")


def tamper(db: Path, evaluation: str) -> dict[str, Any]:
    """Edit one stored step's report (as a hostile editor of the file could): the replay check
    must name that step and field."""
    with sqlite3.connect(db) as conn:
        (episode,) = conn.execute(
            "SELECT MIN(e.id) FROM episodes e JOIN evaluations v ON v.id = e.evaluation_id "
            "WHERE v.name = ? AND e.policy = 'naive' AND e.steps >= 3",
            (evaluation,),
        ).fetchone()
        (steps,) = conn.execute(
            "SELECT steps FROM events WHERE episode_id = ?", (episode,)
        ).fetchone()
        events = json.loads(steps)
        index = 1  # the second step
        events[index]["report"] = {**events[index]["report"], "status": "ok"}
        conn.execute(
            "UPDATE events SET steps = ? WHERE episode_id = ?", (json.dumps(events), episode)
        )
    return {"episode": episode, "step": events[index]["step"], "field": "report"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--fixtures", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opsgym-e2e-") as tmp:
        db, runs = Path(tmp) / "store.sqlite", Path(tmp) / "runs"
        for name, (env, policies, episodes) in EVALUATIONS.items():
            evaluate(env, policies, episodes=episodes, db=db, name=name, seeds="public")
        fixtures = {
            "evaluations": {name: env for name, (env, _, _) in EVALUATIONS.items()},
            "timeout_seed": timeout_after_commit(),
            "tampered": tamper(db, "e2e-release"),
            "long": seed_long(db),
        }
        text = json.dumps(fixtures, indent=1)
        (Path(tmp) / "fixtures.json").write_text(text)
        if args.fixtures:
            Path(args.fixtures).write_text(text)
        settings = ServerSettings(
            host="127.0.0.1",
            port=args.port,
            db=str(db),
            runs_dir=str(runs),
            training=True,
            max_ppo_timesteps=4096,
        )
        try:
            serve(settings)
        finally:
            shutil.rmtree(runs, ignore_errors=True)


if __name__ == "__main__":
    main()
