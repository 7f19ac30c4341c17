"""Speed of every environment, against Gymnasium's CartPole-v1 measured in the same run.

For each registered env: steps/s through the core (``Episode.step`` with full validation),
steps/s through the Gym face (``env.step`` on random valid actions chosen from
``action_masks()``), and reset cost. Each figure is the median of ``--repeats`` runs; only the
call being measured is inside the timer (action choice and resets are outside), and the same
is done for CartPole, so the ratios compare like with like. Every repeat of an environment
follows a CartPole run of its own and its ratios are the medians of those pairs' ratios (the
machine's speed drifts); the plug-in rows are compared with CartPole's overall median.

Any ``benchmarks/bench_*.py`` that defines ``rows(repeats) -> list[dict]`` adds its own rows.

    python benchmarks/run.py [--steps 20000] [--repeats 5] [--only ENV] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import opsgym
from opsgym.core.registry import specs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _loop import clock, random_legal_steps  # noqa: E402


def gym_steps(env_id: str, steps: int, seed: int, masked: bool, **kwargs) -> tuple[float, float]:
    """(steps per second, mean reset seconds) for ``steps`` random steps."""
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    stepping = resetting = 0.0
    resets = 0
    n_actions = env.action_space.n
    for _ in range(steps):
        if masked:
            action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        else:
            action = int(rng.integers(n_actions))
        t0 = clock()
        _, _, terminated, truncated, _ = env.step(action)
        stepping += clock() - t0
        if terminated or truncated:
            t0 = clock()
            env.reset()
            resetting += clock() - t0
            resets += 1
    return steps / stepping, resetting / max(resets, 1)


def core_steps(env: str, steps: int, seed: int) -> float:
    """Steps per second through ``Episode.step`` (parsing, validation, recording)."""
    return random_legal_steps(env, [s.name for s in specs()[env].scenarios], steps, seed)


def extra_rows(repeats: int, only: str | None = None) -> list[dict]:
    rows = []
    for path in sorted(HERE.glob(f"bench_{only or ''}*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if hasattr(module, "rows"):
            rows.extend(module.rows(repeats))
    return rows


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
        "opsgym": opsgym.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="measure one environment (and CartPole)")
    parser.add_argument("--json", type=Path, default=HERE / "results.json")
    args = parser.parse_args()

    # This machine's speed drifts by a third within a minute, so each environment's repeats
    # are timed right after a CartPole run of their own, and its ratios are the medians of
    # those pairs' ratios (a ratio of medians taken minutes apart would mix moments).
    carts: list[tuple[float, float]] = []

    def cartpole(i: int) -> tuple[float, float]:
        carts.append(gym_steps("CartPole-v1", args.steps, i, False))
        return carts[-1]

    for i in range(args.repeats):  # a warm-up, and more of the baseline for plug-in rows
        cartpole(i)
    rows = []
    for name, spec in specs().items():
        if args.only and name != args.only:
            continue
        runs = []
        for i in range(args.repeats):
            cart, cart_reset_i = cartpole(i)
            sps, reset = gym_steps(spec.gym_id, args.steps, i, True)
            runs.append((cart, cart_reset_i, sps, reset, core_steps(name, args.steps, i)))
        rows.append(
            {
                "env": name,
                "face": "gym",
                "steps_per_s": statistics.median(r[2] for r in runs),
                "reset_us": statistics.median(r[3] for r in runs) * 1e6,
                "step_time_vs_cartpole": statistics.median(r[0] / r[2] for r in runs),
                "reset_time_vs_cartpole": statistics.median(r[3] / r[1] for r in runs),
            }
        )
        rows.append(
            {
                "env": name,
                "face": "core",
                "steps_per_s": statistics.median(r[4] for r in runs),
                "step_time_vs_cartpole": statistics.median(r[0] / r[4] for r in runs),
            }
        )
    cart_sps, cart_reset = (statistics.median(c[k] for c in carts) for k in (0, 1))
    rows.insert(
        0,
        {
            "env": "CartPole-v1",
            "face": "gym",
            "steps_per_s": cart_sps,
            "reset_us": cart_reset * 1e6,
            "step_time_vs_cartpole": 1.0,
        },
    )
    for row in extra_rows(args.repeats, args.only):
        row.setdefault("step_time_vs_cartpole", cart_sps / row["steps_per_s"])
        rows.append(row)

    print(f"machine: {machine()}  steps={args.steps} repeats={args.repeats} (medians)")
    print("| env | face | steps/s | reset (µs) | time per step vs CartPole | reset vs CartPole |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        reset = f"{r['reset_us']:.0f}" if "reset_us" in r else ""
        rr = f"{r['reset_time_vs_cartpole']:.1f}×" if "reset_time_vs_cartpole" in r else ""
        print(
            f"| {r['env']} | {r['face']} | {r['steps_per_s']:,.0f} | {reset} | "
            f"{r['step_time_vs_cartpole']:.2f}× | {rr} |"
        )
    args.json.write_text(
        json.dumps(
            {"machine": machine(), "steps": args.steps, "repeats": args.repeats, "rows": rows},
            indent=1,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
