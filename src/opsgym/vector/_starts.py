"""How a release episode starts: its family and hidden facts from its first draws, and a
queue of every lane's next starts computed ahead in bulk.

:class:`Facts` is ``Episode._draw_family`` (for ``mixed``), ``scenarios.draw`` and the
overrides, over arrays of episodes: the same facts from the same 18 doubles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.release.scenarios import BASE
from opsgym.envs.release.world import ERROR_RATE_ALARM
from opsgym.vector._pyfloat import round_steps, rounded

FACTS = (
    "deploy_times_out",
    "deploy_committed",
    "v2_broken",
    "broken_error_rate",
    "migration_ack_lost",
    "migration_written",
    "v2_flapping",
    "flap_healthy",
    "v2_degrades",
    "shift_fraction",
    "stale_minutes",
    "degrade_after",
    "deploy_minutes",
    "migrate_minutes",
    "storm_minutes",
)
"""The hidden facts ``scenarios.draw`` gives a release episode (the overridable ones)."""
FLOATS = (
    "broken_error_rate",
    "flap_healthy",
    "shift_fraction",
    "stale_minutes",
    "degrade_after",
    "deploy_minutes",
    "migrate_minutes",
    "storm_minutes",
)
BOOLS = (
    *(f for f in FACTS if f not in FLOATS),
    "sound",  # neither broken nor crash-looping
    "looping",  # crash-looping and not broken: its probes and verifies read their draws
    "alarm_unsure",  # broken, its error rate forced so near the alarm that a draw decides
)
"""The facts as :meth:`Facts.of` returns them: float rows, then bool rows (with three the
batch derives from them)."""
DRAWS = 18
"""Numbers an episode draws at reset: the ``mixed`` family, then 17 for the facts."""

_RATES = tuple(BASE)
_FLAP = round_steps(0.4, 0.8, 3)
_FRACTION = round_steps(0.3, 0.8, 2)
_ERROR_RATE = round_steps(0.4, 0.9, 3)
ALARM_AT = round_steps(ERROR_RATE_ALARM, ERROR_RATE_ALARM, 3)[0][1]
"""The least error rate (before rounding to 3 places) a report shows above the alarm level."""


class Facts:
    """The facts of episodes of ``families`` drawn in ``split``, with ``overrides`` forced.

    Args:
        families: The world's named families, in order (a lane's family is an index).
        pool: The indices of the families a ``mixed`` episode draws from (its split's).
        overrides: Facts forced in every episode, ``family`` too if every lane is ``mixed``.
        all_mixed: Whether every lane plays ``mixed`` (``family`` may be forced only then).
    """

    def __init__(
        self,
        families: tuple[Scenario, ...],
        pool: list[int],
        overrides: dict[str, Any],
        all_mixed: bool,
    ):
        self.names = [f.name for f in families]
        for key in overrides:
            if key == "family" and all_mixed:
                if overrides[key] not in self.names:
                    raise UnknownNameError("family", overrides[key], self.names)
            elif key not in FACTS:
                raise UnknownNameError("release override", key, FACTS)
        self.overrides = overrides
        weights = np.array([families[i].weight for i in pool], dtype=float)
        self._cdf = (weights / weights.sum()).cumsum()  # as rng.choice(len(pool), p=...)
        self._cdf /= self._cdf[-1]
        self._pool = np.array(pool)
        self._rates = np.array([[f.params[r] for r in _RATES] for f in families]).T

    def of(
        self, draws: np.ndarray, mixed: np.ndarray, named: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(family, float facts, bool facts)`` of episodes from their first draws
        (``(18, episodes)``); facts are rows in the order of ``FLOATS`` and ``BOOLS``.
        """
        family = named
        if mixed.any():
            drawn = self._pool[np.searchsorted(self._cdf, draws[0], side="right")]
            if "family" in self.overrides:  # Episode draws the number, then forces the family
                drawn[:] = self.names.index(self.overrides["family"])
            family = np.where(mixed, drawn, named)
        u = np.where(mixed, draws[1:DRAWS], draws[0 : DRAWS - 1])
        p = dict(zip(_RATES, self._rates[:, family], strict=True))
        partial, stale = u[9] < p["p_partial"], u[11] < p["p_stale"]
        facts = {
            "deploy_times_out": u[0] < p["p_timeout"],
            "deploy_committed": u[1] < p["p_committed"],
            "v2_broken": u[2] < p["p_broken"],
            "broken_error_rate": rounded(_ERROR_RATE, 0.4 + 0.5 * u[3]),
            "migration_ack_lost": u[4] < p["p_ack_lost"],
            "migration_written": u[5] < p["p_written"],
            "v2_flapping": u[6] < p["p_flapping"],
            "flap_healthy": rounded(_FLAP, 0.4 + 0.4 * u[7]),
            "v2_degrades": u[8] < p["p_degrades"],
            "shift_fraction": np.where(partial, rounded(_FRACTION, 0.3 + 0.5 * u[10]), 1.0),
            "stale_minutes": np.where(stale, 2.0 + np.floor(4 * u[12]), 0.0),
            "degrade_after": 3.0 + np.floor(4 * u[13]),
            "deploy_minutes": 4.0 + np.floor(3 * u[14]),
            "migrate_minutes": 3.0 + np.floor(3 * u[15]),
            "storm_minutes": 6.0 + np.floor(7 * u[16]),
        }
        for key, value in self.overrides.items():
            if key != "family":
                facts[key] = np.full(family.shape, value)
        broken, flapping = facts["v2_broken"], facts["v2_flapping"]
        rate = facts["broken_error_rate"]
        facts["sound"] = ~(broken | flapping)
        facts["looping"] = flapping & ~broken
        facts["alarm_unsure"] = (  # 0.9 + 0.2 * u spreads a probe's rate over [0.9, 1.1)
            broken
            & (np.minimum(rate * 0.9, 1) < ALARM_AT)
            & (np.minimum(rate * (0.9 + 0.2), 1) >= ALARM_AT)
        )
        floats = np.stack([np.broadcast_to(facts[k], family.shape) for k in FLOATS])
        bools = np.stack([np.broadcast_to(facts[k], family.shape) for k in BOOLS])
        return family, floats, bools


class StartQueue:
    """Each lane's next episode starts, computed ahead for many lanes and episodes at once.

    A lane's episodes are known before they are played: its seed stream and each episode's
    first draws do not depend on the actions. Computing them for one lane at a time costs a
    few hundred small array operations per reset; computing ``batch`` of them for every lane
    that has room costs the same operations on arrays thousands of times longer, once every
    few hundred steps. Each lane's queue is a ring of ``capacity`` starts, refilled (for every
    lane with room for a batch) when a lane runs out.

    Args:
        streams: The lanes' :class:`~opsgym.vector._streams.PCGStreams`.
        facts: How the batch draws its facts.
        mixed: Which lanes play ``mixed``.
        named: Each lane's family index where it does not.
        capacity: Starts held per lane.
        batch: Starts computed per lane at a refill.
    """

    def __init__(
        self,
        streams: Any,
        facts: Facts,
        mixed: np.ndarray,
        named: np.ndarray,
        capacity: int = 16,
        batch: int = 8,
    ):
        n = mixed.size
        self.streams, self.facts, self.mixed, self.named = streams, facts, mixed, named
        self.capacity, self.batch = capacity, batch
        self.head = np.zeros(n, np.int64)
        self.count = np.zeros(n, np.int64)
        self.seeds = np.zeros((capacity, n), np.int64)
        self.family = np.zeros((capacity, n), np.int32)
        self.floats = np.zeros((len(FLOATS), capacity, n))
        self.bools = np.zeros((len(BOOLS), capacity, n), bool)
        self.states = np.zeros((4, capacity, n), np.uint64)

    def pop(self, lanes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Take the next start of each of ``lanes``: ``(seeds, family, float facts, bool
        facts)``; resume their episode streams there.
        """
        if not self.count[lanes].all():
            self._refill()
        at = self.head[lanes]
        self.head[lanes] = (at + 1) % self.capacity
        self.count[lanes] -= 1
        self.streams.resume(lanes, self.states[:, at, lanes])
        return (
            self.seeds[at, lanes],
            self.family[at, lanes],
            self.floats[:, at, lanes],
            self.bools[:, at, lanes],
        )

    def _refill(self) -> None:
        k = self.batch
        lanes = np.flatnonzero(self.count <= self.capacity - k)
        seeds, draws, states = self.streams.starts(lanes, k, DRAWS)
        mixed = np.tile(self.mixed[lanes], k)
        family, floats, bools = self.facts.of(
            draws.reshape(DRAWS, -1), mixed, np.tile(self.named[lanes], k)
        )
        at = (self.head[lanes] + self.count[lanes] + np.arange(k)[:, None]) % self.capacity
        self.seeds[at, lanes] = seeds
        self.family[at, lanes] = family.reshape(k, -1)
        self.floats[:, at, lanes] = floats.reshape(len(floats), k, -1)
        self.bools[:, at, lanes] = bools.reshape(len(bools), k, -1)
        # a named scenario's episode drew 17 numbers at reset, a mixed one 18
        after = np.where(mixed, states[:, 1].reshape(4, -1), states[:, 0].reshape(4, -1))
        self.states[:, at, lanes] = after.reshape(4, k, -1)
        self.count[lanes] += k
