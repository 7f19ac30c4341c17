"""The loop every step benchmark shares: random legal catalogue calls over rotating scenarios."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

import opsgym
from opsgym.core.episode import Episode
from opsgym.core.registry import catalogue, legal_actions

clock = time.perf_counter

Measure = Callable[[Episode, str, dict], float]
"""Carries out one call on the episode and returns the seconds that count."""


def timed_step(episode: Episode, name: str, args: dict) -> float:
    """The default measure: ``Episode.step`` alone."""
    t0 = clock()
    episode.step(name, args)
    return clock() - t0


def random_legal_steps(
    env: str, scenarios: Sequence[str], steps: int, seed: int, measure: Measure = timed_step
) -> float:
    """Steps per second over ``steps`` uniformly drawn legal calls; choice and resets untimed."""
    calls = [(tool.name, args.model_dump()) for tool, args in catalogue(env)]
    rng = np.random.default_rng(seed)
    # Test seeds: every family, held-out ones included, may be played on them (not on train).
    fresh = iter(opsgym.seeds("test", steps + 1, start=seed))
    episode, elapsed, done = None, 0.0, 0
    while done < steps:
        if episode is None or episode.done:
            episode = opsgym.make(env, scenarios[done % len(scenarios)], next(fresh))
        name, args = calls[int(rng.choice(legal_actions(episode) or [len(calls) - 1]))]
        elapsed += measure(episode, name, args)
        done += 1
    return steps / elapsed
