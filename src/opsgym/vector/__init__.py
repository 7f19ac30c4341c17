"""Batched worlds: N episodes stepped at once in NumPy, bit-identical to the scalar Gym face.

## What it is
A fast twin of a world for the vector (Gym) face, for ``release`` and ``oversight``.
``BatchedVectorEnv(num_envs=N, env=world, ...)`` (a Gymnasium 1.x ``VectorEnv``;
``ReleaseVectorEnv`` and ``OversightVectorEnv`` name the world) and ``BatchedSB3VecEnv`` (a
Stable-Baselines3 ``VecEnv``, in :mod:`opsgym.vector.sb3`, for ``MaskablePPO``; also
``ReleaseSB3VecEnv``, ``OversightSB3VecEnv``) run lanes of
:class:`~opsgym.vector.release.ReleaseBatch` or
:class:`~opsgym.vector.oversight.OversightBatch`. Lane ``i`` is ``gym.make(world's Gym id,
scenario=..., split=..., overrides=..., config=..., max_steps=...)`` reset with that lane's
seed and fed that lane's actions: the same observation vector, action mask, reward,
terminated, truncated, outcome and return at every step, bit for bit
(``tests/test_vector_release.py``, ``tests/test_vector_oversight.py``). The scalar world stays
the reference and the only source of records: a batch keeps no trajectory, no reports, no
lies, no hash chain, only what the observation, the masks, the rewards and the judge read.
Only ``reward_timing="end"`` (the default). What the worlds share lives in ``_batch``
(arguments, seeding, state blocks), ``_starts`` (the start queue, the ``mixed`` draw),
``_streams`` and ``_pcg`` (the random streams), ``_pyfloat`` (Python's rounding and sums).

## Arguments
``ReleaseVectorEnv(num_envs, scenario=None, split="train", overrides=None, max_steps=None,
max_episode_steps=None, autoreset_mode=NEXT_STEP, rng="pcg", copy=True)``: ``scenario`` is one
name, or one per lane, or ``None`` for the world's first as ``gym.make`` (training and
evaluations use ``"mixed"``). ``reset(seed=s)`` seeds lane ``i`` with ``s + i`` (or takes a
list), as ``gym.make_vec(..., vectorization_mode="sync")`` does; ``action_masks()`` is
``(N, 10)`` (``(N, 44)`` for oversight). ``gym.make_vec(gym_id, num_envs=N,
vectorization_mode="vector_entry_point")`` builds it: the package registers
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
``python benchmarks/vector.py --profile`` (N = 4,096 lanes, ``mixed``, random valid actions,
best of 3; the shared 2-core machine at load 3.6, where the scalar face ran 18.5k steps/s
against the 45k it runs on a quiet machine):

| measure                                             | env steps/s | x CartPole sync |
|-----------------------------------------------------|------------:|----------------:|
| release batched, ``step`` alone                     |   1,150,000 |            28.3 |
| release batched, with the action draw               |   1,033,000 |            25.4 |
| release batched, a Generator per lane               |     348,000 |             8.6 |
| bare NumPy loop, 726 float adds a step (same count) |   3,038,000 |            74.7 |
| ``gym.make_vec("CartPole-v1", N, "sync")``          |      40,700 |             1.0 |
| release scalar Gym face                             |      18,500 |             0.5 |

The goal (2,000,000 at N = 4,096) is not met on this loaded machine. What limits it is the
number of NumPy calls, not the arithmetic: a step makes 726 (counted), about 0.2 us a lane at
N = 4,096, each at least a microsecond of Python and NumPy dispatch. The same count of plain
adds runs 1.2M to 3.0M steps/s here from one run to the next (the load moves it more than any
change made here); the batch's calls cost more than an add (fancy indexing on lane subsets,
the observation's 24 strided column writes: 0.5 ms a step). Larger batches amortise the
dispatch: 1.72M steps/s at N = 16,384, 1.77M at 65,536 (memory-bound there; the bare loop
2.9M). Profile of a step (ms, parts overlap): step 2.70 and reset 0.52 in all; observation
and masks 0.52; randomness 0.62 (the start queue 0.35 with its refills 0.18, the numbers
probes and verifies draw 0.27); health checks 0.30; traffic 0.18; verify 0.13.

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

``python benchmarks/vector.py --profile`` (N = 4,096, ``mixed``, random valid actions, best
of 3, load 1.4):

| measure                                             | env steps/s | x CartPole sync |
|-----------------------------------------------------|------------:|----------------:|
| release batched, ``step`` alone                     |   1,238,000 |            26.6 |
| oversight batched, ``step`` alone                   |     569,000 |            12.2 |
| oversight batched, with the action draw             |     510,000 |            10.9 |
| oversight batched, a Generator per lane             |      85,000 |             1.8 |
| bare NumPy loop, 726 float adds (an oversight step) |   2,159,000 |            46.3 |
| ``gym.make_vec("CartPole-v1", N, "sync")``          |      46,600 |             1.0 |
| oversight scalar Gym face                           |      12,400 |             0.3 |

The goal (1,000,000 at N = 4,096) is not met: oversight runs at 0.46x release and 0.26x the
bare loop of its own operation count. A step (about 8 ms at load 3; medians of 100 steps)
goes to: the observation and mask, 2.5 ms (the 38% of lanes whose rows changed, 1.3 ms;
the risk and confidence of the step's ~1,000 new proposals, 0.7 ms); the starts, 1.8 ms (380
episodes at 4.6 us; with the starts free the batch ran 440k against 350k in one loaded run);
the reset of those lanes, 0.8 ms (a gather per field of 380 random rows: memory latency); the
holds' judge, 0.9 ms (370 lanes hold a step). Random valid actions are oversight's worst
case: 20 of its 44 actions are questions and two are holds, so episodes last 11 steps and
most lanes start, judge or re-show an episode every few steps; a policy's longer episodes
spend less there.

## What a keyed RNG would gain
Reproducing one sequential Generator per episode costs the batch its PCG64 twin: a 128-bit LCG
in ``uint64`` arithmetic, a SeedSequence hash for every episode, a queue to compute starts in
bulk, a counter of numbers spent per lane and one jump a step: 0.62 ms of a 3.2 ms step
(19%), and the per-lane-Generator alternative runs at 0.35M steps/s instead of 1.15M. If the
worlds drew by key (each number a hash of the episode seed, a purpose and an index, such as
splitmix64), a step would hash only the numbers it reads: the 18 of each reset and those of
the few lanes whose report depends on one. Timed at this step's counts: 0.075 ms. That is
about 0.55 ms a step, +17% here (about 1.35M steps/s), with no queue, no jump tables and no
counter to keep in step with the scalar world. Reproducing ``OpsEnv``'s episode seeds would
still need each lane's Gym seed stream unless the Gym face drew episode seeds by key too.
Such a reshape changes every seed's episode, so it is a new world version (Release-v5) and
was left for the core's owners.
"""

from opsgym.vector._batch import BatchError
from opsgym.vector.env import BatchedVectorEnv, OversightVectorEnv, ReleaseVectorEnv
from opsgym.vector.oversight import OversightBatch
from opsgym.vector.release import ACTIONS, OUTCOMES, ReleaseBatch, ReleaseBatchError

__all__ = [
    "ACTIONS",
    "OUTCOMES",
    "BatchError",
    "BatchedVectorEnv",
    "OversightBatch",
    "OversightVectorEnv",
    "ReleaseBatch",
    "ReleaseBatchError",
    "ReleaseVectorEnv",
]
