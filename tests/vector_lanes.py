"""What the batched twins' tests share: an episode recorded on the scalar Gym face
(:func:`record`), its actions fed to a lane and every result compared (:func:`replay`), and a
twin against Gymnasium's sync vector env over the scalar face (:func:`sync_and_batched`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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


@dataclass
class Played:
    """One episode as ``gym.make(...)`` played it, and the reset that followed it."""

    seed: int
    actions: list[int] = field(default_factory=list)
    obs: list[np.ndarray] = field(default_factory=list)  # obs[t]: before action t
    masks: list[np.ndarray] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    episode_seed: int = 0
    outcome: str | None = None
    ret: float = 0.0
    next_obs: np.ndarray | None = None
    next_mask: np.ndarray | None = None
    next_seed: int = 0


Choose = Callable[[Any, np.ndarray, np.random.Generator, int], int]
"""An actor: ``(the unwrapped env, its mask, a generator seeded from the seed, the step) ->
the catalogue index to play``."""


def record(world: str, seed: int, choose: Choose, **kwargs: Any) -> Played:
    """Play one episode of ``world`` on the scalar Gym face with ``choose``, then reset once."""
    env = gym.make(spec(world).gym_id, **kwargs)
    obs, info = env.reset(seed=seed)
    ops = env.unwrapped
    assert "seed" not in info  # the agent is not told the episode's seed
    played = Played(seed)
    rng = np.random.default_rng([7, seed])
    while True:
        mask = ops.action_masks()
        played.obs.append(obs)
        played.masks.append(mask)
        action = choose(ops, mask, rng, len(played.actions))
        obs, reward, terminated, truncated, info = env.step(action)
        played.actions.append(action)
        played.rewards.append(reward)
        played.terminated.append(terminated)
        played.truncated.append(truncated)
        if terminated or truncated:
            played.obs.append(obs)
            played.masks.append(ops.action_masks())
            played.outcome = info.get("outcome")
            assert "seed" not in info
            played.episode_seed = ops.episode.seed  # the harness's view, after the end
            played.ret = ops.episode.total_reward
            break
    played.next_obs, info = env.reset()
    assert "seed" not in info
    played.next_mask, played.next_seed = ops.action_masks(), ops.episode.seed
    return played


def same(lane: int, played: Played, t: int, what: str, ours: Any, theirs: Any) -> None:
    """Fail with the first difference, its lane, seed and step, and both values."""
    ours_a, theirs_a = np.asarray(ours), np.asarray(theirs)
    if ours_a.dtype != theirs_a.dtype and not (ours_a.dtype.kind == theirs_a.dtype.kind == "f"):
        ours_a = ours_a.astype(theirs_a.dtype)
    if ours_a.shape != theirs_a.shape or ours_a.tobytes() != theirs_a.tobytes():
        detail = ""
        if ours_a.shape == theirs_a.shape and ours_a.ndim == 1:
            detail = f" at {np.flatnonzero(ours_a != theirs_a).tolist()}"
        raise AssertionError(
            f"lane {lane} (seed {played.seed}) step {t}: {what} differs{detail}: batch "
            f"{ours!r}, scalar {theirs!r}"
        )


def replay(venv: BatchedVectorEnv, runs: list[Played]) -> int:
    """Feed each lane its scalar episode's actions and check everything it returns, through
    the episode and at the autoreset that follows it (NEXT_STEP); returns the lane-steps
    compared.
    """
    obs, info = venv.reset(seed=[r.seed for r in runs])
    masks = venv.action_masks()
    assert "seed" not in info  # no lane is told its seed before its episode ends
    for i, r in enumerate(runs):
        same(i, r, 0, "episode seed", venv.world.seeds[i], r.episode_seed)
        same(i, r, 0, "observation", obs[i], r.obs[0])
        same(i, r, 0, "mask", masks[i], r.masks[0])
    for t in range(max(len(r.actions) for r in runs) + 1):
        actions = np.array([r.actions[t] if t < len(r.actions) else 0 for r in runs])
        obs, reward, terminated, truncated, info = venv.step(actions)
        masks = venv.action_masks()
        for i, r in enumerate(runs):
            if t < len(r.actions):
                same(i, r, t + 1, "observation", obs[i], r.obs[t + 1])
                same(i, r, t + 1, "mask", masks[i], r.masks[t + 1])
                same(i, r, t + 1, "reward", reward[i], np.float64(r.rewards[t]))
                same(i, r, t + 1, "terminated", terminated[i], r.terminated[t])
                same(i, r, t + 1, "truncated", truncated[i], r.truncated[t])
                if t == len(r.actions) - 1:
                    same(i, r, t + 1, "outcome", info["outcome"][i], r.outcome)
                    same(i, r, t + 1, "return", info["return"][i], np.float64(r.ret))
                    same(i, r, t + 1, "seed at the end", info["seed"][i], r.episode_seed)
                else:
                    assert not info.get("_seed", np.zeros(len(runs), bool))[i]
            elif t == len(r.actions):  # the autoreset step: the lane's next episode begins
                same(i, r, t + 1, "next observation", obs[i], r.next_obs)
                same(i, r, t + 1, "next mask", masks[i], r.next_mask)
                same(i, r, t + 1, "next episode seed", venv.world.seeds[i], r.next_seed)
                assert not info.get("_seed", np.zeros(len(runs), bool))[i]
                same(i, r, t + 1, "autoreset reward", reward[i], 0.0)
                assert not terminated[i] and not truncated[i]
    return sum(len(r.actions) + 1 for r in runs)
