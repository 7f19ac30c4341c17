"""Batched worlds: N episodes stepped at once in NumPy, bit-identical to the scalar Gym face.

## What it is
A fast twin of a world for the vector (Gym) face. ``ReleaseVectorEnv(num_envs=N, ...)`` (a
Gymnasium 1.x ``VectorEnv``) and ``ReleaseSB3VecEnv(N, ...)`` (a Stable-Baselines3 ``VecEnv``,
in :mod:`opsgym.vector.sb3`, for ``MaskablePPO``) run lanes of
:class:`~opsgym.vector.release.ReleaseBatch`. Lane ``i`` is ``gym.make("opsgym/Release-v4",
scenario=..., split=..., overrides=..., max_steps=...)`` reset with that lane's seed and fed
that lane's actions: the same observation vector, action mask, reward, terminated, truncated,
outcome and return at every step, bit for bit (``tests/test_vector_release.py``). The scalar
world stays the reference and the only source of records: a batch keeps no trajectory, no
reports, no lies, no hash chain, only what the observation, the masks, the rewards and the
judge read. Only ``release`` has a twin so far; only ``reward_timing="end"`` (the default).

## Arguments
``ReleaseVectorEnv(num_envs, scenario=None, split="train", overrides=None, max_steps=None,
max_episode_steps=None, autoreset_mode=NEXT_STEP, rng="pcg", copy=True)``: ``scenario`` is one
name, or one per lane, or ``None`` for the world's first as ``gym.make`` (training and
evaluations use ``"mixed"``). ``reset(seed=s)`` seeds lane ``i`` with ``s + i`` (or takes a
list), as ``gym.make_vec(..., vectorization_mode="sync")`` does; ``action_masks()`` is
``(N, 10)``. ``gym.make_vec`` builds it once a registration names
``vector_entry_point="opsgym.vector.env:ReleaseVectorEnv"`` (the test registers one; the
package's own registration is left as it is).

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
