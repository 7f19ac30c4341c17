"""PPO on the worlds' own reward, beside the baselines: regenerates ``benchmarks/ppo.md``'s tables.

Trains, one run at a time (``torch_threads=1``), through ``opsgym train ppo``:

* release, ``mixed``, 300,000 steps, curriculum and masks (the target run), then the two
  ablations: without the curriculum, without masks;
* fleet and oversight, ``mixed``, 300,000 steps, curriculum and masks;

then evaluates every trained policy and the baselines (``random``, ``naive``, ``oracle``) with
``opsgym eval`` on the same held-out test seeds (``mixed``; 600 per policy on release, 200 on
fleet and oversight) and prints one per-outcome table per world, with the wall time of each
training. On release it also prints the release target: ``deployed_verified`` on the episodes
where v2 could ship (the last event's truth says ``v2_shippable``) and a safe outcome on all.

    python benchmarks/ppo.py [--timesteps 300000] [--seed 1] [--only release] [--out DIR]
                             [--json FILE]

A run takes about 4-6 minutes per training on a 2-core machine, 25-30 minutes in all. The
release rows include ``--vector`` (the batched lanes: the same run as ``ppo``, bit for bit) and
a lane count tuned for throughput.

    python benchmarks/ppo.py --throughput [--timesteps 100000]

measures training throughput on release (``mixed``, curriculum and masks) instead: env steps
consumed per second of wall time, updates included, for the Gym envs and the batched lanes at
the same ``n_envs``/``n_steps``/``batch_size``, and for more lanes; beside it the time spent in
SB3's ``train()`` (the PPO update) per sample, the ceiling the update alone sets, and the time
spent computing the curriculum's reference trajectories (the scalar oracle).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import opsgym
from opsgym.core.registry import spec
from opsgym.evaluation import evaluate

LANES = ("--vector", "--n-envs", "256", "--n-steps", "64", "--batch-size", "4096")
"""The batched lanes tuned for throughput (``--throughput`` measures it)."""
RUNS = {
    "release": [
        ("ppo", ()),
        ("ppo, vector", ("--vector",)),
        ("ppo, vector, 256 lanes", LANES),
        ("ppo, no curriculum", ("--no-curriculum",)),
        ("ppo, no mask", ("--no-mask",)),
    ],
    "fleet": [("ppo", ())],
    "oversight": [("ppo", ())],
}
EPISODES = {"release": 600, "fleet": 200, "oversight": 200}
BASELINES = ("random", "naive", "oracle")


def train(
    env: str, flags: tuple[str, ...], args: argparse.Namespace, name: str
) -> tuple[Path, float]:
    """Train one run through the CLI; its folder and wall time in seconds."""
    command = [
        sys.executable, "-m", "opsgym.cli", "train", "ppo", "--env", env,
        "--total-timesteps", str(args.timesteps), "--seed", str(args.seed),
        "--out", str(args.out), "--name", name, "--db", args.db, "--eval-episodes", "0", *flags,
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "CI": "1"})
    return args.out / name, time.perf_counter() - start


def shipped(db: str, evaluation: str, policy: str) -> tuple[int, int]:
    """On release: (episodes where v2 could ship, of those shipped and verified). Whether v2
    could ship is a hidden fact the seed draws, read here off a fresh episode of that seed.
    """
    from opsgym.store import open_store

    with open_store(db) as store:
        episodes = store.episodes(evaluation=evaluation, policy=policy)
    can = [
        e
        for e in episodes
        if opsgym.make("release", e["scenario"], e["seed"]).world.truth()["v2_shippable"]
    ]
    return len(can), sum(e["outcome"] == "deployed_verified" for e in can)


def table(env: str, rows: list[tuple[str, dict]], walls: dict[str, float]) -> str:
    """A markdown table: one row per policy, a column per outcome (share of episodes)."""
    outcomes = list(spec(env).outcome_rewards)
    head = ["policy", *outcomes, "safe", "mean return", "train wall"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    safe = spec(env).safe_outcomes
    for label, s in rows:
        rates = {k: v["value"] for k, v in s["outcomes"].items()}
        cells = [f"{rates.get(o, 0.0):.1%}" for o in outcomes]
        cells.append(f"{sum(rates.get(o, 0.0) for o in safe):.1%}")
        cells.append(f"{s['return']['value']:.2f}")
        cells.append(f"{walls[label]:.0f} s" if label in walls else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


THROUGHPUT = [
    ("gym envs", {"vector": False, "n_envs": 4, "n_steps": 256, "batch_size": 256}),
    ("batched lanes", {"vector": True, "n_envs": 4, "n_steps": 256, "batch_size": 256}),
    ("batched lanes", {"vector": True, "n_envs": 64, "n_steps": 64, "batch_size": 1024}),
    ("batched lanes", {"vector": True, "n_envs": 256, "n_steps": 64, "batch_size": 4096}),
    ("batched lanes, 4 epochs", {"vector": True, "n_envs": 256, "n_steps": 64,
                                 "batch_size": 4096, "n_epochs": 4}),
]  # fmt: skip
"""Training-throughput settings: the default (4 envs, rollouts of 256, minibatches of 256) on
both paths, then more lanes and larger minibatches; the last trades epochs for speed."""


def throughput(timesteps: int, out: Path) -> list[dict]:
    """Train release (``mixed``, curriculum, masks) for ``timesteps`` per setting of
    :data:`THROUGHPUT`, in this process; time the whole run, SB3's ``train()`` (the update) and
    the curriculum's reference trajectories.
    """
    from sb3_contrib import MaskablePPO

    import opsgym.training.ppo as ppo

    spent = {"update": 0.0, "reference": 0.0}

    def timed(method, key):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        return run

    update, reference = MaskablePPO.train, ppo.reference_calls
    MaskablePPO.train = timed(update, "update")
    ppo.reference_calls = timed(reference, "reference")
    rows = []
    try:
        for label, settings in THROUGHPUT:
            spent.update(update=0.0, reference=0.0)
            cfg = ppo.PPOConfig(
                env="release", total_timesteps=timesteps, eval_every=0, checkpoint_every=0,
                eval_episodes=0, **settings,
            )  # fmt: skip
            start = time.perf_counter()
            folder = ppo.train(cfg, out, db=False, name=f"throughput__{len(rows)}")
            wall = time.perf_counter() - start
            steps = MaskablePPO.load(folder / "model.zip", device="cpu").num_timesteps
            rows.append({"label": label, **settings, "steps": steps, "wall": wall, **spent})
            print(row(rows[-1]), flush=True)
    finally:
        MaskablePPO.train, ppo.reference_calls = update, reference
    return rows


THROUGHPUT_HEAD = (
    "| path | n_envs | n_steps | batch | epochs | steps/s | update us/sample | update ceiling "
    "steps/s | update share | reference share |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def row(r: dict) -> str:
    """One markdown row of the throughput table."""
    per = r["update"] / r["steps"]
    return (
        f"| {r['label']} | {r['n_envs']} | {r['n_steps']} | {r['batch_size']} | "
        f"{r.get('n_epochs', 10)} | {r['steps'] / r['wall']:,.0f} | {1e6 * per:.0f} | "
        f"{1 / per:,.0f} | {r['update'] / r['wall']:.0%} | {r['reference'] / r['wall']:.0%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--timesteps", type=int, default=None, help="Per run (300,000; 100,000 with --throughput)."
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=sorted(RUNS))
    parser.add_argument(
        "--out", type=Path, default=None, help="Runs go here (default: a temp dir)."
    )
    parser.add_argument("--json", type=Path, default=None, help="Also write the numbers here.")
    parser.add_argument(
        "--throughput", action="store_true", help="Measure training throughput on release."
    )
    args = parser.parse_args()
    args.timesteps = args.timesteps or (100_000 if args.throughput else 300_000)
    args.out = args.out or Path(tempfile.mkdtemp(prefix="opsgym-ppo-"))
    args.db = str(args.out / "ppo.sqlite")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}; "
        f"opsgym {opsgym.__version__}; runs in {args.out}\n"
    )
    if args.throughput:
        print(THROUGHPUT_HEAD, flush=True)
        rows = throughput(args.timesteps, args.out)
        print(f"\nload average after: {os.getloadavg()[0]:.1f}")
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return
    results = {}
    for env in [args.only] if args.only else list(RUNS):
        walls, policies = {}, {}
        for label, flags in RUNS[env]:
            name = f"{env}__{label.replace(', ', '_').replace(' ', '-')}__{args.seed}"
            folder, walls[label] = train(env, flags, args, name)
            policies[label] = f"ppo:{folder / 'model.zip'}"
            print(f"{env}: {label}: {args.timesteps} steps in {walls[label]:.0f} s", flush=True)
        names = [*BASELINES, *policies.values()]
        result = evaluate(env, names, episodes=EPISODES[env], db=args.db)
        by_name = {s["policy"]: s for s in result.summary}
        rows = [(p, by_name[p]) for p in BASELINES]
        rows += [(label, by_name[p]) for label, p in policies.items()]
        print(f"\n### {env} (mixed, test split, {EPISODES[env]} episodes per policy)\n")
        print(table(env, rows, walls))
        results[env] = {"walls": walls, "summary": result.summary}
        if env == "release":
            print("\nrelease target: deployed_verified where v2 can ship (>= 90%), safe (>= 95%)\n")
            for label, s in rows:
                can, done = shipped(args.db, result.name, s["policy"])
                rates = {k: v["value"] for k, v in s["outcomes"].items()}
                safe = sum(rates.get(o, 0.0) for o in spec(env).safe_outcomes)
                print(f"* {label}: shipped {done}/{can} = {done / can:.1%}; safe {safe:.1%}")
                results[env].setdefault("target", {})[label] = [done, can, safe]
        print(flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
