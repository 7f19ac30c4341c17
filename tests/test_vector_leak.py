"""The leak test on every world's batched twin (``opsgym.audit.lanes``, a row of the audit's
leak section): each hidden fact of ``mixed`` forced both ways, the same random valid calls short
of any that may reveal it, and every lane's observations and masks are the same up to the end
of its episode. And the check can fail: a twin made to leak one fact is caught.
"""

from __future__ import annotations

import pytest

from opsgym.audit.lanes import lane_leaks
from opsgym.vector import ReleaseVectorEnv


@pytest.mark.parametrize("world", ["release", "oversight", "fleet"])
def test_the_batched_face_tells_no_hidden_fact_before_a_revealing_tool(world):
    facts, leaks = lane_leaks(world)
    assert facts >= 5
    assert leaks == []


class _Leaky(ReleaseVectorEnv):
    """Release's lanes with ``v2_broken`` added to the first observation column."""

    def __init__(self, *args, overrides=None, **kwargs):
        super().__init__(*args, overrides=overrides, **kwargs)
        self.bit = float(bool((overrides or {}).get("v2_broken")))

    def step(self, actions):
        obs, *rest = super().step(actions)
        obs = obs.copy()
        obs[:, 0] += self.bit
        return (obs, *rest)


def test_a_twin_that_leaks_a_fact_is_caught_at_the_first_step():
    _, leaks = lane_leaks("release", env=_Leaky)
    assert [(leak.fact, leak.step, leak.channel) for leak in leaks] == [
        ("v2_broken", 1, "observation")
    ]
