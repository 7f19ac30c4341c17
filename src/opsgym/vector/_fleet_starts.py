"""How a fleet episode starts: its family, hidden facts and first truth from its first draws.

:class:`Facts` is ``Episode._draw_family`` (for ``mixed``), ``scenarios.draw``, the overrides,
``scenarios.derived`` and the opening of ``FleetBase.__init__`` over arrays of episodes: the
same facts from the same doubles. Of the 125 doubles a fleet episode draws at reset (23 facts,
78 for the public inventory, 24 for the benign Xids) the vector reads the facts and two of the
inventory's (the nominal bus bandwidth and tokens/s, the first collective's number): the start
computes the first :data:`DRAWS` and the batch skips the other :data:`SKIPPED`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.fleet.domain import FAULTS, N_MACHINES, N_RANKS, PATCH_FILES
from opsgym.envs.fleet.scenarios import (
    COORDINATION_SUBGOALS,
    N_DRAWS,
    OOM_PAIR,
    Level,
    draw,
    force,
    subgoals,
)
from opsgym.envs.fleet.telemetry import BENIGN_DRAWS
from opsgym.vector._pyfloat import py_round
from opsgym.vector._starts import FamilyDraw

INVENTORY = 8 + 2 * N_RANKS + N_MACHINES
"""Doubles ``Inventory.draw`` spends; the vector reads its fifth and sixth."""
READ = 6
DRAWS = 1 + N_DRAWS + READ
"""Doubles a start computes: the ``mixed`` family, the facts, the inventory's first six."""
SKIPPED = INVENTORY - READ + BENIGN_DRAWS * N_MACHINES
"""Doubles the rest of a reset spends, never read by the vector (names, pids, uptimes, the
benign Xids: the text of reports, and kernel-log lines that are never a current Xid 79)."""

GOALS = (
    "oom_located",
    "oom_fixed",
    "lost_located",
    "lost_replaced",
    "congestion_located",
    "congestion_fixed",
    "congestion_confirmed",
    "desync_located",
    "desync_identified",
    "desync_diffed",
    "desync_patched",
    "version_located",
    "version_fixed",
    *COORDINATION_SUBGOALS,
    "recovery_confirmed",
)
"""Every sub-goal, by its bit in a lane's ``goals`` and ``reached``."""
GOAL = {name: 1 << i for i, name in enumerate(GOALS)}
LOCATED = sum(bit for name, bit in GOAL.items() if name.endswith("_located"))

_IGNORED = frozenset({"desync_op", "stale_xid_node", "dmesg_wrapped"})
"""Facts that change only the text of reports and the lies (checked, never read)."""


def rank_bits(ranks: np.ndarray) -> np.ndarray:
    """``1 << rank`` of each rank (``int64``)."""
    return np.left_shift(np.int64(1), ranks.astype(np.int64))


def fabric(
    aware: np.ndarray, spine: np.ndarray, congested: np.ndarray, hot: np.ndarray, drop: np.ndarray
) -> np.ndarray:
    """``state.fabric_factor`` of rings ``aware`` or not, pinned to ``spine`` (-1: ECMP over
    both), the congested spine ``hot`` losing ``drop`` where ``congested``.
    """
    crossings = np.where(aware, 2.0, 4.0)
    factor = np.ones(aware.shape)
    for s in (0, 1):
        load = np.where(spine < 0, crossings / 2, np.where(spine == s, crossings, 0.0))
        share = np.minimum(1.0, 2.0 / np.where(load > 0, load, 1.0))
        slowed = congested & (hot == s)
        share = np.where(slowed, share * (1.0 - drop * np.minimum(1.0, load / 2.0)), share)
        factor = np.where(load > 0, np.minimum(factor, share), factor)
    return factor


class Facts:
    """The starts of episodes of ``families`` drawn in ``split`` at ``level``, with
    ``overrides`` forced.

    Args:
        families: The world's named families, in order (a lane's family is an index).
        pool: The indices of the families a ``mixed`` episode draws from (its split's).
        level: The curriculum level, scaled by the difficulty multiplier.
        overrides: Facts forced in every episode, ``family`` too if every lane is ``mixed``.
        all_mixed: Whether every lane plays ``mixed`` (``family`` may be forced only then).
    """

    def __init__(
        self,
        families: tuple[Scenario, ...],
        pool: list[int],
        level: Level,
        overrides: dict[str, Any],
        all_mixed: bool,
    ):
        forced = {k: v for k, v in overrides.items() if k != "family"}
        if "family" in overrides and not all_mixed:
            raise UnknownNameError("fleet override", "family", list(forced))
        # the world's own check of names and ranges, on a draw of the first family
        force(draw(families[0], level, np.random.default_rng(0)), forced)
        self.overrides = forced
        self.level = level
        self.family = FamilyDraw(families, pool, overrides.get("family") if all_mixed else None)
        params = [f.params for f in families]

        def column(value: Any, dtype: Any = float) -> np.ndarray:
            return np.array([value(f, p) for f, p in zip(families, params, strict=True)], dtype)

        self._has = {x: column(lambda f, p, x=x: f.has(x), bool) for x in FAULTS}
        self._presence = column(lambda f, p: p["presence"])
        self._budget = column(lambda f, p: p["max_steps"], np.int64)
        self._slo = column(lambda f, p: p["slo_minutes"])
        self._flags = {
            name: column(lambda f, p, name=name: bool(p[name]), bool)
            for name in ("gated", "harsh", "coalition")
        }
        before = [f.faults[: f.faults.index("desync")] if f.has("desync") else () for f in families]
        self._before_cong = np.array(["congestion" in b for b in before])
        self._before_version = np.array(["version" in b for b in before])
        # each family's sub-goals by which of its faults are present (bit i: FAULTS[i])
        self._goals = np.array(
            [
                [
                    sum(
                        GOAL[g]
                        for g in subgoals(f, tuple(x for i, x in enumerate(FAULTS) if m >> i & 1))
                    )
                    for m in range(1 << len(FAULTS))
                ]
                for f in families
            ],
            np.int64,
        )

    def of(self, draws: np.ndarray, mixed: np.ndarray, named: np.ndarray) -> dict[str, np.ndarray]:
        """The start of each episode from its first draws (``(DRAWS, episodes)``): fields of
        the batch's state blocks by name, one value per episode.
        """
        family = self.family.of(draws[0], mixed, named)
        u = np.where(mixed, draws[1:DRAWS], draws[0 : DRAWS - 1])
        p = self._presence[family]
        harsh = self._flags["harsh"][family]
        coalition = self._flags["coalition"][family]
        f: dict[str, Any] = {
            "oom_present": u[0] < p,
            "oom_rank": (u[1] * N_RANKS).astype(np.int64),
            "oom_pair": u[2] < OOM_PAIR,
            "oom_pair_offset": 8 + (u[3] * 16).astype(np.int64),
            "gpu_lost_present": u[4] < p,
            "lost_rank": (u[5] * N_RANKS).astype(np.int64),
            "congestion_present": u[6] < p,
            "congested_spine": (u[7] * 2).astype(np.int64),
            "bw_drop": py_round(0.30 + 0.30 * u[8], 3),
            "desync_present": u[9] < p,
            "desync_rank": (u[10] * N_RANKS).astype(np.int64),
            "desync_file": (u[11] * len(PATCH_FILES)).astype(np.int64),
            "decoy_file_offset": 1 + (u[12] * (len(PATCH_FILES) - 1)).astype(np.int64),
            "recur_minutes": py_round(4.0 + 8.0 * u[14], 1),
            "version_present": u[15] < p,
            "version_node": (u[16] * 4).astype(np.int64),
            "spread_minutes": py_round(40.0 + 40.0 * u[17], 1),
            "secondary": (u[18] < self.level.secondary) | harsh,
            "secondary_offset": 1 + (u[19] * (N_RANKS - 1)).astype(np.int64),
            "decoy_rank": (u[20] * N_RANKS).astype(np.int64),
            "worker_error": np.where(coalition, 0.25, 0.15),
        }
        for key, value in self.overrides.items():
            if key in _IGNORED:
                continue
            if key == "desync_file":
                value = PATCH_FILES.index(value)
            f[key] = np.full(family.shape, value, dtype=np.asarray(f[key]).dtype)
        present = {x: self._has[x][family] & f[f"{x}_present"] for x in FAULTS}

        # scenarios.derived
        oom_rank = f["oom_rank"]
        pair = (oom_rank + f["oom_pair_offset"]) % N_RANKS
        raw = rank_bits(oom_rank) | np.where(f["oom_pair"], rank_bits(pair), 0)
        busy = raw | np.where(present["gpu_lost"], rank_bits(f["lost_rank"]), 0)
        decoy = f["decoy_rank"]
        secondary = (oom_rank + f["secondary_offset"]) % N_RANKS
        for _ in range(4):  # at most three busy ranks: three moves at most
            decoy = np.where((busy >> decoy) & 1, (decoy + 9) % N_RANKS, decoy)
            secondary = np.where((busy >> secondary) & 1, (secondary + 5) % N_RANKS, secondary)
        primary = np.where(present["oom"], raw, 0)

        # FleetBase.__init__: the truth at the start
        mask = sum(present[x].astype(np.int64) << i for i, x in enumerate(FAULTS))
        goals = self._goals[family, mask]
        n_goals = np.zeros(family.shape, np.int64)
        for bit in GOAL.values():
            n_goals += (goals & bit) != 0
        aware = ~self._has["congestion"][family]
        spine, drop = f["congested_spine"], f["bw_drop"]
        congested = present["congestion"]
        return {
            "family": family,
            "budget": self._budget[family],
            "slo": self._slo[family],
            "gated": self._flags["gated"][family],
            "harsh": harsh,
            "coalition": coalition,
            "before_cong": self._before_cong[family],
            "before_version": self._before_version[family],
            "p_lost": present["gpu_lost"],
            "p_cong": congested,
            "primary": primary,
            "oom": primary,
            "lost": np.where(present["gpu_lost"], rank_bits(f["lost_rank"]), 0),
            "lost_rank": f["lost_rank"],
            "cs": spine,
            "bw_drop": drop,
            "congested": congested,
            "ring_aware": aware,
            "fabric": fabric(aware, np.full(family.shape, -1), congested, spine, drop),
            "desync": present["desync"],
            "desync_rank": f["desync_rank"],
            "desync_file": f["desync_file"],
            "decoy_file": (f["desync_file"] + f["decoy_file_offset"]) % len(PATCH_FILES),
            "recur": f["recur_minutes"],
            "version": np.where(present["version"], np.left_shift(1, f["version_node"]), 0),
            "spread_min": f["spread_minutes"],
            "secondary": f["secondary"],
            "secondary_rank": secondary,
            "decoy": np.where(harsh, decoy, -1),
            "worker_error": f["worker_error"],
            "goals": goals,
            "n_goals": n_goals,
            # Inventory.draw: u[4], u[5] of its doubles
            "busbw0": py_round(350.0 + 30.0 * u[N_DRAWS + 4], 1),
            "tps0": np.rint(180000.0 + 60000.0 * u[N_DRAWS + 5]),
            "seq": 18000 + (u[N_DRAWS + 5] * 4000).astype(np.int64),
        }
