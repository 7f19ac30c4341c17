"""The batched worlds as a Gymnasium 1.x ``VectorEnv``.

``BatchedVectorEnv(num_envs=N, env="oversight", scenario="mixed")`` is ``N`` copies of
``gym.make("opsgym/Oversight-v1", scenario="mixed")`` behind one ``VectorEnv`` (and
``ReleaseVectorEnv``, ``OversightVectorEnv``, ``FleetVectorEnv`` the same with their world):
lane ``i`` reset with seed ``s + i`` (or the ``i``-th of a list of seeds) plays exactly the
episodes that env plays after ``reset(seed=s + i)``, as ``gym.make_vec(...,
vectorization_mode="sync")`` would, only in arrays. Autoreset follows Gymnasium's
``AutoresetMode`` (``NEXT_STEP`` by default: the step after a lane's episode ends resets that
lane, ignores its action and returns its first observation with reward 0); ``action_masks()``
gives every lane's mask.

Infos are arrays with ``_key`` masks, as Gymnasium's vector envs give them: ``outcome``,
``return`` and ``seed`` (the episode's seed) for lanes whose episode ended on this step.
Nothing else per lane: the reports are the scalar face's business. As on the scalar face, no
info names an episode's seed while it runs (reset infos are empty): the seed is the episode's
hidden truth. A lane has no episode object to read it from after the end, so the step that
ends a lane's episode names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import spec
from opsgym.vector._batch import BatchError
from opsgym.vector.fleet import FleetBatch
from opsgym.vector.oversight import OversightBatch
from opsgym.vector.release import ReleaseBatch

WORLDS = {"release": ReleaseBatch, "oversight": OversightBatch, "fleet": FleetBatch}
"""The worlds that have a batched twin, by name."""


def make_batch(num_envs: int, env: str, **kwargs: Any) -> Any:
    """The batched twin of world ``env`` (``kwargs``: as its batch class takes them)."""
    if env not in WORLDS:
        raise UnknownNameError("batched world", env, WORLDS)
    return WORLDS[env](num_envs, **kwargs)


def spaces(batch: Any) -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    """The single observation and action spaces of a batch's lanes, as ``OpsEnv``'s."""
    encoder = spec(batch.world).encoder()
    box = gym.spaces.Box(encoder.low, encoder.high, (encoder.size,), np.float32)
    return box, gym.spaces.Discrete(batch.mask.shape[1])


class BatchedVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` episodes of one world stepped in lock-step, bit-identical to the Gym face.

    Args:
        num_envs: Number of sub-environments (lanes).
        env: The world (``"release"``, ``"oversight"`` or ``"fleet"``); lets ``gym.make_vec``
            pass the registration's kwargs through a ``vector_entry_point``.
        scenario: One scenario for every lane, or one per lane; ``None``: the world's first,
            as ``gym.make`` (evaluations and training use ``"mixed"``).
        split: ``train`` (default), ``dev`` or ``test``, as ``OpsEnv(split=...)``.
        overrides: Hidden facts forced in every episode, as ``OpsEnv(overrides=...)``.
        config: Public settings, as ``OpsEnv(config=...)`` (one for every lane).
        max_steps: The episode's step budget, as ``OpsEnv(max_steps=...)``.
        max_episode_steps: The registration's time limit (``None``: the world's), as
            ``gym.make``'s.
        reward_timing: Only ``"end"`` (the default of the scalar face).
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``.
        rng: ``"pcg"`` (default, arrays) or ``"generator"`` (one NumPy Generator per lane).
        copy: Return copies of the observation and result arrays (``False``: the batch's own
            arrays, overwritten by the next call).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        env: str = "release",
        scenario: str | Sequence[str] | None = None,
        *,
        split: str = "train",
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        max_steps: int | None = None,
        max_episode_steps: int | None = None,
        reward_timing: str = "end",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        rng: str = "pcg",
        copy: bool = True,
    ):
        self.world = make_batch(
            num_envs,
            env,
            scenario=scenario,
            split=split,
            overrides=overrides,
            config=config,
            max_steps=max_steps,
            max_episode_steps=max_episode_steps,
            reward_timing=reward_timing,
            rng=rng,
        )
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.copy = copy
        self.single_observation_space, self.single_action_space = spaces(self.world)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._autoreset = np.zeros(num_envs, bool)
        self._started = False

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode on every lane (or on ``options["reset_mask"]``'s lanes).

        ``seed``: ``None`` (lanes continue their seed streams; fresh ones the first time),
        an int ``s`` (lane ``i`` seeded ``s + i``) or one seed or ``None`` per lane.
        """
        n = self.num_envs
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise BatchError(
                f"unknown reset option {next(iter(options))!r}: the batch takes its scenario, "
                "overrides and budget at construction; only 'reset_mask' is accepted here"
            )
        if mask is None:
            lanes = np.arange(n)
        else:
            mask = np.asarray(mask)
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"reset_mask must be a bool array of shape ({n},) with a True")
            lanes = np.flatnonzero(mask)
        if seed is not None:
            if isinstance(seed, int | np.integer):
                super().reset(seed=int(seed))
                seeds: list[int | None] = [int(seed) + i for i in range(n)]
            else:
                seeds = list(seed)
                if len(seeds) != n:
                    raise ValueError(f"{len(seeds)} seeds for num_envs={n}")
            given = [i for i in lanes.tolist() if seeds[i] is not None]
            if given:
                self.world.seed([seeds[i] for i in given], np.array(given))
        self.world.reset(lanes)
        self._autoreset[lanes] = False
        self._started = True
        return self._out(self.world.obs), {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every lane; see the class docstring for autoreset and infos."""
        if not self._started:
            raise gym.error.ResetNeeded("Call reset() before step().")
        world = self.world
        actions = np.asarray(actions)
        infos: dict[str, Any] = {}
        restart = np.flatnonzero(self._autoreset)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            world.reset(restart, encode=False)
            world.step(actions, active=~self._autoreset)
        elif self.autoreset_mode == AutoresetMode.DISABLED:
            if restart.size:
                raise BatchError(
                    f"lanes {restart[:5].tolist()} ended and were not reset: with autoreset "
                    "DISABLED, reset them with reset(options={'reset_mask': ...}) first"
                )
            world.step(actions)
        else:
            world.step(actions)
        ended = world.terminated | world.truncated
        self._add_ends(infos, np.flatnonzero(ended))
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            lanes = np.flatnonzero(ended)
            final = np.full(self.num_envs, None, dtype=object)
            final[lanes] = list(world.obs[lanes])
            infos["final_obs"], infos["_final_obs"] = final, ended.copy()
            reward, terminated, truncated = (
                world.reward.copy(),
                world.terminated.copy(),
                world.truncated.copy(),
            )
            world.reset(lanes)
            self._autoreset[:] = False
            return self._out(world.obs), reward, terminated, truncated, infos
        self._autoreset = ended
        return (
            self._out(world.obs),
            self._out(world.reward),
            self._out(world.terminated),
            self._out(world.truncated),
            infos,
        )

    def action_masks(self) -> np.ndarray:
        """Which catalogue actions pass validation now, per lane: ``(num_envs, n)`` bool."""
        return self.world.mask.copy()

    def _out(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

    def _add_ends(self, infos: dict[str, Any], lanes: np.ndarray) -> None:
        if lanes.size:
            mask = np.zeros(self.num_envs, bool)
            mask[lanes] = True
            outcome = np.full(self.num_envs, None, dtype=object)
            codes = self.world.outcome[lanes]
            outcome[lanes] = np.array([*self.world.OUTCOMES, None], dtype=object)[codes]
            infos["outcome"], infos["_outcome"] = outcome, mask
            infos["return"], infos["_return"] = np.where(mask, self.world.returns, 0.0), mask
            infos["seed"], infos["_seed"] = np.where(mask, self.world.seeds, 0), mask.copy()


class ReleaseVectorEnv(BatchedVectorEnv):
    """:class:`BatchedVectorEnv` of the release world (``env="release"``)."""

    def __init__(self, num_envs: int = 1, env: str = "release", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)


class OversightVectorEnv(BatchedVectorEnv):
    """:class:`BatchedVectorEnv` of the oversight world (``env="oversight"``)."""

    def __init__(self, num_envs: int = 1, env: str = "oversight", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)


class FleetVectorEnv(BatchedVectorEnv):
    """:class:`BatchedVectorEnv` of the fleet world (``env="fleet"``)."""

    def __init__(self, num_envs: int = 1, env: str = "fleet", **kwargs: Any):
        super().__init__(num_envs, env, **kwargs)
