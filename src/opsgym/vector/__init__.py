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
``ReleaseVectorEnv(num_envs, scenario="mixed", split="train", overrides=None, max_steps=None,
max_episode_steps=None, autoreset_mode=NEXT_STEP, rng="pcg", copy=True)``; ``scenario`` may be
one name per lane. ``reset(seed=s)`` seeds lane ``i`` with ``s + i`` (or takes a list), as
``gym.make_vec(..., vectorization_mode="sync")`` does; ``action_masks()`` is ``(N, 10)``.

## Randomness
The scalar world draws from one ``np.random.Generator`` per episode: the Gym face's seed
stream (``reset``: ``integers(2**27)``, then the split's residue) gives the episode seed;
``default_rng(episode_seed)`` draws the ``mixed`` family and 17 facts at reset, then two
numbers on every ``health_check`` and one on every ``verify``, whatever the truth. The batch
reproduces those streams exactly without a Generator per lane (:mod:`opsgym.vector._pcg`):
NumPy's ``SeedSequence`` hash and PCG64's 128-bit LCG written in ``uint64`` array arithmetic.
Two properties make that cheap:

* a lane's episode seeds and reset draws do not depend on its actions, so the starts of its
  next episodes are computed ahead, for every lane at once (``_StartQueue``);
* an LCG jumps ``k`` draws ahead in one step (``state_k = A_k * state + S_k * inc``), so a
  probe or a verify only counts the numbers it spends; the numbers are computed for the few
  lanes whose report depends on them (a crash-looping green, a verify that can catch it).

``rng="generator"`` keeps one NumPy ``Generator`` per lane and stream instead and loops over
the lanes that draw: the same numbers, for checking and measuring.

## Speed
See ``benchmarks/vector.py`` and the figures below (filled in from its output).
"""

from opsgym.vector.env import ReleaseVectorEnv
from opsgym.vector.release import ACTIONS, OUTCOMES, ReleaseBatch, ReleaseBatchError

__all__ = ["ACTIONS", "OUTCOMES", "ReleaseBatch", "ReleaseBatchError", "ReleaseVectorEnv"]
