"""The World base: hidden truth, the agent's view, a sim clock, one rng and a tool table.

A world holds two things apart:

* the **truth** (``truth()``): what the simulated system really is;
* the **view** (``view``): what the agent has been told, the only input to ``observe()``,
  to preconditions and to action masks.

Tool handlers may read and change the truth, and they return a *report*: what the tool says,
which may be late, cached, partial or wrong. A world knows nothing of Gymnasium, HTTP or LLMs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opsgym.core.lies import LieLedger
from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import Scenario
from opsgym.core.tools import Args, Tool


class World:
    """Base class of every simulated system.

    Subclasses define tools with :func:`opsgym.core.tools.tool` (their definition order is the
    action order), set ``view`` in ``__init__``, and implement ``observe`` and ``truth``.

    Args:
        scenario: The fault family of this episode.
        rng: The episode's only source of randomness.
        rewards: Where handlers add reward components.
        overrides: Values forced onto the hidden facts the seed would otherwise draw (for leak
            tests, curricula and debugging). Unknown keys are an error of the subclass's choosing.
        config: Public settings of the episode that the agent may know (a difficulty level, a
            cost per minute, a worker mix). Each world documents and validates its own keys.
    """

    tools: ClassVar[dict[str, Tool]] = {}
    deadline: float | None = None
    """Length of the simulated window in minutes; when the clock reaches it the episode ends.
    A class attribute, or set per episode in ``__init__`` (from the config); a world that always
    has one narrows the type (``deadline: float = 150.0``)."""
    tokens_per_call: ClassVar[int] = 0
    """Tokens charged for a call made without a token count (e.g. through the Gym face)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, Tool] = {}
        for klass in reversed(cls.__mro__):
            for attr in vars(klass).values():
                spec = getattr(attr, "__opsgym_tool__", None)
                if isinstance(spec, Tool):
                    found[spec.name] = spec
        cls.tools = found

    def __init__(
        self,
        scenario: Scenario,
        rng: np.random.Generator,
        rewards: RewardLedger,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ):
        self.scenario = scenario
        self.rng = rng
        self.rewards = rewards
        self.overrides = dict(overrides or {})
        self.config = dict(config or {})
        self.clock = 0.0
        self.tokens = 0
        """Tokens the agent has spent so far, rejected calls included: the agent's cost, kept
        here so that a world can price it; not state of the simulated system."""
        self.outcome_rewards: dict[str, float] | None = None
        """Set to override the spec's terminal reward per outcome for this episode (a world
        whose config makes its reward table tunable); ``None`` uses ``EnvSpec.outcome_rewards``."""
        self.ended: str | None = None
        """Set by a handler when something irreversible ends the episode (e.g. data loss)."""
        self.lies = LieLedger()
        """Reports that misled, marked by handlers with ``self.lies.tell(...)``; hidden."""
        self.view: Any = None

    def apply(self, tool: Tool, args: Args) -> dict[str, Any]:
        """Carry out a validated call; return the tool's report.

        The tool's ``minutes`` pass first: an operation's effects, and its report, land when it
        finishes. A handler may let more time pass (a deploy that hangs until a timeout).
        """
        self.advance(tool.minutes)
        report: dict[str, Any] = getattr(self, tool.handler)(args)
        return report

    def advance(self, minutes: float) -> None:
        """Let ``minutes`` of simulated time pass (subclasses accrue time-based costs here)."""
        self.clock += minutes

    def observe(self) -> dict[str, Any]:
        """The agent's view as a JSON-serialisable dict. Built from ``view`` only."""
        raise NotImplementedError

    def truth(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot of the hidden state, for the judge and the record."""
        raise NotImplementedError
