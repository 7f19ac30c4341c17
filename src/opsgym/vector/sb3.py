"""The batched worlds as a Stable-Baselines3 ``VecEnv`` (needs the ``train`` extra).

``MaskablePPO("MlpPolicy", ReleaseSB3VecEnv(256))`` trains on 256 lanes without a Python env
per lane (``OversightSB3VecEnv`` for oversight, ``FleetSB3VecEnv`` for fleet;
``BatchedSB3VecEnv(n, env=...)`` for any).
It is what ``DummyVecEnv([lambda: gym.make("opsgym/Release-v5", ...)] * n)`` gives SB3, lane
for lane: the same observations, float32 rewards, dones and masks, the episode's
last observation in ``info["terminal_observation"]`` with ``info["TimeLimit.truncated"]``, and
the next episode's first observation returned in its place (SB3 resets on the same step).
``seed(s)`` seeds lane ``i`` with ``s + i`` at the next ``reset()``, as SB3's vec envs do.
``env_method("action_masks")`` (what sb3-contrib's ``get_action_masks`` calls) returns each
lane's mask. ``info["outcome"]`` names the outcome of a lane whose episode ended and
``info["seed"]`` its seed: as on the Gym face, no info names an episode's seed while it runs
(``reset_infos`` are empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from opsgym.vector.env import make_batch, spaces


class BatchedSB3VecEnv(VecEnv):
    """``num_envs`` lanes of one world as one SB3 ``VecEnv`` (see the module docstring).

    Args:
        num_envs: Number of lanes.
        env: The world (``"release"``, ``"oversight"`` or ``"fleet"``).
        **kwargs: As the world's batch (:class:`~opsgym.vector.release.ReleaseBatch`,
            :class:`~opsgym.vector.oversight.OversightBatch`,
            :class:`~opsgym.vector.fleet.FleetBatch`): ``scenario``, ``split``,
            ``overrides``, ``config``, ``max_steps``, ``max_episode_steps``, ``rng``.
    """

    def __init__(self, num_envs: int, env: str = "release", **kwargs: Any):
        self.world = make_batch(num_envs, env, **kwargs)
        observation_space, action_space = spaces(self.world)
        self.render_mode = None  # read by VecEnv.__init__ through get_attr
        super().__init__(num_envs, observation_space, action_space)
        self._actions = np.zeros(num_envs, np.int64)
        self.last_rewards = np.zeros(num_envs)
        """The last step's rewards as the scalar env gives them (float64), before SB3's float32
        (what ``Monitor`` sums: the batch zeroes a lane's reward when it resets the lane)."""

    def reset(self) -> np.ndarray:
        """Start an episode on every lane (seeding those :meth:`seed` named)."""
        given = [i for i, s in enumerate(self._seeds) if s is not None]
        if given:
            self.world.seed([self._seeds[i] for i in given], np.array(given))
        self.world.reset()
        self._reset_seeds()
        self._reset_options()
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        return self.world.obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions for :meth:`step_wait`."""
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every lane; reset those whose episode ended, on the same step."""
        world = self.world
        world.step(self._actions)
        terminated, truncated = world.terminated, world.truncated
        dones = terminated | truncated
        self.last_rewards = world.reward.copy()
        rewards = self.last_rewards.astype(np.float32)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        ended = np.flatnonzero(dones)
        if ended.size:
            last = world.obs[ended].copy()
            cut = (truncated & ~terminated)[ended].tolist()
            outcomes = world.outcomes(ended)
            seeds = world.seeds[ended].tolist()
            for j, lane in enumerate(ended.tolist()):
                info = infos[lane]
                info["terminal_observation"] = last[j]
                info["TimeLimit.truncated"] = cut[j]
                info["outcome"] = outcomes[j]
                info["seed"] = seeds[j]  # the episode that ended, not the next one
            world.reset(ended)
        return world.obs.copy(), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """Every lane's action mask, ``(num_envs, n)`` bool."""
        return self.world.mask.copy()

    def close(self) -> None:
        """Nothing to release: the lanes are arrays."""

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the vec env, once per lane asked for (lanes have no objects)."""
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Lanes have no attributes of their own to set."""
        raise AttributeError(f"cannot set {attr_name!r} on a lane of a batched world")

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """``action_masks`` per lane (what sb3-contrib asks for); nothing else per lane."""
        if method_name != "action_masks":
            raise AttributeError(f"lanes of a batched world have no method {method_name!r}")
        masks = self.world.mask
        return [masks[i].copy() for i in self._get_indices(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """No lane is wrapped."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Lanes do not render."""
        return [None for _ in range(self.num_envs)]


class ReleaseSB3VecEnv(BatchedSB3VecEnv):
    """:class:`BatchedSB3VecEnv` of the release world."""

    def __init__(self, num_envs: int, env: str = "release", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)


class OversightSB3VecEnv(BatchedSB3VecEnv):
    """:class:`BatchedSB3VecEnv` of the oversight world."""

    def __init__(self, num_envs: int, env: str = "oversight", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)


class FleetSB3VecEnv(BatchedSB3VecEnv):
    """:class:`BatchedSB3VecEnv` of the fleet world."""

    def __init__(self, num_envs: int, env: str = "fleet", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)
