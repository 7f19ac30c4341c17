"""The agent's seat at an episode: what a policy that steps episodes itself is handed.

A policy that makes its own calls (the model-facing agents, which make several calls a turn and
count their tokens; a trained PPO policy, which reads the Gym face's vector view) is handed a
:class:`Seat`, never the :class:`~opsgym.core.episode.Episode`. The seat shows what the agent
may see (the observation, the tools, the legal calls, the Gym vector view, the step budget) and
carries its calls; it holds no seed, no family, no world and no record. The seed *is* the
episode's hidden truth: with it, or with the episode, a policy could play twins of the episode
and keep the best calls.

Python hides nothing from code that goes looking (the seat keeps its episode in a private
slot); the seat is the contract of what a policy is given, and the audit's policies take only
what it offers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from opsgym.core.registry import legal_actions

if TYPE_CHECKING:
    from opsgym.core.episode import Episode, StepResult
    from opsgym.core.spec import EnvSpec
    from opsgym.core.tools import Args, Tool


class AgentView(Protocol):
    """What the faces that talk to an agent read of an episode: an :class:`Seat`, or the
    :class:`~opsgym.core.episode.Episode` itself where the caller holds it (a server session,
    the grader). Nothing in it names the seed, the family or the truth.
    """

    transcript: list[dict[str, Any]]

    @property
    def env(self) -> str:
        """The world's name."""

    @property
    def spec(self) -> EnvSpec:
        """The world's public description."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools' schemas."""

    @property
    def steps(self) -> int:
        """Calls made so far."""

    @property
    def max_steps(self) -> int:
        """The step budget (0: none)."""

    @property
    def done(self) -> bool:
        """Whether the episode is over."""

    def observe(self) -> dict[str, Any]:
        """What the agent sees now."""

    def step(
        self, tool: str, args: dict[str, Any] | None = None, *, tokens: int | None = None
    ) -> StepResult:
        """Make one call."""


class Seat:
    """What the agent may see of ``episode`` and do in it.

    Attributes:
        transcript: The episode's transcript, which a model-facing agent writes its turns into
            (it holds only what the agent wrote and was shown).
    """

    __slots__ = ("_episode", "transcript")

    def __init__(self, episode: Episode):
        self._episode = episode
        self.transcript: list[dict[str, Any]] = episode.transcript

    @property
    def env(self) -> str:
        """The world's name."""
        return self._episode.env

    @property
    def spec(self) -> EnvSpec:
        """The world's public description (its brief, tools and catalogue)."""
        return self._episode.spec

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools' schemas."""
        return self._episode.tools

    @property
    def steps(self) -> int:
        """Calls made so far."""
        return self._episode.steps

    @property
    def max_steps(self) -> int:
        """The step budget (0: none)."""
        return self._episode.max_steps

    @property
    def done(self) -> bool:
        """Whether the episode is over."""
        return self._episode.done

    @property
    def token_source(self) -> str:
        """Where the episode's token counts come from (set by the agent before its first
        step).
        """
        return self._episode.token_source

    @token_source.setter
    def token_source(self, source: str) -> None:
        self._episode.token_source = source

    def observe(self) -> dict[str, Any]:
        """What the agent sees now (``Episode.observe``)."""
        return self._episode.observe()

    def step(
        self, tool: str, args: dict[str, Any] | None = None, *, tokens: int | None = None
    ) -> StepResult:
        """Make one call (``Episode.step``)."""
        return self._episode.step(tool, args, tokens=tokens)

    def step_call(self, tool: Tool, args: Args, raw: dict[str, Any] | None = None) -> StepResult:
        """Make one catalogue call (``Episode.step_call``)."""
        return self._episode.step_call(tool, args, raw)

    def legal_actions(self) -> list[int]:
        """Indices of the catalogue actions that pass validation now (judged on the agent's
        view).
        """
        return legal_actions(self._episode)

    def encoded(self, encoder: Any) -> np.ndarray:
        """The Gym face's vector view of the episode now, by ``encoder`` (the world's)."""
        return np.asarray(encoder.encode(self._episode))
