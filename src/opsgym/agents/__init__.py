"""Agents: the Policy protocol and reference policies."""

from opsgym.agents.base import Policy, RandomPolicy, get_policy, legal_calls, play

__all__ = ["Policy", "RandomPolicy", "get_policy", "legal_calls", "play"]
