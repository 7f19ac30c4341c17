"""Batched worlds: N episodes stepped at once in NumPy, bit-identical to the scalar Gym face.

## What it is
A fast twin of a world for the vector (Gym) face, for ``release``, ``oversight`` and
``fleet``. ``BatchedVectorEnv(num_envs=N, env=world, ...)`` (a Gymnasium 1.x ``VectorEnv``;
``ReleaseVectorEnv``, ``OversightVectorEnv`` and ``FleetVectorEnv`` name the world) and
``BatchedSB3VecEnv`` (a Stable-Baselines3 ``VecEnv``, in :mod:`opsgym.vector.sb3`, for
``MaskablePPO``; also ``ReleaseSB3VecEnv``, ``OversightSB3VecEnv``, ``FleetSB3VecEnv``) run lanes
of :class:`~opsgym.vector.release.ReleaseBatch`,
:class:`~opsgym.vector.oversight.OversightBatch` or :class:`~opsgym.vector.fleet.FleetBatch`.
Lane ``i`` is ``gym.make(world's Gym id, scenario=..., split=..., overrides=..., config=...,
max_steps=...)`` reset with that lane's seed and fed that lane's actions: the same observation
vector, action mask, reward, terminated, truncated, outcome and return at every step, bit for
bit (``tests/test_vector_release.py``, ``tests/test_vector_oversight.py``,
``tests/test_vector_fleet.py``). The scalar world stays the reference and the only source of
records: a batch keeps no trajectory, no reports, no lies, no hash chain, only what the
observation, the masks, the rewards and the judge read.
Only ``reward_timing="end"`` (the default). What the worlds share lives in ``_batch``
(arguments, seeding, state blocks), ``_starts`` (the start queue, the ``mixed`` draw),
``_streams`` and ``_pcg`` (the random streams), ``_pyfloat`` (Python's rounding and sums).
Each world's starts (its facts from its first draws) are in ``_<world>_starts``.

## Arguments
``ReleaseVectorEnv(num_envs, scenario=None, split="train", overrides=None, max_steps=None,
max_episode_steps=None, autoreset_mode=NEXT_STEP, rng="pcg", copy=True)``: ``scenario`` is one
name, or one per lane, or ``None`` for the world's first as ``gym.make`` (training and
evaluations use ``"mixed"``). ``reset(seed=s)`` seeds lane ``i`` with ``s + i`` (or takes a
list), as ``gym.make_vec(..., vectorization_mode="sync")`` does; ``action_masks()`` is
``(N, 10)`` (``(N, 44)`` for oversight, ``(N, 117)`` for fleet). ``gym.make_vec(gym_id,
num_envs=N, vectorization_mode="vector_entry_point")`` builds it: the package registers
``vector_entry_point="opsgym.vector.env:BatchedVectorEnv"`` for the worlds with a twin.

## Randomness
The scalar world draws from one ``np.random.Generator`` per episode: the Gym face's seed
stream (``reset``: ``integers(2**27)``, then the split's residue) gives the episode seed;
``default_rng(episode_seed)`` draws the ``mixed`` family and 17 facts at reset, then two
numbers on every ``health_check`` and one on every ``verify``, whatever the truth. The batch
reproduces those streams exactly without a Generator per lane (:mod:`opsgym.vector._pcg`):
NumPy's ``SeedSequence`` hash and PCG64's 128-bit LCG written in ``uint64`` array arithmetic.
Two properties make that cheap:

* a lane's episode seeds and reset draws do not depend on its actions, so the starts of its
  next episodes are computed ahead, for every lane at once (``_starts.StartQueue``);
* an LCG jumps ``k`` draws ahead in one step (``state_k = A_k * state + S_k * inc``), so a
  probe or a verify only counts the numbers it spends; the numbers are computed for the few
  lanes whose report depends on them (a crash-looping green, a verify that can catch it).

``rng="generator"`` keeps one NumPy ``Generator`` per lane and stream instead and loops over
the lanes that draw: the same numbers, for checking and measuring.

## Speed
Measured in ``benchmarks/`` (``python benchmarks/vector.py --profile``): the figures, the profiles
of a step and what a keyed RNG would gain are in ``benchmarks/README.md`` ("Batched worlds").

## Oversight
:class:`~opsgym.vector.oversight.OversightBatch` mirrors ``Oversight-v1``. Everything it
draws is drawn at reset (``random(44)``, ``permutation(20)``, ``integers(100, 899, size=5)``,
``random(32)``; nothing after), so a start is computed ahead like release's, but it costs more:
35 doubles for the facts, then the words ``permutation`` and ``integers`` spend (their
rejection samplers replayed, only to find where the pool starts: names and ids are never
read), then 8 pool doubles (later proposals' by one jump): 4.6 us an episode against
release's 1.1, and a random-action episode lasts 11 steps, so 380 lanes start one each step
at N = 4,096. A hold is judged by replaying ``schedule.ship_time``: in closed form after
the triage phase, by bounds within it (sharing the supervisor delays an action by one of the
other proposal's at most), action by action only where the deadline falls between the bounds.
The observation's 106 columns are rewritten only for the lanes whose proposals or evidence
changed (a column spans every lane's row: rewriting them all cost ~4 ms a step in cache
misses).

## Fleet
:class:`~opsgym.vector.fleet.FleetBatch` mirrors ``Fleet-v2`` without reshaping its randomness:
every fleet report already draws a fixed count of doubles whatever the truth (a scrape 73 the
first time it is rendered, a topology read 4, a benchmark 3, ``patch_identify`` 1, a finding 4,
a consensus 16; 125 at reset), so a call only counts what it spends and a jump computes the few
numbers the vector reads (a scrape's red herring, its four node masks and its throughput jitter:
8 of 73). A start computes 30 doubles (the family, 23 facts, the inventory's nominal bandwidth
and tokens/s) and skips the other 96 (names, pids, uptimes, benign Xids: text). The vector is
built from reports, and the batch keeps only their numbers: sets of ranks as bits of an
``int64`` (out of memory, lost, alerted, hot, implicated), a scrape as what it alerts on and
shows, a log as its summary's errors, a finding as its target and confidence; the 364 rank and
node features live in ``obs`` itself, written by the calls that change them, and the 55 globals
and the masks are rewritten for every lane each step (whole columns: nearly every lane moved).
Python's ``round(x, n)`` is reproduced exactly for any range
(:func:`~opsgym.vector._pyfloat.py_round`, by an exact product), and ``math.log`` of the tokens
charged comes from a table.

"""

from opsgym.vector._batch import BatchError
from opsgym.vector.env import (
    BatchedVectorEnv,
    FleetVectorEnv,
    OversightVectorEnv,
    ReleaseVectorEnv,
)
from opsgym.vector.fleet import FleetBatch
from opsgym.vector.oversight import OversightBatch
from opsgym.vector.release import ACTIONS, OUTCOMES, ReleaseBatch, ReleaseBatchError

__all__ = [
    "ACTIONS",
    "OUTCOMES",
    "BatchError",
    "BatchedVectorEnv",
    "FleetBatch",
    "FleetVectorEnv",
    "OversightBatch",
    "OversightVectorEnv",
    "ReleaseBatch",
    "ReleaseBatchError",
    "ReleaseVectorEnv",
]
