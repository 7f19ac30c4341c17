"""The leak test of the Gym face (``tests/test_all_envs.py``), on every world's batched twin:
each hidden fact of ``mixed`` forced both ways, the same random valid calls short of any that may
reveal it, and every lane's observations and masks are the same up to the end of its episode.

The twins are proven bit-identical to the scalar worlds (``tests/test_vector_*.py``), which the
scalar leak test covers; this checks the lanes directly, so that a twin's own shortcut (a fact
read where the scalar world reads a report) cannot hide behind an identity test that happens
not to reach it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import opsgym
from opsgym.core.registry import catalogue
from opsgym.vector import FleetVectorEnv, OversightVectorEnv, ReleaseVectorEnv

TWINS = {"release": ReleaseVectorEnv, "oversight": OversightVectorEnv, "fleet": FleetVectorEnv}
LANES, STEPS = 8, 40


def _facts() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (world, fact, values)
        for world in TWINS
        for fact, values in opsgym.hidden_facts(world, "mixed").items()
    ]


@pytest.mark.parametrize(("world", "fact", "values"), _facts())
def test_the_batched_face_tells_no_hidden_fact_before_a_revealing_tool(world, fact, values):
    calls = [tool.name for tool, _ in catalogue(world)]
    allowed = np.array([i for i, name in enumerate(calls) if name not in values["revealed_by"]])
    seen = []
    for value in values["values"]:
        env = TWINS[world](LANES, scenario="mixed", split="test", overrides={fact: value})
        obs, _ = env.reset(seed=0)
        trace, running = [(obs.copy(), env.action_masks().copy())], np.ones(LANES, bool)
        draws = np.random.default_rng(3)  # the same calls for every value
        for _ in range(STEPS):
            masks = env.action_masks()
            # a random call among the valid, non-revealing ones (any, where none is valid)
            action = np.empty(LANES, dtype=np.int64)
            for lane in range(LANES):
                usable = allowed[masks[lane, allowed]]
                action[lane] = draws.choice(usable if usable.size else allowed)
            obs, _, terminated, truncated, _ = env.step(action)
            trace.append((np.where(running[:, None], obs, 0), masks & running[:, None]))
            running &= ~(terminated | truncated)
        seen.append(trace)
    for other in seen[1:]:
        for t, ((obs, masks), (obs_b, masks_b)) in enumerate(zip(seen[0], other, strict=True)):
            assert np.array_equal(masks, masks_b), (world, fact, t, "mask")
            assert np.array_equal(obs, obs_b), (world, fact, t, "observation")
