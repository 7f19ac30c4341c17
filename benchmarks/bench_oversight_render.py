"""Oversight steps with the observation rendered as an LLM prompt.

What a tool-calling agent loop costs apart from the model: ``Episode.step`` (parsing,
validation, the world, the record) and then
``render_messages(episode)`` (the generic renderer, tools included) for the next turn. The source
system managed 1,398 steps/s with its JSON observation rendered. Action choice (uniform over
the legal catalogue calls) and resets are outside the timer.
``benchmarks/run.py`` adds these rows to its table (CartPole-v1 measured in the same run).
"""

from __future__ import annotations

import statistics

from _loop import clock, random_legal_steps
from opsgym.adapters.toolcalls import render_messages
from opsgym.core.registry import specs


def _step_and_render(episode, name: str, args: dict) -> float:
    t0 = clock()
    episode.step(name, args)
    render_messages(episode)
    return clock() - t0


def _render_only(episode, name: str, args: dict) -> float:
    episode.step(name, args)
    t0 = clock()
    render_messages(episode)
    return clock() - t0


def prompt_steps(steps: int, seed: int, render_only: bool = False) -> float:
    """Steps per second of step + render (or of render alone) over random legal calls."""
    families = [s.name for s in specs()["oversight"].scenarios]
    measure = _render_only if render_only else _step_and_render
    return random_legal_steps("oversight", families, steps, seed, measure)


def rows(repeats: int, steps: int = 20000) -> list[dict]:
    """Rows for ``benchmarks/run.py``: step + prompt, and the prompt alone."""
    both = statistics.median(prompt_steps(steps, i) for i in range(repeats))
    alone = statistics.median(prompt_steps(steps, i, render_only=True) for i in range(repeats))
    return [
        {"env": "oversight", "face": "core + prompt", "steps_per_s": both},
        {"env": "oversight", "face": "prompt only", "steps_per_s": alone},
    ]
