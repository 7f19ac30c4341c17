"""The Gymnasium face of any opsgym world.

``gymnasium.make("opsgym/Release-v0", scenario="deploy_timeout")`` after ``import opsgym``.
The observation is the world's vector view (its ``encode.py`` documents each index), the
action space is ``Discrete(n)`` over the world's action catalogue, ``action_masks()`` marks the
calls whose preconditions hold (for sb3-contrib's MaskablePPO), the time limit comes from the
registration, and at the end ``info["verdict"]`` holds the judge's verdict.
``env.unwrapped.episode`` is the underlying :class:`~opsgym.core.episode.Episode` (the
harness's, not the agent's: it holds the truth).

No ``info`` holds the episode's seed: ``reset`` gives the scenario and the split. The seed is
the episode's hidden truth (an agent holding it could play twins of the episode and keep the
best calls); after the end the harness reads it from ``env.unwrapped.episode`` or the record.

Episodes are drawn from one split (``split="train"`` by default): ``reset(seed=...)`` seeds a
stream of episode seeds that all lie in that split, and a ``mixed`` scenario draws its family
from that split's families only. A held-out family needs ``split="dev"`` or ``"test"``.
Each call is charged the world's fixed token cost (the record says ``token_source: fixed``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from opsgym.core.episode import Episode
from opsgym.core.registry import catalogue, spec
from opsgym.core.request import EpisodeRequest
from opsgym.core.scenarios import check_split


class OpsEnv(gym.Env[np.ndarray, np.int64]):
    """A Gymnasium environment over one opsgym world.

    Args:
        env: The world's name (``release``, ...).
        scenario: Fault family, or ``mixed`` (the seed draws the family); the world's first
            when ``None``. ``reset(options={"scenario": ...})`` switches it for one episode.
        split: Where episode seeds (and ``mixed`` families) come from: ``train`` (default),
            ``dev`` or ``test``. Held-out families are refused on ``train``.
        reward_timing: ``"end"`` (default) or ``"dense"``, which pays reward computed from
            hidden facts at once and so leaks them (see :mod:`opsgym.core.rewards`).
        overrides: Hidden facts to force (see ``opsgym.make``).
        config: Public settings of the episode (see ``opsgym.make``). ``reset(options=...)``
            accepts ``scenario``, ``overrides`` and ``config`` for one episode.
        max_steps: The episode's step budget; ``None`` for the registered time limit. Pass this
            rather than ``max_episode_steps`` to shorten episodes: the unwrapped env cannot see
            the TimeLimit wrapper, and only its own budget ends the episode with a verdict.
        render_mode: ``None`` or ``"ansi"`` (the last event as text).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        env: str = "release",
        scenario: str | None = None,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        max_steps: int | None = None,
        render_mode: str | None = None,
        split: str = "train",
        reward_timing: str = "end",
    ):
        self._ops = spec(env)
        # Every rule (split, held-out families, overrides, config, timing) is the request's;
        # checked here on a seed of the split, so a bad env fails at make(), not at reset().
        self._request = EpisodeRequest(
            self._ops.name,
            scenario,
            split=check_split(split),
            config=config or {},
            overrides=overrides or {},
            max_steps=max_steps,
            reward_timing=reward_timing,
        )
        self._request.resolve(np.random.default_rng(0))
        self._split = split
        self._encoder = self._ops.encoder()
        self._actions = catalogue(env)
        self._raw = [args.model_dump(mode="json") for _, args in self._actions]
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self.observation_space = gym.spaces.Box(
            self._encoder.low, self._encoder.high, (self._encoder.size,), np.float32
        )
        self.render_mode = render_mode
        self.episode: Episode | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode.

        Its seed is drawn from the env's seeded stream, within the env's split; or it is
        ``options["episode_seed"]``, which must lie in that split. ``options`` may also set
        ``scenario``, ``overrides`` and ``config`` for this one episode. ``info`` holds the
        scenario and the split, not the episode's seed.
        """
        super().reset(seed=seed)
        options = options or {}
        changes: dict[str, Any] = {
            key: options[key] for key in ("scenario", "overrides", "config") if key in options
        }
        if "episode_seed" in options:
            changes["seed"] = int(options["episode_seed"])
        request = replace(self._request, **changes) if changes else self._request
        self.episode = request.resolve(self.np_random).start()
        return self._encoder.encode(self.episode), {
            "scenario": self.episode.scenario.name,
            "split": self._split,
        }

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Carry out catalogue action ``action``."""
        episode = self.episode
        if episode is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        index = int(action)
        if not 0 <= index < len(self._actions):
            raise ValueError(f"action must be in [0, {len(self._actions)}), got {action!r}")
        tool, args = self._actions[index]
        report, reward, done, rejected, terminated, truncated, components = episode.step_call(
            tool, args, self._raw[index]
        )
        info: dict[str, Any] = {
            "report": report,  # already the caller's own copy, as are the components
            "rejected": rejected,
            "components": components,
        }
        if done:
            verdict = episode.verdict
            assert verdict is not None  # an episode is done only once it is judged
            info["verdict"] = verdict.to_dict()
            info["outcome"] = verdict.outcome
        return self._encoder.encode(episode), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Which catalogue actions would pass validation now (judged on the agent's view)."""
        episode = self.episode
        if episode is None:
            raise gym.error.ResetNeeded("Call reset() before action_masks().")
        view = episode.world.view
        return np.fromiter(
            (tool.check(view, args) is None for tool, args in self._actions),
            dtype=bool,
            count=len(self._actions),
        )

    def render(self) -> str | None:
        """The last event, as the agent saw it."""
        if self.render_mode != "ansi" or self.episode is None:
            return None
        if not self.episode.events:
            return f"step   0 t=   0.0  {self.episode.env}/{self.episode.scenario.name} begins"
        e = self.episode.events[-1]
        status = f"REJECTED ({e['rejected']})" if e["rejected"] else e["report"]
        return f"step {e['step']:>3} t={e['clock']:6.1f}  {e['tool']}({e['args']}) -> {status}"
