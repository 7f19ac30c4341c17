"""Fleet steps as a tool-calling agent loop and as the scripted oracle plays them.

``core + observe``: ``Episode.step`` on random legal catalogue calls, then ``episode.observe()``
(the dict a tool-calling face renders for the next turn; its evidence grows with the episode).
``oracle episodes``: whole episodes of every task, the oracle choosing each call from the
observation, step and observe inside the timer (the oracle's own thinking included), resets
outside. Log text is generated only by the tools that return it, so both rows pay for NCCL
lines, flight-recorder dumps and kernel messages only when those tools are called.
``benchmarks/run.py`` adds these rows to its table (CartPole-v1 measured in the same run).
"""

from __future__ import annotations

import statistics

import opsgym
from _loop import clock, random_legal_steps
from opsgym.agents import get_policy
from opsgym.envs.fleet.scenarios import TASK_NAMES


def _step_and_observe(episode, name: str, args: dict) -> float:
    t0 = clock()
    episode.step(name, args)
    episode.observe()
    return clock() - t0


def observe_steps(steps: int, seed: int) -> float:
    """Steps per second of step + observe over random legal calls, all tasks in turn."""
    return random_legal_steps("fleet", TASK_NAMES, steps, seed, _step_and_observe)


def oracle_steps(steps: int, seed: int) -> float:
    """Steps per second of observe + oracle + step over whole episodes of every task."""
    policy = get_policy("fleet", "oracle")
    episode, elapsed, done = None, 0.0, 0
    while done < steps:
        if episode is None or episode.done:
            episode = opsgym.make("fleet", TASK_NAMES[done % len(TASK_NAMES)], seed + done)
            policy.reset(episode.seed)
        t0 = clock()
        episode.step(*policy.act(episode.observe(), []))
        elapsed += clock() - t0
        done += 1
    return steps / elapsed


def rows(repeats: int, steps: int = 20000) -> list[dict]:
    """Median rows for ``benchmarks/run.py``."""
    found = []
    for face, fn in (("core + observe", observe_steps), ("oracle episodes", oracle_steps)):
        sps = statistics.median(fn(steps, i) for i in range(repeats))
        found.append({"env": "fleet", "face": face, "steps_per_s": sps})
    return found
