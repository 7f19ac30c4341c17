"""A long stored episode for the episode viewer's tests: 2,000 steps, so that the timeline must
virtualise (the workbench keeps at most 100 of its rows in the DOM).

No world ends on its own before 2,000 steps except oversight, whose budget is the request's
``max_steps``: there an agent stuck in a loop, reading the same ticket again after its evidence
actions run out, is refused every time and never decides, until the budget ends the episode
(``no_decision``). The record is honest: it replays and matches.
"""

from __future__ import annotations

from pathlib import Path

from opsgym.core.request import EpisodeRequest
from opsgym.store import open_store

LONG_STEPS = 2000
LONG_POLICY = "e2e-stuck"
"""The policy name the long episode is stored under (a bench finds it by this filter)."""


def seed_long(db: str | Path, steps: int = LONG_STEPS) -> int:
    """Play and store the long episode in ``db``; return its id."""
    episode = EpisodeRequest(
        env="oversight", scenario="mixed", seed=9, split="test", max_steps=steps
    ).start()
    while not episode.done:
        episode.step("inspect_ticket", {"slot": 0})
    with open_store(db) as store:
        return store.add_episode(episode.record(), policy=LONG_POLICY, split="test")
