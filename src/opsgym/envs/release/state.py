"""The blue-green release's state: the truth, the agent's view, tool arguments, preconditions.

The constants the world, its encoder, its policies and its batched twin share live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from opsgym.core.tools import Args

WINDOW_MINUTES = 150.0
"""The release window: the world's ``deadline``, which the encoder scales the clock by."""
CANARY_SHARE = 0.10
"""Above this share of traffic a v2 that degrades under load is no longer healthy."""
ERROR_RATE_ALARM = 0.01
"""An error rate above this in a health report is a warning sign even when status is healthy."""
LADDER = (10, 50, 100)
"""The canary ladder that ``shift_traffic`` climbs when no percent is given."""
RESTART_WINDOW = 10.0
"""A health report's ``restarts`` counts the pool's restarts in this many trailing minutes."""
STORM_RESTART_EVERY = 2.0
"""Minutes between restarts of green while a restart storm lasts."""


@dataclass(slots=True)
class Truth:
    """What is really so. Never shown to the agent during an episode."""

    green_deployed: bool = False
    restarts: list[float] = field(default_factory=list)
    """When green's processes restarted (crash-loops, a storm)."""
    storm_until: float = 0.0
    """Green crash-loops until then: a deploy was rolled out again over a running v2."""
    schema: int = 1
    schema_writes: int = 0
    corrupted: bool = False
    green_share: float = 0.0
    changed_at: dict[str, float] = field(default_factory=lambda: {"green": 0.0, "blue": 0.0})
    full_load_since: float | None = None
    downtime: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class View:
    """What the agent has been told. The only input to observations and preconditions."""

    staged: bool = False
    deploy: str = "none"  # none | ok | timeout | committed | absent
    migration: str = "none"  # none | ok | no_ack | applied | absent
    schema: int = 1
    requested_green: int = 0
    observed_green: int | None = None
    rolled_back: bool = False
    changed_at: dict[str, float] = field(default_factory=lambda: {"green": 0.0, "blue": 0.0})
    traffic_changed_at: float | None = None
    health: dict[str, dict[str, Any] | None] = field(
        default_factory=lambda: {"green": None, "blue": None}
    )
    verify: dict[str, Any] | None = None
    retryable: str | None = None
    blind_retries: int = 0

    def unresolved(self) -> list[str]:
        """Operations whose outcome was ambiguous and has not been inspected."""
        return [
            op
            for op, s in (("deploy", self.deploy), ("migration", self.migration))
            if s in ("timeout", "no_ack")
        ]

    def deploy_confirmed(self) -> bool:
        """Whether v2 is known to run on green."""
        return self.deploy in ("ok", "committed")


# -- preconditions: functions of the view only ------------------------------------------


def not_staged(view: View, args: Args) -> str | None:
    """v2 is not staged yet."""
    return "v2 is already staged" if view.staged else None


def staged(view: View, args: Args) -> str | None:
    """v2 is staged (call stage first)."""
    return None if view.staged else "v2 is not staged; call stage first"


def no_deploy_in_flight(view: View, args: Args) -> str | None:
    """No deploy of v2 is done or unresolved (use inspect or retry after a timeout)."""
    if view.deploy in ("none", "absent"):
        return None
    if view.deploy == "timeout":
        return "the last deploy timed out and is unresolved; inspect it, or retry"
    return "v2 is already deployed on green"


def deploy_confirmed(view: View, args: Args) -> str | None:
    """The v2 deploy is confirmed, by a success report or an inspection."""
    return (
        None
        if view.deploy_confirmed()
        else f"the v2 deploy is not confirmed (state: {view.deploy})"
    )


def migration_not_started(view: View, args: Args) -> str | None:
    """The schema is not known to be v2 and no migration is unresolved."""
    if view.migration == "no_ack":
        return "the last migration was not acknowledged; inspect it, or retry"
    if view.schema == 2:
        return "the schema is already v2"
    return None


def something_to_retry(view: View, args: Args) -> str | None:
    """The last deploy or migration timed out, lost its acknowledgement or was found absent."""
    return None if view.retryable else "no failed or unresolved operation to retry"


def deploy_attempted(view: View, args: Args) -> str | None:
    """A v2 deploy has been attempted."""
    return None if view.deploy != "none" else "nothing to roll back: no v2 deploy was attempted"


# -- arguments --------------------------------------------------------------------------


class InspectArgs(Args):
    """Arguments of ``inspect``."""

    target: Literal["all", "deploy", "migration", "router"] = Field(
        "all", description="What to read: the deploy, the migration ledger, the router, or all."
    )


class HealthArgs(Args):
    """Arguments of ``health_check``."""

    target: Literal["auto", "green", "blue"] = Field(
        "auto",
        description="Pool to probe. 'auto' is green while v2 is (being) released, blue after a "
        "rollback or before any deploy.",
    )


class ShiftArgs(Args):
    """Arguments of ``shift_traffic``."""

    percent: int | None = Field(
        None,
        ge=0,
        le=100,
        description="Share of traffic for green (v2), 0-100. Omitted: re-apply the last request "
        "if the router was seen short of it, else climb the canary ladder 10 -> 50 -> 100.",
    )
