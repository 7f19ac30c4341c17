"""Speed of `opsgym eval` against a bare play loop, per world, in one run.

For each world, oracle episodes per second on `mixed` test seeds through:

* a bare ``play(make(...), oracle)`` loop (nothing recorded, nothing stored);
* the same loop keeping each episode's ``record()`` (the hash chain an evaluation stores);
* ``opsgym.evaluate`` with one worker and the SQLite store (a fresh file);
* ``opsgym.evaluate`` with two local workers (this process and one child);
* the bare loop split between this process and a forked one: what two processes that share
  nothing get from this machine, the ceiling for two workers. On a machine whose two virtual
  cores do not give two cores' work (as here: see benchmarks/README.md), the two-worker goal
  is out of reach of any code, and this column says so.

Also: events written per second by the one-worker evaluation. Medians of ``--repeats`` runs,
after a warm-up evaluation that pays the one-time imports (SciPy's stats module alone takes
about a second), so that per-episode costs compare. Each repeat times every variant in turn, so
that a change in the machine's load falls on all of them alike; a ratio is the median of the
repeats' own ratios (the machine's speed drifts by a third over seconds here). Goals (issue 8):
one worker within 1.5x of the bare loop's time per episode; two workers at least 1.7x one
worker's rate.

Every timed evaluation creates its store, a new SQLite file: a few fsyncs that a user pays
once, not per evaluation, and that weigh most on short runs. The evaluations are also timed
into a store created (and closed) just before the timer starts, shown in their own columns,
with the creation's own time, so that both readings are on the table.

    python benchmarks/evaluate.py [--episodes 300] [--repeats 3] [--only ENV] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import opsgym
from opsgym.agents import get_policy, play
from opsgym.evaluation import evaluate
from opsgym.store import open_store

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine  # noqa: E402


def paired(runs: dict[str, list[float]], a: str, b: str) -> float:
    """The median over repeats of ``a / b`` within each repeat (the machine's drift cancels)."""
    return statistics.median(x / y for x, y in zip(runs[a], runs[b], strict=True))


def bare(env: str, episodes: int, record: bool = False) -> tuple[float, int]:
    """(episodes per second, events) of the oracle through a bare play loop."""
    seeds = opsgym.seeds("test", episodes)
    start = time.perf_counter()
    events = 0
    for seed in seeds:
        episode = play(opsgym.make(env, "mixed", seed), get_policy(env, "oracle"))
        events += episode.steps
        if record:
            episode.record()
    return episodes / (time.perf_counter() - start), events


def _play(env: str, seeds: list[int]) -> None:
    for seed in seeds:
        play(opsgym.make(env, "mixed", seed), get_policy(env, "oracle"))


def bare_two(env: str, episodes: int) -> tuple[float, int]:
    """(episodes per second, 0) of the bare loop split between this process and a forked one:
    what two processes get out of this machine with nothing shared, the ceiling of two workers.
    """
    seeds = opsgym.seeds("test", episodes)
    child = multiprocessing.get_context("fork").Process(target=_play, args=(env, seeds[1::2]))
    start = time.perf_counter()
    child.start()
    _play(env, seeds[::2])
    child.join()
    return episodes / (time.perf_counter() - start), 0


def stored(env: str, episodes: int, workers: int, existing: bool = False) -> tuple[float, float]:
    """(episodes per second of ``opsgym.evaluate`` into a fresh SQLite store, milliseconds it
    took to create that store before the timer started, or 0 when the timer included it).
    """
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "b.sqlite"
        created = 0.0
        if existing:
            start = time.perf_counter()
            open_store(db).close()
            created = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        evaluate(env, ["oracle"], episodes=episodes, workers=workers, db=db)
        return episodes / (time.perf_counter() - start), created


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="one environment")
    parser.add_argument("--json", type=Path, default=HERE / "evaluate_results.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        evaluate("release", ["oracle"], episodes=2, db=Path(tmp) / "warm.sqlite")
    for env in opsgym.list_envs():
        if args.only and env != args.only:
            continue
        runs: dict[str, list[float]] = {}
        events = 0
        variants = [
            ("bare", bare, {}),
            ("record", bare, {"record": True}),
            ("bare_two", bare_two, {}),
            ("one", stored, {"workers": 1}),
            ("two", stored, {"workers": 2}),
            ("one_existing", stored, {"workers": 1, "existing": True}),
            ("two_existing", stored, {"workers": 2, "existing": True}),
        ]
        for _ in range(args.repeats):
            for key, run, kwargs in variants:
                rate, extra = run(env, args.episodes, **kwargs)
                runs.setdefault(key, []).append(rate)
                if key == "bare":
                    events = int(extra)
                if key == "one_existing":
                    runs.setdefault("created_ms", []).append(extra)
        m = {k: statistics.median(v) for k, v in runs.items()}
        ratio = partial(paired, runs)
        rows.append(
            {
                "env": env,
                "bare_eps": m["bare"],
                "bare_record_eps": m["record"],
                "one_worker_eps": m["one"],
                "two_workers_eps": m["two"],
                "one_vs_bare_time": ratio("bare", "one"),
                "two_vs_one_rate": ratio("two", "one"),
                "machine_two_vs_one": ratio("bare_two", "bare"),
                "events_per_episode": events / args.episodes,
                "events_written_per_s": m["one"] * events / args.episodes,
                "existing_store": {
                    "one_worker_eps": m["one_existing"],
                    "two_workers_eps": m["two_existing"],
                    "one_vs_bare_time": ratio("bare", "one_existing"),
                    "two_vs_one_rate": ratio("two_existing", "one_existing"),
                    "store_created_ms": m["created_ms"],
                },
                "runs": runs,
            }
        )
    load_after = os.getloadavg()
    print(
        f"machine: {machine()}  episodes={args.episodes} repeats={args.repeats} (rates: "
        "medians; ratios: medians of each repeat's ratio)"
    )
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    print(
        "| env | bare loop ep/s | bare + record() ep/s | eval 1 worker ep/s | "
        "eval 2 workers ep/s | 1 worker time vs bare (goal ≤ 1.5×) | "
        "2 vs 1 worker rate (goal ≥ 1.7×) | this machine: 2 bare loops vs 1 | "
        "events written/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['env']} | {r['bare_eps']:,.0f} | {r['bare_record_eps']:,.0f} | "
            f"{r['one_worker_eps']:,.0f} | "
            f"{r['two_workers_eps']:,.0f} | {r['one_vs_bare_time']:.2f}× | "
            f"{r['two_vs_one_rate']:.2f}× | {r['machine_two_vs_one']:.2f}× | "
            f"{r['events_written_per_s']:,.0f} |"
        )
    print()
    print("Into a store created before the timer (its creation timed on its own):")
    print(
        "| env | eval 1 worker ep/s | eval 2 workers ep/s | 1 worker time vs bare | "
        "2 vs 1 worker rate | store creation ms |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        e = r["existing_store"]
        print(
            f"| {r['env']} | {e['one_worker_eps']:,.0f} | {e['two_workers_eps']:,.0f} | "
            f"{e['one_vs_bare_time']:.2f}× | {e['two_vs_one_rate']:.2f}× | "
            f"{e['store_created_ms']:.0f} |"
        )
    args.json.write_text(
        json.dumps(
            {"machine": machine(), "load": [load_before, load_after], "rows": rows}, indent=1
        )
    )


if __name__ == "__main__":
    main()
