"""An adaptive curriculum: levels of difficulty that follow an agent's recent results.

A curriculum holds an ordered list of levels, each the ``config`` to pass to ``opsgym.make``.
After each episode, ``record(passed, score)`` updates it:

* **escalate** to the next level when the pass rate over the window is above
  ``escalate_above`` with a rising trend (least-squares slope of the pass indicator above
  ``min_trend``; a window with every episode passed counts as rising, since it cannot rise
  further), once at least ``escalate_cooldown`` episodes were played at the current level;
* **back off** to the previous level when the pass rate is below ``backoff_below``, once at least
  ``backoff_cooldown`` episodes were played at the current level.

The window holds the last ``window`` episodes played at the current level, so results from an
easier level never push an agent up a harder one.

``record`` returns a **meta-reward** for advancing and mastering, never for oscillating. It is
potential-based: ``meta_weight x (mastery after - mastery before)``, where *mastery* is the
level's index plus the pass rate over the window, once the window holds ``window`` episodes
(a smaller window counts for its share). It telescopes: over any run, the meta-rewards sum to
``meta_weight x (mastery at the end - mastery at the start)``, so alternating passes and
failures at one level earns at most the pass rate it ends on (about ``meta_weight / 2``), while
passing every episode climbs to the top level and a full window there (``meta_weight x
levels``). A back-off costs what the lost level was worth. ``state()`` and ``events`` expose
everything, for logs and dashboards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _slope(values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against their index (0 for fewer than two)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


class Curriculum:
    """Adaptive difficulty over ordered levels.

    Args:
        levels: The ``config`` of each level, easiest first.
        window: Episodes (at the current level) the pass rate and trend are taken over.
        escalate_above: Pass rate above which the level may rise.
        backoff_below: Pass rate below which the level falls.
        min_trend: Slope of the pass indicator per episode that counts as rising.
        escalate_cooldown: Episodes at a level before it may rise.
        backoff_cooldown: Episodes at a level before it may fall.
        meta_weight: Weight of the meta-reward (per level mastered).
        start: Index of the first level.
    """

    def __init__(
        self,
        levels: Sequence[Mapping[str, Any]],
        *,
        window: int = 20,
        escalate_above: float = 0.75,
        backoff_below: float = 0.20,
        min_trend: float = 0.01,
        escalate_cooldown: int = 10,
        backoff_cooldown: int = 5,
        meta_weight: float = 0.1,
        start: int = 0,
    ):
        if not levels:
            raise ValueError("a curriculum needs at least one level, got none")
        if not 0 <= start < len(levels):
            raise ValueError(f"start must be in [0, {len(levels)}), got {start!r}")
        if window < 1 or escalate_cooldown < 1 or backoff_cooldown < 1:
            raise ValueError(
                f"window and cooldowns must be >= 1, got {window}, {escalate_cooldown}, "
                f"{backoff_cooldown}"
            )
        self.levels = [dict(level) for level in levels]
        self.window = window
        self.escalate_above = escalate_above
        self.backoff_below = backoff_below
        self.min_trend = min_trend
        self.escalate_cooldown = escalate_cooldown
        self.backoff_cooldown = backoff_cooldown
        self.meta_weight = meta_weight
        self.level = start
        self.episodes = 0
        self.events: list[dict[str, Any]] = []
        """Every level change: episode, kind, from, to, pass_rate, trend."""
        self._passes: list[float] = []
        self._scores: list[float] = []
        self._since_change = 0
        self._last_meta = 0.0

    @property
    def config(self) -> dict[str, Any]:
        """The current level's ``config``."""
        return dict(self.levels[self.level])

    @property
    def pass_rate(self) -> float:
        """Share of the window's episodes that passed (0 when empty)."""
        return sum(self._passes) / len(self._passes) if self._passes else 0.0

    @property
    def trend(self) -> float:
        """Least-squares slope of the window's pass indicator, per episode."""
        return _slope(self._passes)

    def record(self, passed: bool, score: float | None = None) -> float:
        """Add one episode's result; move the level if the rules say so; return the meta-reward.

        Args:
            passed: Whether the episode passed its task.
            score: Its graded score (defaults to 1.0 if passed, else 0.0).
        """
        value = float(passed) if score is None else float(score)
        before = self.mastery
        self._scores.append(value)
        self._passes = [*self._passes[-(self.window - 1) :], float(bool(passed))]
        self.episodes += 1
        self._since_change += 1
        rate, trend = self.pass_rate, self.trend
        rising = trend > self.min_trend or rate >= 1.0
        if (
            self.level + 1 < len(self.levels)
            and self._since_change >= self.escalate_cooldown
            and rate > self.escalate_above
            and rising
        ):
            self._move(+1, "escalate", rate, trend)
        elif (
            self.level > 0
            and self._since_change >= self.backoff_cooldown
            and rate < self.backoff_below
        ):
            self._move(-1, "backoff", rate, trend)
        self._last_meta = self.meta_weight * (self.mastery - before)
        return self._last_meta

    @property
    def mastery(self) -> float:
        """The level's index plus the window's pass count over the window's size: the
        potential whose changes the meta-reward pays.
        """
        return self.level + sum(self._passes) / self.window

    def _move(self, step: int, kind: str, rate: float, trend: float) -> None:
        self.events.append(
            {
                "episode": self.episodes,
                "kind": kind,
                "from": self.level,
                "to": self.level + step,
                "pass_rate": round(rate, 4),
                "trend": round(trend, 4),
            }
        )
        self.level += step
        self._since_change = 0
        self._passes = []

    def state(self) -> dict[str, Any]:
        """Everything about the curriculum now, JSON-serialisable."""
        return {
            "level": self.level,
            "config": self.config,
            "levels": len(self.levels),
            "episodes": self.episodes,
            "episodes_at_level": self._since_change,
            "window": list(self._passes),
            "pass_rate": round(self.pass_rate, 4),
            "trend": round(self.trend, 4),
            "cooldown_left": {
                "escalate": max(0, self.escalate_cooldown - self._since_change),
                "backoff": max(0, self.backoff_cooldown - self._since_change),
            },
            "mastery": round(self.mastery, 4),
            "last_meta_reward": self._last_meta,
            "events": [dict(e) for e in self.events],
        }
