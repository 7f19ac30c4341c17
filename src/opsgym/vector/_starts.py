"""How batched episodes start: the ``mixed`` family from the first draw, and a queue of every
lane's next starts computed ahead in bulk (whatever a world's start holds).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario


class FamilyDraw:
    """``Episode._draw_family`` over arrays of episodes: a ``mixed`` episode's family is
    ``rng.choice(len(pool), p=weights)`` of its first double; a forced ``family`` replaces it
    (the number is drawn all the same).

    Args:
        families: The world's named families, in order (a lane's family is an index).
        pool: The indices of the families a ``mixed`` episode draws from (its split's).
        forced: The family forced by ``overrides``, or ``None``.
    """

    def __init__(self, families: tuple[Scenario, ...], pool: list[int], forced: str | None):
        self.names = [f.name for f in families]
        if forced is not None and forced not in self.names:
            raise UnknownNameError("family", forced, self.names)
        self.forced = None if forced is None else self.names.index(forced)
        weights = np.array([families[i].weight for i in pool], dtype=float)
        self._cdf = (weights / weights.sum()).cumsum()  # as rng.choice(len(pool), p=...)
        self._cdf /= self._cdf[-1]
        self._pool = np.array(pool)

    def of(self, u0: np.ndarray, mixed: np.ndarray, named: np.ndarray) -> np.ndarray:
        """Each episode's family index: drawn from ``u0`` where ``mixed``, else ``named``."""
        if not mixed.any():
            return named
        if self.forced is not None:
            return np.where(mixed, self.forced, named)
        return np.where(mixed, self._pool[np.searchsorted(self._cdf, u0, side="right")], named)


Compute = Callable[[np.ndarray, int], dict[str, np.ndarray]]
"""``compute(lanes, k)``: the next ``k`` starts of each of ``lanes``, as arrays shaped
``(..., k, len(lanes))``, by field."""


class StartQueue:
    """Each lane's next episode starts, computed ahead for many lanes and episodes at once.

    A lane's episodes are known before they are played: its seed stream and each episode's
    draws at reset do not depend on the actions. Computing them for one lane at a time costs a
    few hundred small array operations per reset; computing ``batch`` of them for every lane
    that has room costs the same operations on arrays thousands of times longer, once every
    few hundred steps. Each lane's queue is a ring of ``capacity`` starts, refilled (for every
    lane with room for a batch) when a lane runs out.

    Args:
        num: Number of lanes.
        compute: Computes starts (see :data:`Compute`); a world's own.
        capacity: Starts held per lane.
        batch: Starts computed per lane at a refill.
    """

    def __init__(self, num: int, compute: Compute, capacity: int = 16, batch: int = 8):
        self.compute, self.capacity, self.batch = compute, capacity, batch
        self.head = np.zeros(num, np.int64)
        self.count = np.zeros(num, np.int64)
        self.fields: dict[str, np.ndarray] = {}

    def clear(self, lanes: np.ndarray) -> None:
        """Forget the starts of ``lanes`` (their seed streams were seeded anew)."""
        self.count[lanes] = 0

    def pop(self, lanes: np.ndarray) -> dict[str, np.ndarray]:
        """Take the next start of each of ``lanes``: its fields, shaped ``(..., lanes)``."""
        if not self.count[lanes].all():
            self._refill()
        at = self.head[lanes]
        self.head[lanes] = (at + 1) % self.capacity
        self.count[lanes] -= 1
        rows = at * self.head.size + lanes
        return {name: np.moveaxis(ring[rows], 0, -1) for name, ring in self.fields.items()}

    def _refill(self) -> None:
        k, n = self.batch, self.head.size
        lanes = np.flatnonzero(self.count <= self.capacity - k)
        starts = self.compute(lanes, k)
        at = (self.head[lanes] + self.count[lanes] + np.arange(k)[:, None]) % self.capacity
        rows = (at * n + lanes).ravel()
        for name, value in starts.items():
            ring = self.fields.get(name)
            if ring is None:  # a start per row (slot, lane): a pop gathers whole rows
                ring = np.zeros((self.capacity * n, *value.shape[:-2]), value.dtype)
                self.fields[name] = ring
            ring[rows] = np.moveaxis(value.reshape(*value.shape[:-2], -1), -1, 0)
        self.count[lanes] += k
