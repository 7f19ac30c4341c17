"""Speed of every environment, against Gymnasium's CartPole-v1 measured in the same run.

For each registered env: steps/s through the core (``Episode.step`` with full validation),
steps/s through the Gym face (``env.step`` on random valid actions chosen from
``action_masks()``), and reset cost. Each figure is the median of ``--repeats`` runs; only the
call being measured is inside the timer (action choice and resets are outside), and the same
is done for CartPole, so the ratios compare like with like.

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
from opsgym.registry import specs

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


def median(fn, repeats: int):
    results = [fn(i) for i in range(repeats)]
    if isinstance(results[0], tuple):
        return tuple(statistics.median(r[k] for r in results) for k in range(len(results[0])))
    return statistics.median(results)


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

    cart_sps, cart_reset = median(
        lambda i: gym_steps("CartPole-v1", args.steps, i, False), args.repeats
    )
    rows = [
        {
            "env": "CartPole-v1",
            "face": "gym",
            "steps_per_s": cart_sps,
            "reset_us": cart_reset * 1e6,
            "step_time_vs_cartpole": 1.0,
        }
    ]
    for name, spec in specs().items():
        if args.only and name != args.only:
            continue
        sps, reset = median(
            lambda i, gym_id=spec.gym_id: gym_steps(gym_id, args.steps, i, True), args.repeats
        )
        core = median(lambda i, env=name: core_steps(env, args.steps, i), args.repeats)
        rows.append(
            {
                "env": name,
                "face": "gym",
                "steps_per_s": sps,
                "reset_us": reset * 1e6,
                "step_time_vs_cartpole": cart_sps / sps,
                "reset_time_vs_cartpole": reset / cart_reset,
            }
        )
        rows.append(
            {
                "env": name,
                "face": "core",
                "steps_per_s": core,
                "step_time_vs_cartpole": cart_sps / core,
            }
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
