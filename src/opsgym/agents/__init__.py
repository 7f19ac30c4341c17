"""Agents: the Policy protocol and reference policies."""

from opsgym.agents import (
    llm,  # registers the llm: and planner: policies
    trained,  # registers ppo:
)
from opsgym.agents.base import (
    Policy,
    RandomPolicy,
    get_policy,
    is_deterministic,
    legal_calls,
    play,
    policy_names,
    policy_rng,
)
from opsgym.core.seat import Seat

__all__ = [
    "Policy",
    "RandomPolicy",
    "get_policy",
    "is_deterministic",
    "legal_calls",
    "llm",
    "trained",
    "play",
    "policy_names",
    "policy_rng",
    "Seat",
]
