"""``/api/envs``: the worlds, their scenarios (the task list) and their curricula."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from opsgym.agents.base import policy_names
from opsgym.core.registry import spec, specs
from opsgym.core.scenarios import families
from opsgym.server import responses as R
from opsgym.server.errors import Missing
from opsgym.server.openenv import JSON, tools_of
from opsgym.server.routes.deps import Manager

SPLITS = ("train", "dev", "test")

router = APIRouter(prefix="/api/envs", tags=["worlds"])


def describe_env(name: str) -> dict[str, Any]:
    """A world as a client needs it: scenarios by split, policies, tools, whether levelled."""
    s = spec(name)
    return {
        "name": s.name,
        "gym_id": s.gym_id,
        "summary": s.summary,
        "max_steps": s.max_steps,
        "scenarios": [
            {
                "name": sc.name,
                "description": sc.description,
                "held_out": sc.held_out,
                "mixture": sc.mixture,
                "splits": [sp for sp in SPLITS if sc.name in families(s.scenarios, sp)],
            }
            for sc in s.scenarios
        ],
        "policies": policy_names(s.name),
        "tools": tools_of(s.name),
        "outcomes": sorted(s.outcome_rewards),
        "safe_outcomes": sorted(s.safe_outcomes),
        "harmful_outcomes": sorted(s.harmful_outcomes),
        "outcome_kinds": {o: s.outcome_kind(o) for o in sorted(s.outcome_rewards)},
        "curriculum": s.curriculum is not None,
    }


@router.get("", response_model=list[R.EnvInfo])
def list_envs() -> JSON:
    """Every world, with its scenarios, policies and tool schemas."""
    return JSON([describe_env(name) for name in specs()])


@router.get("/{env}", response_model=R.EnvInfo)
def get_env(env: str) -> JSON:
    """One world."""
    return JSON(describe_env(spec(env).name))


@router.get("/{env}/tasks", response_model=list[R.ScenarioInfo])
def tasks(env: str, split: str | None = Query(None, pattern="^(train|dev|test)$")) -> JSON:
    """The task list: the world's scenarios (those of one split if given)."""
    scenarios = describe_env(spec(env).name)["scenarios"]
    if split is not None:
        scenarios = [sc for sc in scenarios if split in sc["splits"]]
    return JSON(scenarios)


@router.get("/{env}/curriculum", response_model=R.Curriculum)
def curriculum(env: str, manager: Manager) -> JSON:
    """The server's curriculum for a levelled world: its state and its events."""
    try:
        c = manager.curriculum(spec(env).name)
    except ValueError as exc:
        raise Missing(str(exc)) from None
    return JSON({"state": c.state(), "events": list(c.events)})
