"""Shared helpers for the test suite."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

import opsgym
from opsgym.core.registry import catalogue, legal_actions


def playable(
    env: str, scenario: str | None, seed: int, families: Iterable[Any] = ()
) -> int:
    """``seed``, or the dev or test seed of its ten (8 for an even seed, 9 for an odd one) where
    the episode request refuses it: a held-out family (the scenario, or any of ``families`` a
    ``mixed`` episode is forced to) never meets a train seed. Tests that sweep seeds use it.
    """
    spec = opsgym.core.registry.spec(env)
    names = {s.name for s in spec.scenarios}
    asked = [scenario, *(f for f in families if isinstance(f, str) and f in names)]
    held = any(spec.scenario(name).held_out for name in asked if name is None or name in names)
    if not held or opsgym.split_of(seed) != "train":
        return seed
    return seed - seed % 10 + (8 if seed % 2 == 0 else 9)


def make_playable(env: str, scenario: str | None, seed: int, **kwargs: Any) -> opsgym.Episode:
    """``opsgym.make`` on :func:`playable`'s seed (a forced ``family`` counted)."""
    family = (kwargs.get("overrides") or {}).get("family")
    return opsgym.make(env, scenario, playable(env, scenario, seed, [family]), **kwargs)


def random_valid_rollout(
    env: str, scenario: str | None, seed: int, steps: int, action_seed: int = 0
) -> opsgym.Episode:
    """Play ``steps`` uniformly drawn legal catalogue actions (or to the end)."""
    ep = make_playable(env, scenario, seed)
    rng = np.random.default_rng(action_seed)
    table = catalogue(env)
    for _ in range(steps):
        if ep.done:
            break
        legal = legal_actions(ep) or [len(table) - 1]
        tool, args = table[int(rng.choice(legal))]
        ep.step(tool.name, args.model_dump())
    return ep


def world_state(ep: opsgym.Episode) -> dict[str, Any]:
    """Everything about the world that a rejected call must leave alone."""
    w = ep.world
    return {
        "truth": w.truth(),
        "observe": w.observe(),
        "clock": w.clock,
        "rng": w.rng.bit_generator.state,
        "ended": w.ended,
    }


def lie_counts(ep: opsgym.Episode, kind: str) -> dict[str, int]:
    """Lies of ``kind`` told, trusted and reconciled so far in ``ep``."""
    return ep.world.lies.summary()["by_kind"].get(kind, {"told": 0, "trusted": 0, "reconciled": 0})


def measure_lies(
    env: str, name: str, seeds: list[int], kinds: Any, config: dict[str, Any] | None = None
) -> tuple[Counter, dict[str, Counter]]:
    """Lies told, trusted and reconciled by policy ``name`` over ``mixed`` episodes of
    ``seeds``, in all and per kind."""
    from opsgym.agents import get_policy, play

    total: Counter = Counter()
    by_kind: dict[str, Counter] = {k: Counter() for k in kinds}
    for seed in seeds:
        ep = opsgym.make(env, "mixed", seed, config=config)
        summary = play(ep, get_policy(env, name)).world.lies.summary()
        total.update({k: summary[k] for k in ("told", "trusted", "reconciled")})
        for kind, counts in summary["by_kind"].items():
            by_kind[kind].update(counts)
    return total, by_kind
