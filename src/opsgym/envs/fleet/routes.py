"""The fleet's own HTTP route: ``POST /api/envs/fleet/compose``, the challenge generator.

Declared as data (:class:`~opsgym.core.spec.Route`): the server mounts it under the world's
prefix and validates the body with these models; nothing here imports the server.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from opsgym.core.spec import Route
from opsgym.envs.fleet.scenarios import compose


class ComposeParams(BaseModel):
    """The task parameters a fleet challenge may override (:func:`~.tasks.compose`)."""

    model_config = ConfigDict(extra="forbid")

    presence: float | None = Field(None, gt=0, le=1, description="Share of seeds with each fault.")
    max_steps: int | None = Field(None, ge=1, le=10_000, description="The step budget.")
    gated: bool | None = Field(None, description="Strict phase gating.")
    harsh: bool | None = Field(None, description="Decoys, wrapped logs, irreversible mistakes.")
    coalition: bool | None = Field(None, description="Coordination sub-goals.")
    slo_minutes: float | None = Field(None, gt=0, description="Lost training a pass may cost.")


class ComposeRequest(BaseModel):
    """POST /api/envs/fleet/compose: a challenge made of faults, in order."""

    model_config = ConfigDict(extra="forbid")

    faults: list[str] = Field(min_length=1, max_length=6)
    name: str | None = Field(None, max_length=128)
    params: ComposeParams = Field(default_factory=ComposeParams)


class Challenge(BaseModel):
    """What POST /api/envs/fleet/compose answers: the generated challenge."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The challenge's scenario name (its faults joined by '+').")
    description: str
    faults: list[str] = Field(description="The faults it injects, in order.")
    params: dict[str, Any] = Field(description="The task parameters it runs with.")
    hidden_facts: list[str] = Field(description="The hidden facts its seeds draw.")


def compose_challenge(body: ComposeRequest) -> dict[str, Any]:
    """Generate a fleet challenge from faults (what the generated incident holds)."""
    params = body.params.model_dump(exclude_none=True)
    scenario = compose(*body.faults, name=body.name, **params)
    return {
        "name": scenario.name,
        "description": scenario.description,
        "faults": list(scenario.faults),
        "params": scenario.params,
        "hidden_facts": sorted(scenario.hidden),
    }


ROUTES = (Route("POST", "/compose", compose_challenge, ComposeRequest, Challenge),)
