"""The random streams of a batch of lanes: each lane's Gym seed stream and episode stream.

A lane is one ``gym.make("opsgym/Release-v…")`` env. It owns two streams, as that env does:

* its **seed stream**, Gymnasium's ``np_random`` made by ``reset(seed=s)``, from which every
  reset draws the next episode seed (``OpsEnv.reset``: ``integers(2**27)``, then
  :func:`~opsgym.core.scenarios.seed_in_split`);
* its **episode stream**, ``np.random.default_rng(episode_seed)``, from which the episode
  draws its family and facts at reset and ``random()`` numbers during some calls.

Two interchangeable backends give the same numbers:

* :class:`GeneratorStreams` keeps one NumPy ``Generator`` per lane and stream, and loops in
  Python over the lanes that draw (the reference; what the scalar face does, N times);
* :class:`PCGStreams` keeps each lane's PCG64 state in arrays and draws for all lanes at once
  (:mod:`opsgym.vector._pcg`).
"""

from __future__ import annotations

import numpy as np
from gymnasium.utils import seeding

from opsgym.core.scenarios import check_split, seed_in_split
from opsgym.vector import _pcg

_BASE = {"train": 0, "dev": 8, "test": 9}


def fresh_seeds(n: int) -> list[int]:
    """``n`` unpredictable seeds, for lanes reset without one (as ``np_random(None)`` would)."""
    entropy = np.random.SeedSequence().entropy  # OS entropy; not a global generator
    return [(int(entropy) >> 32) + i for i in range(n)]


class GeneratorStreams:
    """One NumPy ``Generator`` per lane and stream (the reference backend).

    Args:
        num: Number of lanes.
        split: The split episode seeds are drawn from (as ``OpsEnv(split=...)``).
        width: The most doubles one :meth:`consume` spends on a lane.
    """

    def __init__(self, num: int, split: str, width: int = 2):
        self.split = check_split(split)
        self._seeders: list[np.random.Generator | None] = [None] * num
        self._episodes: list[np.random.Generator | None] = [None] * num
        self._spent = np.zeros((width, num))

    def seed(self, lanes: np.ndarray, seeds: list[int]) -> None:
        """Seed the seed streams of ``lanes`` (``reset(seed=...)`` of each lane's env)."""
        for lane, seed in zip(lanes.tolist(), seeds, strict=True):
            self._seeders[lane] = seeding.np_random(int(seed))[0]

    def seeded(self, lanes: np.ndarray) -> np.ndarray:
        """Which of ``lanes`` have a seed stream."""
        return np.array([self._seeders[lane] is not None for lane in lanes.tolist()], bool)

    def episode_seeds(self, lanes: np.ndarray) -> np.ndarray:
        """The next episode seed of each of ``lanes``, drawn as ``OpsEnv.reset`` draws it."""
        out = np.empty(lanes.size, np.int64)
        for j, lane in enumerate(lanes.tolist()):
            rng = self._seeders[lane]
            out[j] = seed_in_split(self.split, int(rng.integers(2**27)), rng)
        return out

    def start(self, lanes: np.ndarray, episode_seeds: np.ndarray) -> None:
        """Start the episode stream of each of ``lanes`` from its episode seed."""
        for lane, seed in zip(lanes.tolist(), episode_seeds.tolist(), strict=True):
            self._episodes[lane] = np.random.default_rng(seed)

    def first(self, lanes: np.ndarray, counts: np.ndarray, width: int) -> np.ndarray:
        """The first ``counts[j]`` doubles of lane ``lanes[j]``'s new episode, as a
        ``(width, lanes)`` array (past ``counts[j]`` unspecified).
        """
        out = np.zeros((width, lanes.size))
        for j, (lane, count) in enumerate(zip(lanes.tolist(), counts.tolist(), strict=True)):
            out[:count, j] = self._episodes[lane].random(count)
        return out

    def consume(self, lanes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Spend the next ``counts`` (at most ``width``) doubles of each of ``lanes``'
        episode streams; returns where each lane's first of them lies, for :meth:`value`.
        """
        for lane, count in zip(lanes.tolist(), counts.tolist(), strict=True):
            self._spent[:count, lane] = self._episodes[lane].random(count)
        return np.zeros(lanes.size, np.int64)

    def value(self, lanes: np.ndarray, at: np.ndarray, j: int | np.ndarray) -> np.ndarray:
        """The ``j``-th double of the draws each of ``lanes`` spent at ``at`` (their last)."""
        return self._spent[j, lanes]


class PCGStreams:
    """Every lane's PCG64 states in arrays; a draw is array arithmetic over the lanes drawing.

    Args:
        num: Number of lanes.
        split: The split episode seeds are drawn from (as ``OpsEnv(split=...)``).
        most: The most doubles an episode spends after its reset.
    """

    def __init__(self, num: int, split: str, most: int = 2 * 60):
        self.split = check_split(split)
        z = np.zeros(num, np.uint64)
        self._g = [z.copy(), z.copy(), z.copy(), z.copy()]  # seed streams: hi, lo, inc hi, lo
        self._g_buf = z.copy()  # the high half of a draw whose low half one reset used
        self._g_has = np.zeros(num, bool)
        self._g_ok = np.zeros(num, bool)
        self._e = [z.copy(), z.copy(), z.copy(), z.copy()]  # episode streams after reset
        self._spent = np.zeros(num, np.int64)  # doubles spent since then
        self._jump = _pcg.JumpTable(most)

    def seed(self, lanes: np.ndarray, seeds: list[int]) -> None:
        """Seed the seed streams of ``lanes`` (``reset(seed=...)`` of each lane's env)."""
        for part, value in zip(self._g, _pcg.seeded(_pcg.seed_words(seeds)), strict=True):
            part[lanes] = value
        self._g_has[lanes] = False
        self._g_ok[lanes] = True

    def seeded(self, lanes: np.ndarray) -> np.ndarray:
        """Which of ``lanes`` have a seed stream."""
        return self._g_ok[lanes]

    def episode_seeds(self, lanes: np.ndarray) -> np.ndarray:
        """The next episode seed of each of ``lanes``, drawn as ``OpsEnv.reset`` draws it.

        ``integers(2**27)`` and ``integers(8)`` each take one ``uint32`` (the low half of a
        PCG64 draw, then the high half it buffered) and never reject: the index is the word's
        top 27 bits, the residue its top 3. The dev and test splits draw no residue, so their
        resets alternate between the halves of one draw.
        """
        g = [part[lanes] for part in self._g]
        if self.split == "train":
            hi, lo = _pcg.step(*g)
            raw = _pcg.output(hi, lo)
            index = (raw & np.uint64(0xFFFFFFFF)) >> np.uint64(5)
            residue = raw >> np.uint64(61)
            self._g[0][lanes], self._g[1][lanes] = hi, lo
            return (np.int64(10) * index.astype(np.int64)) + residue.astype(np.int64)
        has = self._g_has[lanes]
        hi, lo = _pcg.step(*g)
        hi, lo = np.where(has, g[0], hi), np.where(has, g[1], lo)
        raw = _pcg.output(hi, lo)
        word = np.where(has, self._g_buf[lanes], raw & np.uint64(0xFFFFFFFF))
        self._g[0][lanes], self._g[1][lanes] = hi, lo
        self._g_buf[lanes] = raw >> np.uint64(32)
        self._g_has[lanes] = ~has
        index = (word >> np.uint64(5)).astype(np.int64)
        return np.int64(10) * index + _BASE[self.split]

    def starts(self, lanes: np.ndarray, count: int, width: int) -> tuple[np.ndarray, ...]:
        """The next ``count`` episode starts of each of ``lanes``, without starting them:
        ``(seeds, draws, states)``, shaped ``(count, lanes)``, ``(width, count, lanes)`` and
        ``(4, 2, count, lanes)``: each episode's first ``width`` doubles, and its stream's state
        after ``width - 1`` and after ``width`` of them (the state to :meth:`resume` from).
        """
        seeds = np.stack([self.episode_seeds(lanes) for _ in range(count)])
        hi, lo, inc_hi, inc_lo = _pcg.seeded(_pcg.seed_words(seeds.ravel()))
        draws, his, los = _pcg.draw_ahead(hi, lo, inc_hi, inc_lo, width)
        states = np.empty((4, 2, count * lanes.size), np.uint64)
        states[0], states[1] = his[width - 2 :], los[width - 2 :]
        states[2], states[3] = inc_hi, inc_lo
        return seeds, draws.reshape(width, count, lanes.size), states.reshape(4, 2, count, -1)

    def resume(self, lanes: np.ndarray, states: np.ndarray) -> None:
        """Set the episode streams of ``lanes`` to ``states`` (``(4, lanes)``, from
        :meth:`starts`).
        """
        for part, value in zip(self._e, states, strict=True):
            part[lanes] = value
        self._spent[lanes] = 0

    def consume(self, lanes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Spend the next ``counts`` doubles of each of ``lanes``' episode streams, without
        computing them; returns where each lane's first of them lies, for :meth:`value`.
        """
        at = self._spent[lanes]
        self._spent[lanes] = at + counts
        return at

    def value(self, lanes: np.ndarray, at: np.ndarray, j: int | np.ndarray) -> np.ndarray:
        """The ``j``-th double of the draws each of ``lanes`` spent at ``at``: one jump of
        the LCG from the state its episode's draws resumed from.
        """
        e = [part[lanes] for part in self._e]
        hi, lo = self._jump.ahead(*e, at + j + 1)
        return _pcg.doubles(_pcg.output(hi, lo))
