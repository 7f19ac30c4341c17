"""The leak test on a world's batched twin (:mod:`opsgym.vector`): the lanes tell no hidden fact
before a tool that may reveal it.

The twins are proven bit-identical to the scalar Gym face, which :mod:`opsgym.audit.leak`
tests; this checks the lanes directly, so that a twin's own shortcut (a fact read where the
scalar world reads a report) cannot hide behind identity tests that happen not to reach it.
For each hidden fact of ``mixed``, one batch per value with the fact forced, all driven by the
same random valid calls short of any tool in the fact's ``revealed_by``; every lane's
observation and mask must be the same in every batch up to the end of its episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opsgym.core.registry import catalogue, hidden_facts
from opsgym.vector.env import WORLDS, BatchedVectorEnv

LANES, STEPS = 8, 40
"""Lanes per batch and calls per lane: enough for every family of ``mixed`` to be drawn."""


@dataclass(frozen=True)
class LaneLeak:
    """Where forcing ``fact`` changed what a lane shows: the step, the lane and the channel."""

    fact: str
    step: int
    lane: int
    channel: str

    def __str__(self) -> str:
        return f"{self.fact}: lane {self.lane}'s {self.channel} differs at step {self.step}"


def has_twin(world: str) -> bool:
    """Whether ``world`` has a batched twin."""
    return world in WORLDS


def lane_leaks(
    world: str, seed: int = 0, env: type[BatchedVectorEnv] | None = None
) -> tuple[int, list[LaneLeak]]:
    """Every hidden fact of ``world``'s ``mixed`` forced both ways on its lanes: how many facts
    were compared, and where any of them showed (the first step of each fact that did).

    Args:
        world: A world with a batched twin.
        seed: The batches' reset seed (lane ``i`` plays seed ``seed + i``) and the calls' seed.
        env: The vector env to test (a planted leak, in the tests); the world's own by default.
    """
    calls = [tool.name for tool, _ in catalogue(world)]
    facts = hidden_facts(world, "mixed")
    found = []
    for fact, values in facts.items():
        allowed = np.array([i for i, name in enumerate(calls) if name not in values["revealed_by"]])
        traces = [_trace(world, env, fact, value, allowed, seed) for value in values["values"]]
        leak = _first_difference(fact, traces)
        if leak is not None:
            found.append(leak)
    return len(facts), found


def _trace(
    world: str,
    env: type[BatchedVectorEnv] | None,
    fact: str,
    value: object,
    allowed: np.ndarray,
    seed: int,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One batch with ``fact`` forced to ``value``: each step's observations and masks (zeros
    for lanes whose episode has ended, as their next episode is not compared).
    """
    kwargs: dict[str, Any] = {"scenario": "mixed", "split": "test", "overrides": {fact: value}}
    lanes = (
        env(LANES, **kwargs) if env is not None else BatchedVectorEnv(LANES, env=world, **kwargs)
    )
    obs, _ = lanes.reset(seed=seed)
    trace = [(obs.copy(), lanes.action_masks().copy())]
    running = np.ones(LANES, bool)
    draws = np.random.default_rng(seed)  # the same calls whatever the value
    for _ in range(STEPS):
        masks = lanes.action_masks()
        action = np.empty(LANES, dtype=np.int64)
        for lane in range(LANES):
            usable = allowed[masks[lane, allowed]]
            action[lane] = draws.choice(usable if usable.size else allowed)
        obs, _, terminated, truncated, _ = lanes.step(action)
        trace.append((np.where(running[:, None], obs, 0), masks & running[:, None]))
        running &= ~(terminated | truncated)
    return trace


def _first_difference(
    fact: str, traces: list[list[tuple[np.ndarray, np.ndarray]]]
) -> LaneLeak | None:
    first = traces[0]
    for other in traces[1:]:
        for step, ((obs, masks), (obs_b, masks_b)) in enumerate(zip(first, other, strict=True)):
            for channel, a, b in (("mask", masks, masks_b), ("observation", obs, obs_b)):
                lanes = np.flatnonzero((a != b).reshape(len(a), -1).any(axis=1))
                if lanes.size:
                    return LaneLeak(fact, step, int(lanes[0]), channel)
    return None
