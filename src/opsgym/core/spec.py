"""EnvSpec: everything the adapters need to know about one environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from opsgym.core.errors import ConfigError, OpsgymError, UnknownNameError
from opsgym.core.exploits import Exploit, RewardCheck
from opsgym.core.judge import Judge
from opsgym.core.scenarios import Scenario
from opsgym.core.world import World

if TYPE_CHECKING:
    from opsgym.core.episode import Episode


class Encoder(Protocol):
    """The vector view of an environment, for the Gymnasium face.

    ``actions`` is the discrete action catalogue: index ``i`` is the call
    ``(tool, args)``. ``encode`` must read only the agent's view.
    """

    size: int
    low: float
    high: float
    actions: Sequence[tuple[str, dict[str, Any]]]

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""


class WorldConfig(BaseModel):
    """A world's public settings (an episode's ``config``): one pydantic model per world, whose
    JSON Schema every face can show (``GET /api/envs``). A world without settings uses this
    base as it is (no field: any key is refused).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    error: ClassVar[type[OpsgymError]] = ConfigError
    """What a bad value raises (a world may name its own subclass)."""

    @classmethod
    def parse(cls, config: Mapping[str, Any] | None, world: str = "world") -> WorldConfig:
        """Validate ``config``: an unknown key raises :class:`UnknownNameError` with close
        matches, a bad value :attr:`error` naming the key, the reason and the value.
        """
        config = dict(config or {})
        for key in config:
            if key not in cls.model_fields:
                raise UnknownNameError(f"{world} config key", key, cls.model_fields)
        try:
            return cls.model_validate(config)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            if err["type"] == "literal_error" and len(err["loc"]) == 1:  # a name: close matches
                choices = map(str, get_args(cls.model_fields[where].annotation))
                raise UnknownNameError(f"{world} {where}", err["input"], choices) from None
            raise cls.error(f"config {where}: {err['msg']}, got {err['input']!r}") from None


@dataclass(frozen=True)
class EnvSpec:
    """How to build and judge one environment.

    Attributes:
        name: Short id, as in ``opsgym.make(name)``.
        gym_id: Versioned Gymnasium id, e.g. ``opsgym/Release-v0``.
        world: The World subclass.
        judge: The judge.
        scenarios: The fault families, the first being the default.
        rewards: Weight of each reward component.
        outcome_rewards: Terminal reward of each outcome.
        max_steps: Default step budget of an episode (also the Gym time limit).
        encoder: Factory of the vector view used by the Gym face.
        policies: Scripted policies by name (``random`` is generic and always available).
        safe_outcomes: Outcomes that count as a safe end of the episode.
        settled: Reward components computed from hidden facts, paid on the episode's last step
            (see :mod:`opsgym.core.rewards`).
        exploits: The exploit suite ``opsgym audit`` runs against this world.
        reward_checks: The world's own statements about its reward, checked by the audit.
        brief: What an LLM agent is told of the job before its first observation, in the
            world's words: the system message's world part. The generic renderer
            (:mod:`opsgym.adapters.toolcalls`) adds the reply rules and the tools, and renders
            the observation itself; a world supplies only this text.
        prompt: ``render(episode) -> str``, the text an LLM agent is shown now (the audit's leak
            test compares it across hidden facts), for a world that renders its own; ``None``
            (every world) means the generic renderer's,
            :func:`opsgym.adapters.toolcalls.render_text`, which the faces apply (core imports
            no face).
        config: The model of the world's public settings (:class:`WorldConfig`).
    """

    name: str
    gym_id: str
    world: type[World]
    judge: Judge
    scenarios: tuple[Scenario, ...]
    rewards: dict[str, float]
    outcome_rewards: dict[str, float]
    max_steps: int
    encoder: Callable[[], Encoder]
    policies: dict[str, Callable[[], Any]] = field(default_factory=dict)
    safe_outcomes: frozenset[str] = frozenset()
    settled: frozenset[str] = frozenset()
    exploits: tuple[Exploit, ...] = ()
    reward_checks: tuple[RewardCheck, ...] = ()
    brief: str = ""
    prompt: Callable[[Episode], str] | None = None
    config: type[WorldConfig] = WorldConfig

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickled by name: an episode in a pickle refers to its registered environment.
        from opsgym.core.registry import spec

        return spec, (self.name,)

    def check_config(self, config: Mapping[str, Any] | None) -> WorldConfig:
        """``config`` validated by the world's model (see :meth:`WorldConfig.parse`)."""
        return self.config.parse(config, self.name)

    def families(self) -> tuple[Scenario, ...]:
        """The named fault families (every scenario but ``mixed``)."""
        return tuple(s for s in self.scenarios if not s.mixture)

    def scenario(self, name: str | None) -> Scenario:
        """The scenario called ``name`` (the first one when ``None``)."""
        if name is None:
            return self.scenarios[0]
        for s in self.scenarios:
            if s.name == name:
                return s
        raise UnknownNameError(f"scenario of {self.name!r}", name, [s.name for s in self.scenarios])
