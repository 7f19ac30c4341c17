"""How an oversight episode starts: its random tape and what ``scenarios.draw`` makes of it.

``Episode`` seeds ``default_rng(episode_seed)``; a ``mixed`` episode draws its family (one
double), then ``scenarios.draw`` draws ``random(44)``, ``permutation(20)`` (the workers' names),
``integers(100, 899, size=5)`` (the ids) and ``random(32)`` (the pool proposals take their risk
and confidence from). Nothing is drawn after reset. The batch reads 34 of the 44 doubles (the
facts, archetypes, records, rework hours, deadline and who promotes; not the ticket's title, the
PR's size, the CI counts nor the canary's exact rate, which no observation, mask or reward
reads) and the pool; names and ids are never read, but where the pool starts depends on how
many ``uint32`` words their rejection samplers spent, so those are replayed:

* ``permutation(20)`` shuffles with ``random_interval(i)`` for ``i = 19 .. 1``: a word masked
  to the smallest all-ones mask over ``i``, drawn again while it exceeds ``i``;
* ``integers(100, 899)`` is Lemire's method on a word times 799, drawn again while the low half
  of the product is under ``(2**32 - 799) % 799``;
* words are the halves of raw draws (low first), buffered across calls; ``random()`` takes a
  whole draw, so the pool starts at the draw after the last one a word came from.

:func:`pcg_tape` does this for many episodes at once on PCG64 arrays (episodes whose samplers
run past the words it computed, a few in a million, fall back to a Generator);
:func:`generator_tape` with one NumPy Generator per episode (the reference).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.oversight.domain import ARCHETYPES, RULES
from opsgym.envs.oversight.scenarios import (
    _TRACK_RATE,
    ARCHETYPE_MIXES,
    FACT_VALUES,
    OVERRIDABLE,
    Difficulty,
    presence,
)
from opsgym.vector import _pcg
from opsgym.vector._starts import FamilyDraw

USED = 34
"""Doubles of ``random(44)`` the batch reads (``u[0:34]``)."""
SKIPPED = 44 - USED
POOL = 32
KEPT = 8
"""Pool doubles computed at reset (proposals 0-3 read them); the others, where a later
proposal reads them, by a jump of the LCG from the pool's start (:func:`pool_draws`)."""
WORDS = 48
"""``uint32`` words computed for the samplers (31 are spent on average; more in 1 in ~3,000)."""
_IDS = 899 - 100  # integers(100, 899): Lemire on [0, 799)
_LEMIRE_THRESHOLD = (2**32 - _IDS) % _IDS
KIND = {"pr_diff": 0, "ci_run": 1, "ticket": 2, "deploy_log": 3}
"""Artifact kinds as the encoder orders them (and the batch indexes its rework hours)."""
ROLE = {"qa": 0, "developer": 1, "sre": 2, "release_manager": 3}
OWNER = np.array([ROLE[r.owner] for r in RULES.values()])
"""The role that reworks each rule's violation (S1..S5)."""
FACTS = tuple(FACT_VALUES)
FLOATS = ("H0", "H1", "H2", "H3", "deadline", "wrate0", "wrate1", "wrate2", "wrate3")
"""Float facts of a start, in order: rework hours by kind, deadline minute, workers' records."""
INTS = ("arch0", "arch1", "arch2", "arch3", "att0", "att1", "att2", "att3", "att4")
"""Int facts: each role's archetype, each rule's fix attempts."""
BOOLS = ("viol0", "viol1", "viol2", "viol3", "viol4", "not_run", "slot2_rm")
"""Bool facts: each rule broken, the deploy checks not run, the release manager promotes."""


def _half_hours(lo: float, hi: float, u: np.ndarray) -> np.ndarray:
    return np.floor(2 * (lo + (hi - lo) * u)) / 2


def pcg_tape(streams: Any, lanes: np.ndarray, k: int, mixed: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(seeds, u0, u, pool, state)`` of the next ``k`` episodes of each of ``lanes``: seeds
    ``(k, lanes)``; each episode's first double ``u0``, the doubles ``u`` the facts read
    (``(34, k * lanes)``), the first ``KEPT`` doubles of its pool and the PCG64 state the pool
    starts from (``(4, k * lanes)``: hi, lo, inc hi, inc lo); ``mixed``: per episode.
    """
    seeds = np.stack([streams.episode_seeds(lanes) for _ in range(k)])
    hi, lo, inc_hi, inc_lo = _pcg.seeded(_pcg.seed_words(seeds.ravel()))
    first, his, los = _pcg.draw_ahead(hi, lo, inc_hi, inc_lo, USED + 1)
    u0 = first[0]
    u = np.where(mixed, first[1:], first[:-1])
    # skip the rest of random(44): 10 more draws for a mixed episode, 9 for a named one
    jump = _pcg.JumpTable(SKIPPED)
    hi, lo = jump.ahead(his[-1], los[-1], inc_hi, inc_lo, np.where(mixed, SKIPPED, SKIPPED - 1))
    raw, his, los = _pcg.outputs_ahead(hi, lo, inc_hi, inc_lo, WORDS // 2 + KEPT)
    spent = spent_words(_pcg.halves(raw[: WORDS // 2]))
    start = (spent + 1) // 2  # the draw the pool starts at (a buffered half is dropped)
    over = np.flatnonzero(spent > WORDS)
    start[over] = 1
    cols = np.arange(start.size)
    pool = _pcg.doubles(raw[start + np.arange(KEPT)[:, None], cols])
    state = np.stack([his[start - 1, cols], los[start - 1, cols], inc_hi, inc_lo])
    if over.size:  # the samplers ran past the words computed: ask a Generator
        _, u[:, over], pool[:, over], state[:, over] = generator_tape(
            seeds.ravel()[over], mixed[over]
        )
    return seeds, u0, u, pool, state


def pool_draws(state: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Doubles ``index`` and ``index + 1`` (< 32) of pools that start from ``state``
    (``(4, n)``, as :func:`pcg_tape` gives it): one jump of the LCG, then a step.
    """
    hi, lo = _JUMP.ahead(*state, index + 1)
    first = _pcg.doubles(_pcg.output(hi, lo))
    hi, lo = _pcg.step(hi, lo, state[2], state[3])
    return first, _pcg.doubles(_pcg.output(hi, lo))


_JUMP = _pcg.JumpTable(POOL)


def spent_words(words: np.ndarray) -> np.ndarray:
    """How many ``uint32`` words ``permutation(20)`` then ``integers(100, 899, size=5)``
    spend of each column of ``words`` (more than ``len(words)``: it ran out).
    """
    n = words.shape[1]
    padded = np.vstack([words, np.zeros((1, n), np.uint64)])  # read past the end: stop there
    last = len(words)
    at = np.zeros(n, np.int64)
    for high in range(19, 0, -1):
        mask, limit = np.uint64(_pcg.interval_mask(high)), np.uint64(high)
        if mask == limit:  # every word is accepted
            at += 1
            continue
        todo = np.arange(n)
        while todo.size:
            value = padded[np.minimum(at[todo], last), todo] & mask
            at[todo] += 1
            todo = todo[(value > limit) & (at[todo] <= last)]
    # integers(100, 899, size=5): a word is rejected with probability 324 / 2**32
    ids = padded[np.minimum(at + np.arange(5)[:, None], last), np.arange(n)] * np.uint64(_IDS)
    slow = np.flatnonzero(((ids & np.uint64(0xFFFFFFFF)) < np.uint64(_LEMIRE_THRESHOLD)).any(0))
    at += 5
    at[slow] -= 5
    for _ in range(5):
        todo = slow
        while todo.size:
            value = padded[np.minimum(at[todo], last), todo] * np.uint64(_IDS)
            at[todo] += 1
            low = value & np.uint64(0xFFFFFFFF)
            todo = todo[(low < np.uint64(_LEMIRE_THRESHOLD)) & (at[todo] <= last)]
    return at


def generator_tape(seeds: np.ndarray, mixed: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(u0, u, pool, state)`` of episodes with ``seeds``, drawn by NumPy Generators (the
    reference, and the fallback of :func:`pcg_tape`).
    """
    u0 = np.zeros(seeds.size)
    u, pool = np.zeros((USED, seeds.size)), np.zeros((KEPT, seeds.size))
    state = np.zeros((4, seeds.size), np.uint64)
    low = (1 << 64) - 1
    for j, (seed, mix) in enumerate(zip(seeds.tolist(), mixed.tolist(), strict=True)):
        rng = np.random.default_rng(seed)
        if mix:
            u0[j] = rng.random()
        u[:, j] = rng.random(44)[:USED]
        rng.permutation(20)
        rng.integers(100, 899, size=5)
        at = rng.bit_generator.state["state"]
        state[:, j] = [at["state"] >> 64, at["state"] & low, at["inc"] >> 64, at["inc"] & low]
        pool[:, j] = rng.random(KEPT)
    return u0, u, pool, state


class Facts:
    """``scenarios.draw`` and the overrides over arrays of episodes.

    Args:
        families: The world's named families, in order.
        pool: The indices of the families a ``mixed`` episode draws from (its split's).
        difficulty: The config's difficulty.
        mix: The config's archetype mix.
        overrides: Facts forced in every episode (``family`` too, if every lane is ``mixed``).
        all_mixed: Whether every lane plays ``mixed``.
    """

    def __init__(
        self,
        families: tuple[Scenario, ...],
        pool: list[int],
        difficulty: Difficulty,
        mix: str,
        overrides: dict[str, Any],
        all_mixed: bool,
    ):
        for key, value in overrides.items():
            if key == "family" and all_mixed:
                continue
            if key not in OVERRIDABLE:
                raise UnknownNameError("oversight override", key, OVERRIDABLE)
            if value not in OVERRIDABLE[key] or isinstance(value, bool) != isinstance(
                OVERRIDABLE[key][0], bool
            ):
                raise UnknownNameError(f"value of {key!r}", value, map(str, OVERRIDABLE[key]))
        self.overrides = overrides
        self.family = FamilyDraw(families, pool, overrides.get("family") if all_mixed else None)
        self.difficulty = difficulty
        # per family and fact: presence, then the cumulative weights _pick compares with
        self._present = np.array([[presence(f, difficulty)[x] for x in FACTS] for f in families])
        self._acc = np.full((len(families), len(FACTS), 2), np.inf)
        self._code = np.zeros((len(families), len(FACTS), 2), np.int64)
        for i, f in enumerate(families):
            for j, fact in enumerate(FACTS):
                values = FACT_VALUES[fact]
                weights = f.params["own"].get(fact) or dict.fromkeys(values[1:], 1.0)
                total, acc = sum(weights.values()), 0.0
                for m, (value, w) in enumerate(weights.items()):
                    acc += w / total
                    self._acc[i, j, m] = acc
                    self._code[i, j, m] = values.index(value)
                self._code[i, j, len(weights) :] = self._code[i, j, len(weights) - 1]
        self._slow = np.array([f.params["p_slow"] for f in families])
        self._sloppy = np.array([f.params["p_sloppy"] for f in families])
        self._mix = np.cumsum(ARCHETYPE_MIXES[mix])
        self._track = np.array([_TRACK_RATE[a] for a in ARCHETYPES])
        self._forced = {
            key: FACT_VALUES[key].index(value) if key in FACT_VALUES else value
            for key, value in overrides.items()
            if key != "family"
        }

    def of(
        self, u0: np.ndarray, u: np.ndarray, mixed: np.ndarray, named: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The facts of episodes from their draws: ``family``, and rows in the order of
        ``FLOATS``, ``INTS`` and ``BOOLS`` (``floats``, ``ints``, ``bools``).
        """
        family = self.family.of(u0, mixed, named)
        d = self.difficulty
        codes = np.zeros((len(FACTS), family.size), np.int64)
        for j, fact in enumerate(FACTS):
            if fact in self._forced:
                codes[j] = self._forced[fact]
                continue
            acc = self._acc[family, j]  # (episodes, 2)
            at = np.minimum((u[5 + j][:, None] >= acc).sum(axis=1), 1)
            value = self._code[family, j][np.arange(family.size), at]
            codes[j] = np.where(u[j] < self._present[family, j], value, 0)
        weights = self._mix
        arch = np.minimum(np.searchsorted(weights, u[10:14] * weights[-1]), 3)
        slow = u[14] < self._slow[family]
        if "slow_ticket_fix" in self._forced:
            slow = np.full(family.shape, bool(self._forced["slow_ticket_fix"]))
        shortcut = arch == ARCHETYPES.index("shortcut_taker")
        attempts = np.where(shortcut[OWNER] | (u[15:20] < self._sloppy[family]), 2, 1)
        hours = np.stack(
            [
                _half_hours(2, 5, u[22]),  # pr_diff
                _half_hours(2, 5, u[21]),  # ci_run
                np.where(slow, _half_hours(48, 80, u[20]), _half_hours(3, 6, u[20])),
                _half_hours(2, 4, u[23]),  # deploy_log
            ]
        )
        reviewed = 20 + np.floor(40 * u[24:28])
        rate = self._track[arch] + d.record_noise * (2 * u[28:32] - 1)
        overturned = np.rint(reviewed * np.minimum(np.maximum(rate, 0.0), 1.0))
        deadline = 60.0 * (_half_hours(28, 40, u[32]) + d.deadline_shift)
        floats = np.vstack([hours, deadline[None], overturned / reviewed])
        viol = np.stack([codes[j] != 0 for j in range(len(FACTS))])
        not_run = codes[FACTS.index("deploy_checks")] == FACT_VALUES["deploy_checks"].index(
            "not_run"
        )
        bools = np.vstack([viol, not_run[None], (u[33] < 0.3)[None]])
        return {
            "family": family.astype(np.int32),
            "floats": floats,
            "ints": np.vstack([arch, attempts]).astype(np.int32),
            "bools": bools,
        }
