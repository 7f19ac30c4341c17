"""The flag world's parts: its scenarios, world, judge, encoder and scripted policies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from opsgym.core.exploits import Bound, Exploit
from opsgym.core.judge import Judge, accepted, invariant
from opsgym.core.scenarios import Scenario, mixed
from opsgym.core.spec import Route
from opsgym.core.tools import NoArgs, tool
from opsgym.core.world import World

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

READ = "read_flag"

_FAMILIES = (
    Scenario("nominal", "Every write sticks.", params={"lost_writes": (0,)}),
    Scenario(
        "lost_write",
        "The first write may be lost, and acknowledged all the same.",
        faults=("lost_write",),
        hidden={"lost_writes": (0, 1)},
        revealed_by=frozenset({READ}),
        params={"lost_writes": (0, 1)},
    ),
    Scenario(
        "flaky_store",
        "One or two writes are lost, each acknowledged.",
        faults=("lost_write",),
        held_out=True,
        hidden={"lost_writes": (1, 2)},
        revealed_by=frozenset({READ}),
        params={"lost_writes": (1, 2)},
    ),
)
SCENARIOS = (*_FAMILIES, mixed(_FAMILIES, family_revealed_by=[READ]))


@dataclass
class View:
    """What the agent has been told."""

    enables: int = 0
    read: dict[str, Any] | None = None
    read_since_enable: bool = False


def _enabled(view: View, args: NoArgs) -> str | None:
    """an enable has been sent"""
    return None if view.enables else "nothing was enabled yet: call enable first"


class Flag(World):
    """A flag in a config store whose writes may be lost, though each is acknowledged."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        options = self.scenario.params["lost_writes"]
        drawn = options[int(self.rng.random() * len(options))]  # one draw, whatever the family
        self.lost_writes = int(self.overrides.get("lost_writes", drawn))
        self.lost_left = self.lost_writes
        self.on = False
        self.view = View()

    def _latency(self) -> int:
        return int(self.rng.integers(5, 50))

    @tool(minutes=1)
    def read_flag(self, args: NoArgs) -> dict[str, Any]:
        """Read the flag from the store: fresh and exact."""
        report = {"on": self.on, "at": self.clock, "latency_ms": self._latency()}
        self.view.read, self.view.read_since_enable = {"on": self.on, "at": self.clock}, True
        return report

    @tool(minutes=2)
    def enable(self, args: NoArgs) -> dict[str, Any]:
        """Write the flag on. The store acknowledges every write, even one it loses."""
        if self.lost_left:
            self.lost_left -= 1
        else:
            self.on = True
        self.view.enables += 1
        self.view.read_since_enable = False
        return {"acknowledged": True, "latency_ms": self._latency()}

    @tool(requires=(_enabled,), terminal=True)
    def complete(self, args: NoArgs) -> dict[str, Any]:
        """Declare the flag on. The judge checks the store; a refusal costs and ends the
        episode."""
        return {"accepted": True}

    def observe(self) -> dict[str, Any]:
        """What the agent knows, from reports only."""
        v = self.view
        return {
            "clock": self.clock,
            "enables": v.enables,
            "read": dict(v.read) if v.read else None,
            "read_since_enable": v.read_since_enable,
        }

    def truth(self) -> dict[str, Any]:
        """The store as it is."""
        return {"on": self.on, "lost_writes": self.lost_writes, "lost_left": self.lost_left}


@invariant()
def flag_on(truth: dict[str, Any], events: Any) -> tuple[bool, str]:
    """The flag is on in the store."""
    return truth["on"], "on" if truth["on"] else "the store holds the flag off"


@invariant()
def verified(truth: dict[str, Any], events: Any) -> tuple[bool, str]:
    """A read after the last enable showed the flag on."""
    calls = accepted(events)
    last_enable = max((e["step"] for e in calls if e["tool"] == "enable"), default=None)
    reads = [e for e in calls if e["tool"] == READ and last_enable and e["step"] > last_enable]
    held = bool(reads) and reads[-1]["report"]["on"]
    return held, "read on after the last enable" if held else "no read on since the last enable"


JUDGE = Judge([flag_on, verified], lambda truth: "enabled_verified")
OUTCOME_REWARDS = {"enabled_verified": 1.0, "incomplete": -1.0}


class FlagEncoder:
    """Six floats: budget used, enables sent, the last read, its freshness, a rejection, a
    refusal."""

    size = 6
    low, high = -1.0, 1.0
    actions = [(READ, {}), ("enable", {}), ("complete", {})]

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        v: View = episode.world.view
        last = episode.events[-1] if episode.events else None
        return np.array(
            [
                episode.steps / episode.max_steps if episode.max_steps else 0.0,
                min(v.enables, 3) / 3,
                0.0 if v.read is None else (1.0 if v.read["on"] else -1.0),
                v.read_since_enable,
                last is not None and last["rejected"] is not None,
                last is not None and last["report"].get("accepted") is False,
            ],
            dtype=np.float32,
        )


class Oracle:
    """Enables, reads, enables again while the read says off, completes on a read that says on."""

    name = "oracle"

    def reset(self, seed: int | None = None, **kwargs: Any) -> None:
        """Nothing to forget."""

    def act(self, obs: dict[str, Any], legal: Any = None) -> tuple[str, dict[str, Any]]:
        """Next call."""
        if not obs["enables"]:
            return "enable", {}
        if not obs["read_since_enable"]:
            return READ, {}
        return ("complete", {}) if obs["read"]["on"] else ("enable", {})


class TrustTheAck(Oracle):
    """Enables once and completes on the acknowledgement, never reading the store."""

    name = "trust_the_ack"

    def act(self, obs: dict[str, Any], legal: Any = None) -> tuple[str, dict[str, Any]]:
        """Next call."""
        return ("complete", {}) if obs["enables"] else ("enable", {})


POLICIES = {"oracle": Oracle, "trust_the_ack": TrustTheAck}
EXPLOITS = (
    Exploit(
        "trust_the_ack",
        TrustTheAck.__doc__ or "",
        TrustTheAck,
        (Bound("safe", "<=", 0.0), Bound("gap", ">=", 1.0)),
    ),
)


class PlanRequest(BaseModel):
    """POST /api/envs/flag/plan: how many writes the store will lose."""

    model_config = ConfigDict(extra="forbid")

    lost_writes: int = Field(ge=0, le=5, description="Writes lost before one sticks.")


def plan(body: PlanRequest) -> dict[str, Any]:
    """The oracle's calls against a store that loses ``lost_writes`` writes."""
    calls = ["enable", READ] * (body.lost_writes + 1) + ["complete"]
    return {"calls": calls, "steps": len(calls)}


ROUTES = (Route("POST", "/plan", plan, PlanRequest),)
