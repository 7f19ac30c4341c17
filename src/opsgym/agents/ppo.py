"""A trained PPO policy as a named policy: ``ppo:PATH`` (extra ``train``).

    opsgym eval --env release --policy ppo:runs/release__ppo__1__1767225600/model.zip

``PATH`` is a ``model.zip`` written by ``opsgym train ppo`` (:mod:`opsgym.training.ppo`) or its
run folder. The policy plays from the same vector view and action masks as the Gym face,
greedily; its run's ``config.json`` says which world it learnt and whether it was masked.
Training imports this module to evaluate its models; nothing here imports training.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from opsgym.core.episode import Episode
from opsgym.core.errors import TrainingError
from opsgym.core.registry import catalogue, spec
from opsgym.core.seat import Seat


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> Any:
    """The model saved at ``path`` (cached: ``opsgym eval`` asks for the policy per episode)."""
    from sb3_contrib import MaskablePPO

    return MaskablePPO.load(path, device="cpu")


class PPOPolicy:
    """A trained PPO policy as an opsgym policy (``ppo:PATH``, a ``model.zip`` or a run's
    folder): it steps the episode itself, from the same vector view and masks as the Gym face,
    greedily.

    Raises:
        TrainingError: nothing loadable at ``path``, or a model of another world or of another
            version of its observation.
    """

    deterministic = True

    def __init__(self, env: str, path: str | os.PathLike[str]):
        model_path = Path(path)
        if model_path.is_dir():
            model_path = model_path / "model.zip"
        if not model_path.is_file():
            raise TrainingError(f"no PPO model at {model_path}")
        sidecar = model_path.parent / "config.json"
        trained = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
        if trained.get("env", env) != env:
            raise TrainingError(f"{model_path} was trained on {trained['env']!r}, not {env!r}")
        try:
            model = _load(str(model_path.resolve()), model_path.stat().st_mtime_ns)
        except Exception as exc:  # noqa: BLE001 -- whatever the file is, say so in one line
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise TrainingError(f"cannot load {model_path} as a PPO model: {reason}") from None
        self._setup(env, model, bool(trained.get("mask", True)))
        self.name = f"ppo:{path}"

    @classmethod
    def from_model(cls, env: str, model: Any, mask: bool = True) -> PPOPolicy:
        """The policy of a model in memory (the evaluations during training)."""
        policy = cls.__new__(cls)
        policy._setup(env, model, mask)
        policy.name = "ppo"
        return policy

    def _setup(self, env: str, model: Any, mask: bool) -> None:
        self.model, self.mask = model, mask
        self.encoder = spec(env).encoder()
        self.actions = catalogue(env)
        shape, n = model.observation_space.shape, model.action_space.n
        if shape != (self.encoder.size,) or n != len(self.actions):
            raise TrainingError(
                f"the model sees {shape[0]} floats and picks among {n} actions; {env} "
                f"({spec(env).gym_id}) has {self.encoder.size} and {len(self.actions)}: it was "
                "trained on another version of the world, retrain it"
            )

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Nothing to reset: the policy is greedy."""

    def drive(self, episode: Episode | Seat) -> None:
        """Play ``episode`` (or the seat :func:`opsgym.agents.play` hands it) to the end, from
        the Gym face's vector view and masks: what the seat shows.
        """
        seat = episode if isinstance(episode, Seat) else Seat(episode)
        n = len(self.actions)
        while not seat.done:
            obs = seat.encoded(self.encoder)
            masks = None
            if self.mask:
                masks = np.zeros(n, dtype=bool)
                masks[seat.legal_actions()] = True
            action, _ = self.model.predict(obs, action_masks=masks, deterministic=True)
            tool, args = self.actions[int(action)]
            seat.step_call(tool, args)
