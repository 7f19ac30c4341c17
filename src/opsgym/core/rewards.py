"""Rewards as named components.

A world never returns a bare number: it adds amounts to named components (``downtime``,
``retry``, ...) and the ledger weighs them with the environment's reward table. Each step's
components are recorded in the trajectory, so every reward can be explained after the fact and
a reward audit can ask which component an exploit farms.
"""

from __future__ import annotations

from collections.abc import Mapping

from opsgym.core.errors import UnknownNameError


class RewardLedger:
    """Per-step and per-episode sums of weighted reward components.

    Args:
        table: Weight of each component. Amounts are multiplied by it; an unknown component
            is a programming error.
    """

    __slots__ = ("table", "_step", "totals")

    def __init__(self, table: Mapping[str, float]):
        self.table = dict(table)
        self._step: dict[str, float] = {}
        self.totals: dict[str, float] = dict.fromkeys(self.table, 0.0)

    def add(self, component: str, amount: float = 1.0) -> None:
        """Add ``amount`` units of ``component`` to the current step."""
        try:
            weighted = self.table[component] * amount
        except KeyError:
            raise UnknownNameError("reward component", component, self.table) from None
        if weighted:
            self._step[component] = self._step.get(component, 0.0) + weighted

    def close_step(self) -> dict[str, float]:
        """End the current step; return its weighted components and start a new one."""
        step, self._step = self._step, {}
        for name, value in step.items():
            self.totals[name] += value
        return step

    @property
    def total(self) -> float:
        """Sum of every component over the episode so far."""
        return sum(self.totals.values())
