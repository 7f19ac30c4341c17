"""What the batched twins' tests share: a twin against Gymnasium's sync vector env over the
scalar Gym face, lane by lane, autoresets included."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from opsgym.core.registry import spec
from opsgym.vector import BatchedVectorEnv


def sync_and_batched(
    world: str,
    n: int,
    seed: int,
    steps: int,
    wrappers: Sequence[type[gym.Wrapper]] = (),
    **kwargs: Any,
) -> None:
    """``gym.make_vec(..., "sync")`` over ``world``'s scalar face (through ``wrappers``) and its
    batch, the same random valid actions, every result compared (autoresets included).
    """
    sync = gym.make_vec(
        spec(world).gym_id, n, vectorization_mode="sync", wrappers=list(wrappers), **kwargs
    )
    ours = BatchedVectorEnv(n, env=world, **kwargs)
    rng = np.random.default_rng(seed)
    a, _ = sync.reset(seed=seed)
    b, _ = ours.reset(seed=seed)
    ends = 0
    for t in range(steps):
        masks = np.stack(sync.call("action_masks"))
        assert np.array_equal(a, b) and np.array_equal(masks, ours.action_masks()), t
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        *a_out, _ = sync.step(actions)
        *b_out, _ = ours.step(actions)
        a, b = a_out[0], b_out[0]
        for x, y in zip(a_out, b_out, strict=True):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), t
        ends += int(np.sum(a_out[2] | a_out[3]))
    assert ends > n  # every lane autoreset at least once, on average
