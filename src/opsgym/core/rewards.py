"""Rewards as named components, and when each is paid.

A world never returns a bare number: it adds amounts to named components (``downtime``,
``retry``, ...) and the ledger weighs them with the environment's reward table. Each step's
components are recorded in the trajectory, so every reward can be explained after the fact and
a reward audit can ask which component an exploit farms.

Components come in two kinds:

* **immediate**: a function of what the agent was told and of its own calls (a step cost, a
  rejected call, progress the agent saw reported). Paid on the step that earned it.
* **settled**: computed from hidden facts (traffic moved onto a broken release, a block whose
  rule truly held). Paid on the step an agent earns it, these would tell the agent the hidden
  state through its reward. They accrue out of sight and are paid on the episode's last step;
  the return is the same, only the timing moves. ``reward_timing="dense"`` pays them at once,
  for users who want shaped RL signal and accept that it leaks; evaluations and the audit
  refuse it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from opsgym.core.errors import OpsgymError, UnknownNameError

REWARD_TIMINGS = ("end", "dense")
"""``end``: settled components are paid on the last step (the default, leak-free).
``dense``: every component is paid on the step that earned it (leaks hidden facts)."""


def check_reward_timing(timing: object) -> str:
    """Return ``timing`` if it names a reward timing, else raise with the known names."""
    if timing not in REWARD_TIMINGS:
        raise UnknownNameError("reward timing", timing, REWARD_TIMINGS)
    return timing


class LeakingConfigError(OpsgymError, ValueError):
    """An evaluation or audit was asked to run with a setting that leaks hidden facts."""


class RewardLedger:
    """Per-step and per-episode sums of weighted reward components.

    Args:
        table: Weight of each component. Amounts are multiplied by it; an unknown component
            is a programming error.
        settled: Components computed from hidden facts, held back until the last step.
        timing: ``"end"`` (hold settled components back) or ``"dense"`` (pay at once).
    """

    __slots__ = ("table", "settled", "timing", "_step", "_held", "_accrued", "totals", "accrued")

    def __init__(
        self,
        table: Mapping[str, float],
        settled: Iterable[str] = (),
        timing: str = "end",
    ):
        self.table = dict(table)
        self.settled = frozenset(settled)
        unknown = self.settled - set(self.table)
        if unknown:
            raise UnknownNameError("settled reward component", sorted(unknown)[0], self.table)
        self.timing = check_reward_timing(timing)
        self._step: dict[str, float] = {}
        self._held: dict[str, float] = {}
        self._accrued: dict[str, float] = {}
        self.totals: dict[str, float] = dict.fromkeys(self.table, 0.0)
        """What has been *paid* so far, by component (settled amounts count once paid)."""
        self.accrued: dict[str, float] = {}
        """Settled amounts the last closed step earned and held back (for the record's truth)."""

    def add(self, component: str, amount: float = 1.0) -> None:
        """Add ``amount`` units of ``component`` to the current step (or hold it back)."""
        try:
            weighted = self.table[component] * amount
        except KeyError:
            raise UnknownNameError("reward component", component, self.table) from None
        if not weighted:
            return
        if component in self.settled and self.timing == "end":
            self._held[component] = self._held.get(component, 0.0) + weighted
            self._accrued[component] = self._accrued.get(component, 0.0) + weighted
        else:
            self._step[component] = self._step.get(component, 0.0) + weighted

    def close_step(self, final: bool = False) -> dict[str, float]:
        """End the current step; return what it pays, by component, and start a new one.

        On the ``final`` step every held-back settled amount is paid as well.
        """
        step, self._step = self._step, {}
        self.accrued, self._accrued = self._accrued, {}
        if final and self._held:
            for name, value in self._held.items():
                step[name] = step.get(name, 0.0) + value
            self._held = {}
        for name, value in step.items():
            self.totals[name] += value
        return step

    @property
    def held(self) -> dict[str, float]:
        """Settled amounts earned so far and not yet paid (hidden from the agent)."""
        return dict(self._held)

    @property
    def total(self) -> float:
        """Sum of every component paid over the episode so far."""
        return sum(self.totals.values())
