"""What every batched world shares: its lanes' scenarios, split, budgets, seeds and state blocks.

A batched world (:class:`~opsgym.vector.release.ReleaseBatch`,
:class:`~opsgym.vector.oversight.OversightBatch`) subclasses :class:`Batch`. The base checks the
arguments as the scalar Gym face does (a held-out family refused on ``train``, budgets >= 1,
``reward_timing="end"`` only), keeps each lane's state as rows of three 2-D blocks (float64,
bool, int32: one row per field, one column per lane, so a reset of many lanes is three
assignments), seeds and resets lanes through a :class:`~opsgym.vector._starts.StartQueue` or a
Generator per lane, and names outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from opsgym.core.errors import OpsgymError
from opsgym.core.registry import spec
from opsgym.core.request import check_overrides, held_out_refusal
from opsgym.core.rewards import check_reward_timing
from opsgym.core.scenarios import check_split, families
from opsgym.vector._streams import fresh_seeds


class BatchError(OpsgymError, ValueError):
    """A batch was asked for something the scalar Gym face would refuse, or cannot mirror."""


Layout = list[tuple[int, str, int | slice]]
"""Where each field of the state blocks lies: (block, name, row or rows)."""


def blocks(
    owner: Any,
    num: int,
    floats: dict[str, float],
    bools: Sequence[str],
    ints: dict[str, int],
    int_type: type[np.integer] = np.int32,
) -> Layout:
    """Give ``owner`` its state blocks ``_f``, ``_b``, ``_i`` (with their values at reset,
    ``_f_init`` and ``_i_init``) and one attribute per field, a view of its row; return
    their layout (for :func:`bind`). ``int_type`` is the integer block's (``np.int64`` where
    a field holds a set of 32 ranks as bits).

    A field named ``name`` whose rows ``name0``, ``name1``, ... follow one another also gets
    the view ``name`` of all of them (``(k, num)``): a group, such as one row per slot.
    """
    owner._f = np.empty((len(floats), num))
    owner._f_init = np.array(list(floats.values()), dtype=float)
    owner._b = np.zeros((len(bools), num), bool)
    owner._i = np.empty((len(ints), num), int_type)
    owner._i_init = np.array(list(ints.values()), int_type)
    layout: Layout = []
    for block, rows in enumerate((list(floats), list(bools), list(ints))):
        groups: dict[str, list[int]] = {}
        for row, name in enumerate(rows):
            layout.append((block, name, row))
            stem = name.rstrip("0123456789")
            if stem != name:
                groups.setdefault(stem, []).append(row)
        for stem, at in groups.items():
            if at == list(range(at[0], at[0] + len(at))) and stem not in rows:
                layout.append((block, stem, slice(at[0], at[0] + len(at))))
    bind(owner, (owner._f, owner._b, owner._i), layout)
    owner._f[:] = owner._f_init[:, None]
    owner._i[:] = owner._i_init[:, None]
    return layout


def pick(layout: Layout, names: Sequence[str]) -> tuple[list[np.ndarray], Layout]:
    """The rows of each block that fields ``names`` (groups included) occupy, and their
    layout once those rows are gathered (``block[rows[b]][:, lanes]``, for :func:`bind`).
    """
    rows: list[list[int]] = [[], [], []]
    out: Layout = []
    for block, name, at in layout:
        if name not in names:
            continue
        taken = list(range(at.start, at.stop)) if isinstance(at, slice) else [at]
        start = len(rows[block])
        rows[block] += taken
        out.append((block, name, slice(start, start + len(taken)) if len(taken) > 1 else start))
    return [np.array(r, np.intp)[:, None] for r in rows], out


def bind(owner: Any, arrays: Sequence[np.ndarray], layout: Layout) -> Any:
    """Set ``owner``'s field attributes to rows of ``arrays`` (the blocks, or some lanes'
    columns of them) as ``layout`` places them; returns ``owner``.
    """
    for block, name, at in layout:
        setattr(owner, name, arrays[block][at])
    return owner


class Batch:
    """``num`` lanes of one world, each ``gym.make(world.gym_id, scenario=..., split=...,
    overrides=..., max_steps=...)``; see the subclasses.

    Args:
        num: Number of lanes.
        scenario: One scenario for every lane, or one per lane; ``None`` for the world's first.
        split: Where episode seeds (and ``mixed`` families) come from, as in ``OpsEnv``.
        max_steps: The step budget (``None``: the registered one), as ``OpsEnv(max_steps=...)``.
        max_episode_steps: The ``TimeLimit`` of ``gym.make`` (``None``: the registered one).
        reward_timing: Only ``"end"``.
        overrides: Hidden facts forced in every episode, checked as every face checks them
            (:func:`~opsgym.core.request.check_overrides`: a held-out family forced on
            ``train`` is refused) and kept as ``overrides``.

    Subclasses set ``world`` and ``OUTCOMES``, and give ``seeds``, ``done``, ``outcome``.
    """

    world: ClassVar[str] = ""
    OUTCOMES: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        num: int,
        scenario: str | Sequence[str] | None,
        *,
        split: str,
        max_steps: int | None,
        max_episode_steps: int | None,
        reward_timing: str,
        overrides: Mapping[str, Any] | None = None,
    ):
        if num < 1:
            raise BatchError(f"num must be >= 1, got {num}")
        if check_reward_timing(reward_timing) != "end":
            raise BatchError(
                f"the batched {self.world} world pays settled rewards on the last step only "
                f"(reward_timing='end'), got {reward_timing!r}; use the scalar Gym face for dense"
            )
        self.num = n = int(num)
        self.split = check_split(split)
        world = self.spec = spec(self.world)
        self.max_steps = world.max_steps if max_steps is None else int(max_steps)
        self.time_limit = world.max_steps if max_episode_steps is None else int(max_episode_steps)
        if min(self.max_steps, self.time_limit) < 1:
            raise BatchError(
                "max_steps and max_episode_steps must be >= 1, got "
                f"{self.max_steps} and {self.time_limit}"
            )
        if scenario is None or isinstance(scenario, str):
            scenario = [world.scenario(scenario).name] * n
        names = list(scenario)
        if len(names) != n:
            raise BatchError(f"{len(names)} scenarios for {n} lanes")
        for name in set(names):
            if world.scenario(name).held_out and self.split == "train":
                raise held_out_refusal(self.world, world.scenario(name))  # every face's words
        self.scenarios = names
        self.overrides = dict(overrides or {})
        for name in set(names):
            check_overrides(world, world.scenario(name), self.split, self.overrides)
        self.families = world.families()
        named = [f.name for f in self.families]
        in_split = set(families(world.scenarios, self.split))
        self._mixed = np.array([world.scenario(s).mixture for s in names])
        self._named = np.array([named.index(s) if s in named else 0 for s in names], np.int32)
        self._pool = [i for i, name in enumerate(named) if name in in_split]
        self._lanes = np.arange(n)
        self._queue: Any = None
        self._streams: Any = None
        self.seeds = np.zeros(n, np.int64)
        """Each lane's current episode seed."""

    def seed(self, seeds: Sequence[int] | np.ndarray, lanes: np.ndarray | None = None) -> None:
        """Seed the lanes' seed streams, as ``env.reset(seed=s)`` seeds a scalar env's."""
        lanes = self._lanes if lanes is None else np.asarray(lanes)
        seeds = list(seeds)
        if len(seeds) != lanes.size:
            raise BatchError(f"{len(seeds)} seeds for {lanes.size} lanes")
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0:
                raise BatchError(f"Seed must be a python integer >= 0, got {s!r}")
        self._streams.seed(lanes, [int(s) for s in seeds])
        if self._queue is not None:
            self._queue.clear(lanes)

    def _lanes_to_reset(self, lanes: np.ndarray | None) -> np.ndarray:
        """``lanes`` as indices (all by default; indices or a mask), lanes never seeded
        seeded from fresh entropy first, as an env reset without a seed is.
        """
        lanes = self._lanes if lanes is None else np.asarray(lanes)
        if lanes.dtype == bool:
            lanes = np.flatnonzero(lanes)
        if lanes.size:
            unseeded = lanes[~self._streams.seeded(lanes)]
            if unseeded.size:
                self.seed(fresh_seeds(unseeded.size), unseeded)
        return lanes

    def _check_actions(self, actions: np.ndarray, act: np.ndarray, count: int) -> np.ndarray:
        """``actions`` as an array, refused unless one per lane and in range where ``act``."""
        a = np.asarray(actions)
        if a.shape != (self.num,):
            raise BatchError(f"actions must have shape ({self.num},), got {a.shape}")
        inside = (a >= 0) & (a < count)
        if not inside[act].all():
            bad = a[act & ~inside][0].item()
            raise BatchError(f"action must be in [0, {count}), got {bad!r}")
        return np.where(inside, a, 0)

    def outcomes(self, lanes: np.ndarray | None = None) -> list[str | None]:
        """The outcome of each lane's episode (``None`` while it runs, or if the time limit
        stopped it first).
        """
        codes = self.outcome if lanes is None else self.outcome[lanes]  # type: ignore[attr-defined]
        return [self.OUTCOMES[c] if c >= 0 else None for c in codes.tolist()]
