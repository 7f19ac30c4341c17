"""EnvSpec: everything a world is, and all that the layers above may know of it.

The faces, the server, the CLI and the audit read a world only through its spec: its tools (on
``world``), scenarios, judge, rewards, encoder, config model, curriculum, manual, terminal tool
and its own HTTP routes. None of them imports a world's package or probes it for attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from opsgym.core.errors import ConfigError, OpsgymError, SpecError, UnknownNameError
from opsgym.core.exploits import Exploit, RewardCheck
from opsgym.core.judge import Judge
from opsgym.core.scenarios import Scenario
from opsgym.core.world import World

if TYPE_CHECKING:
    from opsgym.core.curriculum import Curriculum
    from opsgym.core.episode import Episode


class Encoder(Protocol):
    """The vector view of an environment, for the Gymnasium face.

    ``actions`` is the discrete action catalogue: index ``i`` is the call
    ``(tool, args)``. ``encode`` must read only the agent's view.

    The members are read-only: an encoder may hold them as class attributes (a world's encoder
    does), and a reader never sets them.
    """

    @property
    def size(self) -> int:
        """Length of the observation vector."""

    @property
    def low(self) -> float:
        """Lower bound of every entry."""

    @property
    def high(self) -> float:
        """Upper bound of every entry."""

    @property
    def actions(self) -> Sequence[tuple[str, Mapping[str, Any]]]:
        """The action catalogue: ``(tool name, raw arguments)`` per action index."""

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now (its view only, never the truth)."""


class WorldConfig(BaseModel):
    """A world's public settings (an episode's ``config``): one pydantic model per world, whose
    JSON Schema every face can show (``GET /api/envs``). A world without settings uses this
    base as it is (no field: any key is refused).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    error: ClassVar[type[OpsgymError]] = ConfigError
    """What a bad value raises (a world may name its own subclass)."""

    @classmethod
    def parse(cls, config: Mapping[str, Any] | None, world: str = "world") -> Self:
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


ROUTE_METHODS = ("GET", "POST")
_ROUTE_PATH = re.compile(r"(/[a-z0-9][a-z0-9_-]*)+")


@dataclass(frozen=True)
class Route:
    """An HTTP route of one world's own, declared as data: the world imports no web framework.

    The server mounts it at ``/api/envs/{world}{path}``: the body is validated with ``body``
    (a 422 naming the field when it does not fit), the handler's return value is the JSON
    answer, and an :class:`~opsgym.core.errors.UnknownNameError` it raises is a 404, any other
    :class:`~opsgym.core.errors.OpsgymError` or ``ValueError`` a 422. The handler's docstring
    is the route's documentation.

    Attributes:
        method: ``"GET"`` or ``"POST"``.
        path: Below the world's prefix, e.g. ``"/compose"`` (lower case, ``-`` and ``_``).
        handler: ``handler(body) -> JSON value`` (``handler()`` for a route without a body).
        body: The pydantic model of the request body (``extra="forbid"``); ``None`` for none.
            A ``GET`` takes none.
        reply: The pydantic model of the answer, for the OpenAPI document (typed clients are
            generated from it); ``None`` documents a JSON object.
    """

    method: str
    path: str
    handler: Callable[..., Any]
    body: type[BaseModel] | None = None
    reply: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        if self.method not in ROUTE_METHODS:
            raise SpecError(f"route method must be one of {ROUTE_METHODS}, got {self.method!r}")
        if not _ROUTE_PATH.fullmatch(self.path):
            raise SpecError(f"route path must look like '/compose', got {self.path!r}")
        if self.method == "GET" and self.body is not None:
            raise SpecError(f"GET {self.path} cannot take a body ({self.body.__name__})")

    @property
    def name(self) -> str:
        """The handler's name (the route's name in the server's OpenAPI document)."""
        return self.handler.__name__


@dataclass(frozen=True)
class Headline:
    """The figure a world sums up a policy by, beside its outcome rates: the share of the
    episodes it counts that ended in one of its outcomes (``shipped_when_shippable``: of the
    releases whose v2 could ship, the share shipped and verified). Like the judge, it reads only
    the outcome and the final truth; the evaluation harness reports it with its interval.

    Attributes:
        name: How reports and curves name it.
        outcomes: The outcomes that score.
        counts: ``counts(truth) -> bool``: whether an episode whose final truth is ``truth``
            counts; ``None``: every episode does.
    """

    name: str
    outcomes: frozenset[str]
    counts: Callable[[Mapping[str, Any]], bool] | None = None

    def score(self, outcome: str | None, truth: Mapping[str, Any]) -> bool | None:
        """Whether an episode that ended in ``outcome`` with final ``truth`` scored; ``None``
        when it does not count.
        """
        if self.counts is not None and not self.counts(truth):
            return None
        return outcome in self.outcomes


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
        harmful_outcomes: Outcomes in which the agent did harm (a broken release shipped, the
            job destroyed). With ``safe_outcomes`` they give every outcome its meaning
            (:meth:`outcome_kind`), which every chart and page draws the same way.
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
        manual: The world's documentation, in Markdown (by convention its package's docstring:
            ``manual=__doc__``); its first line is its :attr:`summary`.
        curriculum: ``curriculum() -> Curriculum``, for a world with levels: a fresh adaptive
            curriculum whose ``config`` feeds an episode request (the server keeps one per
            world); ``None`` for a world without levels.
        routes: HTTP routes of the world's own (:class:`Route`), which the server mounts
            under ``/api/envs/{name}``.
        headline: The figure a policy on this world is summed up by (:class:`Headline`), which
            the evaluation harness reports (PPO's evaluations, ``evaluation.json``); ``None``:
            the outcome rates alone.
        terminal: The tool that asks the judge to end the episode (the one marked
            ``@tool(terminal=True)``), or ``None`` when only the world ends it; derived from
            ``world``'s tools, never set.
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
    policies: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    safe_outcomes: frozenset[str] = frozenset()
    harmful_outcomes: frozenset[str] = frozenset()
    settled: frozenset[str] = frozenset()
    exploits: tuple[Exploit, ...] = ()
    reward_checks: tuple[RewardCheck, ...] = ()
    brief: str = ""
    prompt: Callable[[Episode], str] | None = None
    config: type[WorldConfig] = WorldConfig
    manual: str = ""
    curriculum: Callable[[], Curriculum] | None = None
    routes: tuple[Route, ...] = ()
    headline: Headline | None = None
    terminal: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        enders = [name for name, t in self.world.tools.items() if t.terminal]
        if len(enders) > 1:
            raise SpecError(f"{self.name}: one terminal tool at most, got {enders}")
        object.__setattr__(self, "terminal", enders[0] if enders else None)
        seen = set()
        for route in self.routes:
            if (route.method, route.path) in seen:
                raise SpecError(f"{self.name}: two routes {route.method} {route.path}")
            seen.add((route.method, route.path))

    def outcome_kind(self, outcome: str | None) -> str:
        """What ``outcome`` means: ``safe``, ``harmful`` or ``unfinished`` (anything else: not
        safe, but no harm done, such as a rollout cut short or an unnecessary hold).
        """
        if outcome in self.safe_outcomes:
            return "safe"
        if outcome in self.harmful_outcomes:
            return "harmful"
        return "unfinished"

    @property
    def summary(self) -> str:
        """The first line of the manual: what the world is, in one sentence."""
        manual = self.manual.strip()
        return manual.splitlines()[0] if manual else ""

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
