"""Shared helpers for the test suite."""

from __future__ import annotations

from typing import Any

import numpy as np

import opsgym
from opsgym.registry import catalogue, legal_actions


def random_valid_rollout(
    env: str, scenario: str | None, seed: int, steps: int, action_seed: int = 0
) -> opsgym.Episode:
    """Play ``steps`` uniformly drawn legal catalogue actions (or to the end)."""
    ep = opsgym.make(env, scenario, seed)
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
