"""Speed of the batched worlds, beside their physical references, in one run.

Rows, for each world (``--worlds``, release, oversight and fleet by default; env steps per
second, a vector step of N lanes counting N, autoreset steps included, as Gymnasium counts
them):

* ``<world> batched``: ``BatchedVectorEnv(N, env=world, scenario="mixed")`` (``copy=False``),
  random valid actions drawn from ``action_masks()`` (the draw outside the timer, as in
  ``benchmarks/run.py``; the figure with it is printed too);
* ``<world> batched, a Generator per lane``: the same with ``rng="generator"`` (what keeping
  the scalar world's per-lane Generators costs);
* ``bare NumPy loop``: as many array operations as one batched step of that world makes
  (counted), each an add of two float64 arrays of N, in a Python loop: the floor for this
  design in NumPy;
* ``<world> scalar Gym face``: one ``gym.make(world's Gym id)``, random valid actions;

and once ``CartPole sync``: ``gym.make_vec("CartPole-v1", N, vectorization_mode="sync")``.

Each figure is the best of ``--repeats`` runs (the machine is shared: the best is the least
disturbed). ``--profile`` adds where a batched step spends its time and its operations.

    python benchmarks/vector.py [--lanes 4096] [--steps 300] [--repeats 3] [--profile]
        [--worlds release oversight fleet]
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np

import opsgym  # noqa: F401  (registers the Gym ids)
from opsgym.core.registry import spec
from opsgym.vector import BatchedVectorEnv
from opsgym.vector import release as batched
from opsgym.vector._starts import StartQueue
from opsgym.vector.env import make_batch

PARTS = {
    "release": ["_encode", "_inspect", "_health", "_traffic", "_verify", "_judge", "_advance"]
    + ["_draw", "_probe", "_safe", "_commit", "_write_schema", "_green_ok", "_calm"],
    "oversight": ["_encode", "_inspect", "_approve", "_block", "_land", "_arrive", "_propose"]
    + ["_open_phase", "_reveal", "_judge", "_earliest_ship", "_careful_ship"],
    "fleet": ["_encode", "_masks", "_implicate", "_draw", "_capture", "_advance", "_status"]
    + ["_telemetry", "_render", "_nccl", "_kernel", "_flight", "_delegate", "_coalition"]
    + ["_restart_rank", "_drain", "_reschedule", "_reach", "_judge"],
}
"""The methods ``--profile`` times, by world."""

clock = time.perf_counter


def sample(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly drawn valid action per lane."""
    counts = masks.cumsum(axis=1)
    pick = (rng.random(len(masks)) * counts[:, -1]).astype(np.int64)
    return (counts > pick[:, None]).argmax(axis=1)


def batched_steps(
    lanes: int, steps: int, rng_backend: str = "pcg", world: str = "release"
) -> tuple[float, float]:
    """(env steps/s timing ``step`` alone, env steps/s with the action draw)."""
    env = BatchedVectorEnv(lanes, world, scenario="mixed", rng=rng_backend, copy=False)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):  # warm up: the first resets fill the start queues
        env.step(sample(rng, env.world.mask))
    stepping = drawing = 0.0
    for _ in range(steps):
        t0 = clock()
        actions = sample(rng, env.world.mask)
        t1 = clock()
        env.step(actions)
        t2 = clock()
        drawing += t1 - t0
        stepping += t2 - t1
    return lanes * steps / stepping, lanes * steps / (stepping + drawing)


class _Counted(np.ndarray):
    """An array that counts the NumPy operations made on it and on what comes from it."""

    count = 0

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _Counted.count += 1
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        _Counted.count += 1
        return _wrap(func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}))

    def __getitem__(self, key: Any) -> Any:
        if _fancy(key):
            _Counted.count += 1
        return _wrap(np.ndarray.__getitem__(self.view(np.ndarray), _plain(key)))

    def __setitem__(self, key: Any, value: Any) -> None:
        _Counted.count += 1
        np.ndarray.__setitem__(self.view(np.ndarray), _plain(key), _plain(value))


def _plain(x: Any) -> Any:
    if isinstance(x, _Counted):
        return x.view(np.ndarray)
    if isinstance(x, list | tuple):
        return type(x)(_plain(y) for y in x)
    return x


def _wrap(x: Any) -> Any:
    return x.view(_Counted) if isinstance(x, np.ndarray) and x.ndim else x


def _fancy(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray | list) for k in keys)


def operations_per_step(lanes: int, steps: int = 40, env: str = "release") -> float:
    """How many NumPy operations one batched step makes (ufuncs, array functions, fancy
    indexing and assignments), counted on a running batch.
    """
    world = make_batch(lanes, env, scenario="mixed")
    world.seed(list(range(lanes)))
    world.reset()
    rng = np.random.default_rng(0)
    for _ in range(20):
        done = world.done.copy()
        world.reset(done, encode=False)
        world.step(sample(rng, world.mask), active=~done)
    for holder in (world, world._queue, world._streams):  # every array, seen through a counter
        for name, value in vars(holder).items():
            if isinstance(value, np.ndarray):
                setattr(holder, name, value.view(_Counted))
            elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
                setattr(holder, name, [v.view(_Counted) for v in value])
    _Counted.count = 0
    for _ in range(steps):
        done = world.done.copy()
        actions = sample(rng, world.mask.view(np.ndarray))
        world.reset(np.flatnonzero(done), encode=False)
        world.step(actions.view(_Counted), active=~done)
    return _Counted.count / steps


def bare_loop(lanes: int, operations: int, steps: int) -> float:
    """Env steps/s of a Python loop making ``operations`` adds of float64 arrays of ``lanes``
    per step.
    """
    x, y, z = np.ones(lanes), np.ones(lanes), np.empty(lanes)
    ops = int(round(operations))
    t0 = clock()
    for _ in range(steps):
        for _ in range(ops):
            np.add(x, y, out=z)
    return lanes * steps / (clock() - t0)


def cartpole_sync(lanes: int, steps: int) -> float:
    """Env steps/s of Gymnasium's CartPole sync vector env (random actions, outside the timer)."""
    env = gym.make_vec("CartPole-v1", lanes, vectorization_mode="sync")
    env.reset(seed=0)
    env.action_space.seed(0)
    elapsed = 0.0
    for _ in range(steps):
        actions = env.action_space.sample()
        t0 = clock()
        env.step(actions)
        elapsed += clock() - t0
    return lanes * steps / elapsed


def scalar_face(steps: int, world: str = "release") -> float:
    """Steps/s of a world's scalar Gym face (random valid actions, outside the timer)."""
    env = gym.make(spec(world).gym_id, scenario="mixed")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    elapsed = 0.0
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        t0 = clock()
        _, _, terminated, truncated, _ = env.step(action)
        elapsed += clock() - t0
        if terminated or truncated:
            env.reset()
    return steps / elapsed


def profile(lanes: int, steps: int, env: str = "release") -> dict[str, float]:
    """Milliseconds per step in each part of a batched step (the parts are timed in place)."""
    world = make_batch(lanes, env, scenario="mixed")
    world.seed(list(range(lanes)))
    world.reset()
    spent: dict[str, float] = collections.defaultdict(float)
    klass = type(world)
    originals = {name: getattr(klass, name) for name in PARTS[env]}

    def timed(name: str, method: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[name] += clock() - t0

        return run

    queue = StartQueue
    refill, pop = queue._refill, queue.pop
    try:
        for name, method in originals.items():
            setattr(klass, name, timed(name, method))
        queue._refill = timed("rng: start queue refill", refill)
        queue.pop = timed("rng: start queue pop", pop)
        rng = np.random.default_rng(0)
        for _ in range(steps):
            done = world.done.copy()
            actions = sample(rng, world.mask)
            t0 = clock()
            world.reset(done, encode=False)
            t1 = clock()
            world.step(actions, active=~done)
            spent["reset (all)"] += t1 - t0
            spent["step (all)"] += clock() - t1
    finally:
        for name, method in originals.items():
            setattr(klass, name, method)
        queue._refill, queue.pop = refill, pop
    out = {name: 1e3 * s / steps for name, s in spent.items()}
    if "_draw" in out:
        label = {"release": "probe and verify draws", "fleet": "the draws reports read"}[env]
        out[f"rng: {label}"] = out.pop("_draw")
    return out


def keyed_draws(lanes: int, steps: int) -> float:
    """Milliseconds a step that draws by key would spend on randomness (the RNG reshape the
    module docstring weighs): a splitmix64 hash of (episode seed, purpose, index) for the 18
    numbers of each reset and the numbers of the lanes that read a probe's or verify's draw,
    as many as a batched step of ``lanes`` has (measured on a running batch).
    """
    world = batched.ReleaseBatch(lanes, "mixed")
    world.seed(list(range(lanes)))
    world.reset()
    rng = np.random.default_rng(0)
    resets = reads = 0
    for _ in range(steps):
        done = world.done.copy()
        world.reset(done, encode=False)
        actions = sample(rng, world.mask)
        reads += int(np.sum(world.looping & ((actions == 3) | (actions == 6)) & ~done))
        resets += int(done.sum())
        world.step(actions, active=~done)
    per_step_resets, per_step_reads = resets // steps, max(reads // steps, 1)
    seeds = np.arange(per_step_resets, dtype=np.uint64)[:, None]
    index = np.arange(18, dtype=np.uint64)[None, :]
    other = np.arange(per_step_reads, dtype=np.uint64)

    def splitmix(x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            z = x * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return ((z ^ (z >> np.uint64(31))) >> np.uint64(11)) * (1.0 / 2**53)

    t0 = clock()
    for _ in range(steps):
        splitmix((seeds << np.uint64(8)) ^ index)  # the reset draws of the resetting lanes
        splitmix((other << np.uint64(16)) ^ np.uint64(7))  # the draws a report reads
    return 1e3 * (clock() - t0) / steps


def main() -> None:
    """Measure and print every row."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worlds", nargs="+", default=["release", "oversight", "fleet"])
    args = parser.parse_args()
    n, steps = args.lanes, args.steps
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load {load:.1f}, python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"gymnasium {gym.__version__}; N = {n}, best of {args.repeats}"
    )
    ops = {world: operations_per_step(n, env=world) for world in args.worlds}
    rows: dict[str, float] = {}
    for _ in range(args.repeats):
        cases = {"CartPole-v1 make_vec sync": cartpole_sync(n, max(steps // 30, 5))}
        for world in args.worlds:
            alone, drawn = batched_steps(n, steps, world=world)
            cases[f"{world} batched (step alone)"] = alone
            cases[f"{world} batched (with the action draw)"] = drawn
            cases[f"{world} batched, a Generator per lane"] = batched_steps(
                n, steps // 3, "generator", world
            )[0]
            cases[f"bare NumPy loop ({ops[world]:.0f} array ops: a {world} step)"] = bare_loop(
                n, ops[world], steps // 3
            )
            cases[f"{world} scalar Gym face"] = scalar_face(3000, world)
        for name, value in cases.items():
            rows[name] = max(rows.get(name, 0.0), value)
    cart = rows["CartPole-v1 make_vec sync"]
    for name, value in rows.items():
        print(f"{name:52s} {value:14,.0f} steps/s  {value / cart:8.1f}x CartPole sync")
    if args.profile:
        for world in args.worlds:
            print(
                f"\n# where a batched {world} step goes (ms per step of {n} lanes; parts overlap)"
            )
            for name, ms in sorted(profile(n, steps, world).items(), key=lambda kv: -kv[1]):
                print(f"{name:32s} {ms:7.3f}")
            if world == "release":
                print(f"{'rng keyed by (seed, purpose, index)':32s} {keyed_draws(n, steps):7.3f}")


if __name__ == "__main__":
    main()
