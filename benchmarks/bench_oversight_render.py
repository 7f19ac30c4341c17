"""Oversight steps with the observation rendered as an LLM prompt.

What a tool-calling agent loop costs apart from the model: ``Episode.step`` (parsing,
validation, the world, the record) and then ``prompt.render(episode.observe(), episode.tools)``
for the next turn. The source system managed 1,398 steps/s with its JSON observation rendered.
Action choice (uniform over the legal catalogue calls) and resets are outside the timer.
``benchmarks/run.py`` adds these rows to its table (CartPole-v1 measured in the same run).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import opsgym
from opsgym.envs.oversight.prompt import render
from opsgym.registry import catalogue, legal_actions, specs

clock = time.perf_counter


def prompt_steps(steps: int, seed: int, render_only: bool = False) -> float:
    """Steps per second of step + render (or of render alone) over random legal calls."""
    calls = [(tool.name, args.model_dump()) for tool, args in catalogue("oversight")]
    families = [s.name for s in specs()["oversight"].scenarios]
    rng = np.random.default_rng(seed)
    episode, elapsed, done = None, 0.0, 0
    while done < steps:
        if episode is None or episode.done:
            episode = opsgym.make("oversight", families[done % len(families)], seed + done)
        name, args = calls[int(rng.choice(legal_actions(episode) or [len(calls) - 1]))]
        if render_only:
            episode.step(name, args)
            t0 = clock()
            render(episode.observe(), episode.tools)
        else:
            t0 = clock()
            episode.step(name, args)
            render(episode.observe(), episode.tools)
        elapsed += clock() - t0
        done += 1
    return steps / elapsed


def rows(repeats: int, steps: int = 20000) -> list[dict]:
    """Rows for ``benchmarks/run.py``: step + prompt, and the prompt alone."""
    both = statistics.median(prompt_steps(steps, i) for i in range(repeats))
    alone = statistics.median(prompt_steps(steps, i, render_only=True) for i in range(repeats))
    return [
        {"env": "oversight", "face": "core + prompt", "steps_per_s": both},
        {"env": "oversight", "face": "prompt only", "steps_per_s": alone},
    ]
