"""Speed of `opsgym eval` against a bare play loop, per world, in one run.

For each world, oracle episodes per second on `mixed` test seeds through:

* a bare ``play(make(...), oracle)`` loop (nothing recorded, nothing stored);
* the same loop keeping each episode's ``record()`` (the hash chain an evaluation stores);
* ``opsgym.evaluate`` with one worker and the SQLite store (a fresh file);
* ``opsgym.evaluate`` with two local workers.

Also: events written per second by the one-worker evaluation. Medians of ``--repeats`` runs,
after a warm-up evaluation that pays the one-time imports (SciPy's stats module alone takes
about a second), so that per-episode costs compare. Goals (issue 8): one worker within 1.5x of
the bare loop's time per episode; two workers at least 1.7x one worker's rate.

    python benchmarks/evaluate.py [--episodes 300] [--repeats 3] [--only ENV] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import opsgym
from opsgym.agents import get_policy, play
from opsgym.evaluation import evaluate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine  # noqa: E402


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


def stored(env: str, episodes: int, workers: int) -> float:
    """Episodes per second of ``opsgym.evaluate`` into a fresh SQLite store."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        evaluate(env, ["oracle"], episodes=episodes, workers=workers, db=Path(tmp) / "b.sqlite")
        return episodes / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="one environment")
    parser.add_argument("--json", type=Path, default=HERE / "evaluate_results.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        evaluate("release", ["oracle"], episodes=2, db=Path(tmp) / "warm.sqlite")
    for env in opsgym.list_envs():
        if args.only and env != args.only:
            continue
        runs = [bare(env, args.episodes) for _ in range(args.repeats)]
        loop = statistics.median(r[0] for r in runs)
        events = runs[0][1]
        recorded = statistics.median(bare(env, args.episodes, True)[0] for _ in range(args.repeats))
        one = statistics.median(stored(env, args.episodes, 1) for _ in range(args.repeats))
        two = statistics.median(stored(env, args.episodes, 2) for _ in range(args.repeats))
        rows.append(
            {
                "env": env,
                "bare_eps": loop,
                "bare_record_eps": recorded,
                "one_worker_eps": one,
                "two_workers_eps": two,
                "one_vs_bare_time": loop / one,
                "two_vs_one_rate": two / one,
                "events_per_episode": events / args.episodes,
                "events_written_per_s": one * events / args.episodes,
            }
        )
    print(f"machine: {machine()}  episodes={args.episodes} repeats={args.repeats} (medians)")
    print(
        "| env | bare loop ep/s | bare + record() ep/s | eval 1 worker ep/s | "
        "eval 2 workers ep/s | 1 worker time vs bare (goal ≤ 1.5×) | "
        "2 vs 1 worker rate (goal ≥ 1.7×) | events written/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['env']} | {r['bare_eps']:,.0f} | {r['bare_record_eps']:,.0f} | "
            f"{r['one_worker_eps']:,.0f} | "
            f"{r['two_workers_eps']:,.0f} | {r['one_vs_bare_time']:.2f}× | "
            f"{r['two_vs_one_rate']:.2f}× | {r['events_written_per_s']:,.0f} |"
        )
    args.json.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
