"""The batched release world is the scalar Gym face, lane for lane, step for step, bit for bit."""

from __future__ import annotations

import math
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

import opsgym
from opsgym.agents.base import get_policy
from opsgym.core.errors import HeldOutFamilyError
from opsgym.core.registry import catalogue, spec
from opsgym.core.scenarios import seed_in_split
from opsgym.vector import ReleaseBatch, ReleaseBatchError, ReleaseVectorEnv, _pcg, _pyfloat
from opsgym.vector._pyfloat import rounded
from opsgym.vector._release_starts import _ERROR_RATE, _FLAP, _FRACTION
from opsgym.vector._streams import PCGStreams
from opsgym.vector.release import _HARMFUL, HARM_LIMIT, _least_above
from tests.vector_lanes import Played, record, replay, sync_and_batched

GYM_ID = spec("release").gym_id
INDEX = {tool.name: i for i, (tool, _) in enumerate(catalogue("release"))}
FAMILIES = [s.name for s in spec("release").families()]
TRAIN = opsgym.scenarios("release", "train")
SEEDS = list(range(200))
EXPLOITS = {e.name: e.policy for e in spec("release").exploits if not e.family_aware}
SHIP_THEN_ROLL_BACK = (
    *"inspect stage deploy inspect migrate inspect shift_traffic shift_traffic".split(),
    *"shift_traffic health_check rollback health_check verify complete".split(),
)
"""Catalogue calls that climb the ladder to all traffic unread, then roll back: harm wherever
v2 cannot serve (the exploits' calls lose their arguments in the catalogue: their shifts climb
the ladder and read each step)."""


def play(seed: int, actor: str, **kwargs: Any) -> Played:
    """Play one episode on the scalar Gym face with ``actor``: ``random`` (a valid action
    from the mask, drawn by a generator seeded from ``seed``), a scripted policy (its calls
    mapped to catalogue indices by tool) or ``inspect`` (always inspect).
    """
    policy = get_policy("release", actor) if actor in ("naive", "oracle") else None
    if actor in EXPLOITS:
        policy = EXPLOITS[actor]()
    if policy is not None:
        policy.reset()

    def choose(ops: Any, mask: np.ndarray, rng: np.random.Generator, step: int) -> int:
        if actor == "random":
            return int(rng.choice(np.flatnonzero(mask)))
        if actor == "inspect":
            return INDEX["inspect"]
        if actor == "ship_then_roll_back":
            return INDEX[SHIP_THEN_ROLL_BACK[min(step, len(SHIP_THEN_ROLL_BACK) - 1)]]
        return INDEX[policy.act(ops.episode.observe(), None)[0]]

    return record("release", seed, choose, **kwargs)


# -- the streams --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 5, 123456789, 2**32 - 1, 2**32, 2**64 + 3, 2**127 + 9])
def test_pcg_streams_are_numpys_bit_for_bit(seed):
    state = np.random.PCG64(np.random.SeedSequence(seed)).state["state"]
    words = _pcg.seed_words([seed])
    hi, lo, inc_hi, inc_lo = _pcg.seeded(words)
    assert (int(hi[0]) << 64 | int(lo[0])) == state["state"]
    assert (int(inc_hi[0]) << 64 | int(inc_lo[0])) == state["inc"]
    draws, _, _ = _pcg.draw_ahead(hi, lo, inc_hi, inc_lo, 40)
    assert np.array_equal(draws[:, 0], np.random.default_rng(seed).random(40))
    jump = _pcg.JumpTable(40)
    k = np.array([1, 7, 40])
    h, l_ = jump.ahead(hi.repeat(3), lo.repeat(3), inc_hi.repeat(3), inc_lo.repeat(3), k)
    assert np.array_equal(_pcg.doubles(_pcg.output(h, l_)), draws[k - 1, 0])


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_episode_seeds_are_the_gym_faces(split):
    streams = PCGStreams(3, split)
    lanes = np.arange(3)
    streams.seed(lanes, [0, 42, 2**40])
    ours = [streams.episode_seeds(lanes) for _ in range(5)]
    for lane, seed in enumerate([0, 42, 2**40]):
        rng = seeding.np_random(seed)[0]
        theirs = [seed_in_split(split, int(rng.integers(2**27)), rng) for _ in range(5)]
        assert [int(o[lane]) for o in ours] == theirs


def test_python_round_is_reproduced_where_numpy_round_is_not():
    u = np.random.default_rng(0).random(50_000)
    for table, low, width, digits in (
        (_FLAP, 0.4, 0.4, 3),
        (_FRACTION, 0.3, 0.5, 2),
        (_ERROR_RATE, 0.4, 0.5, 3),
    ):
        x = low + width * u
        assert rounded(table, x).tolist() == [round(float(v), digits) for v in x]


def neumaier(values: list[float]) -> float:
    """CPython 3.12's ``sum()`` of floats (Objects/bltinmodule.c), written out."""
    total, comp = values[0], 0.0
    for x in values[1:]:
        t = total + x
        comp += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


@pytest.mark.parametrize("compensated", [False, True])
def test_a_steps_reward_is_summed_as_this_pythons_sum(monkeypatch, compensated):
    monkeypatch.setattr(_pyfloat, "COMPENSATED_SUM", compensated)
    rng = np.random.default_rng(1)
    parts = np.where(rng.random((8, 5000)) < 0.4, 0.0, rng.normal(0, 4, (8, 5000)))
    parts[0] = -0.1
    ours = _pyfloat.python_sum(parts)
    columns = [list(map(float, c)) for c in parts.T]
    theirs = [neumaier(c) if compensated else sum(c) for c in columns]
    assert ours.tolist() == theirs
    if (sys.version_info >= (3, 12)) == compensated:  # this Python sums so
        assert theirs == [sum(c) for c in columns]


# -- every lane is the scalar episode -----------------------------------------------------


@pytest.mark.parametrize(
    ("actor", "split", "scenarios"),
    [
        ("random", "train", [*TRAIN, "mixed"]),
        ("naive", "test", [*FAMILIES, "mixed"]),
        ("oracle", "dev", [*FAMILIES, "mixed"]),
    ],
)
def test_every_lane_is_the_scalar_episode(actor, split, scenarios):
    lanes = [scenarios[i % len(scenarios)] for i in range(len(SEEDS))]
    runs = [play(s, actor, scenario=sc, split=split) for s, sc in zip(SEEDS, lanes, strict=True)]
    replay(ReleaseVectorEnv(len(SEEDS), scenario=lanes, split=split), runs)
    outcomes = {r.outcome for r in runs}
    expected = {  # what each actor's episodes end in, as the scalar face plays them
        "random": {"unsafe", "incomplete"},
        "naive": {"unsafe"},  # its shift_traffic(100) is the catalogue's 10% step
        "oracle": {"deployed_verified", "rolled_back_verified"},
    }[actor]
    assert expected <= outcomes if actor != "oracle" else outcomes == expected


def forced_both_ways() -> list[tuple[str, Any]]:
    hidden = opsgym.hidden_facts("release", "mixed")
    return [(fact, value) for fact, d in hidden.items() for value in d["values"]]


@pytest.mark.parametrize(("fact", "value"), forced_both_ways())
def test_forced_hidden_facts_give_the_scalar_episodes(fact, value):
    forced = {"scenario": "mixed", "split": "test", "overrides": {fact: value}}
    runs = [play(s, "random", **forced) for s in SEEDS[:8]]
    replay(ReleaseVectorEnv(8, **forced), runs)


def test_an_error_rate_forced_near_the_alarm_is_decided_by_the_probes_draw():
    forced = {"v2_broken": True, "broken_error_rate": 0.0098}  # 0.0088-0.0108 by the draw
    # The oracle probes green before any traffic moves (random play, since v5 ended by its first
    # refused complete, seldom gets that far).
    runs = [play(s, "oracle", scenario="nominal", overrides=forced) for s in SEEDS[:24]]
    replay(ReleaseVectorEnv(24, scenario="nominal", overrides=forced), runs)
    alarms = {o[15] for r in runs for o, m in zip(r.obs, r.masks, strict=True) if o[12] == -1}
    assert alarms == {0.0, 1.0}


@pytest.mark.parametrize("actor", ["ship_then_roll_back", "ship_then_probe", "premature_complete"])
def test_harm_and_refused_completions_end_lanes_as_the_scalar_episodes(actor):
    """Issue 20.5: lanes whose policy harms users before it rolls back, or completes too early,
    end where the scalar world ends them, ``unsafe`` or ``incomplete``, with its return."""
    runs = [play(s, actor, scenario="mixed", split="test") for s in SEEDS[:60]]
    replay(ReleaseVectorEnv(60, scenario="mixed", split="test"), runs)
    outcomes = {r.outcome for r in runs}
    if actor == "premature_complete":
        assert outcomes == {"incomplete"}
    else:
        assert "unsafe" in outcomes and len(outcomes) > 1, outcomes


def test_the_harm_limit_is_crossed_where_the_judge_rounds_past_it():
    edge = _least_above(HARM_LIMIT)
    assert _HARMFUL == edge and round(edge, 6) > HARM_LIMIT
    assert round(math.nextafter(edge, -math.inf), 6) <= HARM_LIMIT


def test_the_generator_backend_gives_the_same_lanes():
    runs = [play(s, "random", scenario="mixed") for s in SEEDS[:32]]
    replay(ReleaseVectorEnv(32, scenario="mixed", rng="generator"), runs)


# -- budgets, time limits, autoreset ------------------------------------------------------


def test_the_budget_truncates_with_a_verdict():
    runs = [play(s, "inspect", scenario="mixed", max_steps=10) for s in SEEDS[:16]]
    assert {len(r.actions) for r in runs} == {10} and {r.outcome for r in runs} == {"incomplete"}
    replay(ReleaseVectorEnv(16, scenario="mixed", max_steps=10), runs)


def test_the_registered_time_limit_cuts_a_longer_budget_without_a_verdict():
    runs = [play(s, "inspect", scenario="mixed", max_steps=80) for s in SEEDS[:8]]
    assert {len(r.actions) for r in runs} == {60} and {r.outcome for r in runs} == {None}
    replay(ReleaseVectorEnv(8, scenario="mixed", max_steps=80), runs)


def test_next_step_autoreset_is_gymnasiums_sync_vector_env():
    sync_and_batched("release", 6, 11, 150, scenario="mixed")


def test_same_step_autoreset_reports_the_final_observation():
    runs = [play(s, "random", scenario="mixed") for s in SEEDS[:6]]
    env = ReleaseVectorEnv(6, scenario="mixed", autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=SEEDS[:6])
    for t in range(max(len(r.actions) for r in runs)):
        actions = [r.actions[t] if t < len(r.actions) else 0 for r in runs]
        obs, _, terminated, truncated, info = env.step(np.array(actions))
        for i, r in enumerate(runs):
            if t == len(r.actions) - 1:
                assert terminated[i] or truncated[i]
                assert np.array_equal(info["final_obs"][i], r.obs[-1])
                assert np.array_equal(obs[i], r.next_obs)
                assert info["outcome"][i] == r.outcome and info["seed"][i] == r.episode_seed
                assert env.world.seeds[i] == r.next_seed


# -- the vector env keeps Gymnasium's contract --------------------------------------------


def test_the_vector_env_has_gymnasiums_spaces_dtypes_and_shapes():
    env = ReleaseVectorEnv(5, scenario="nominal")
    single = gym.make(GYM_ID)
    assert env.single_observation_space == single.observation_space
    assert env.single_action_space == single.action_space
    assert env.observation_space.shape == (5, 24) and env.action_space.shape == (5,)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(5, int))
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs in env.observation_space
    assert info == {}  # no seed before the end
    for _ in range(70):
        masks = env.action_masks()
        assert masks.shape == (5, 10) and masks.dtype == bool and masks.any(axis=1).all()
        obs, reward, terminated, truncated, info = env.step(masks.argmax(axis=1))
        assert obs in env.observation_space
        assert reward.dtype == np.float64 and reward.shape == (5,)
        assert terminated.dtype == truncated.dtype == np.bool_
        assert set(info) <= {"seed", "_seed", "outcome", "_outcome", "return", "_return"}


def test_one_seed_gives_one_trajectory_and_copies_are_the_callers():
    def run() -> list[bytes]:
        env = ReleaseVectorEnv(7, scenario="mixed")
        obs, _ = env.reset(seed=5)
        out = [obs.tobytes()]
        for t in range(40):
            obs, reward, *_ = env.step(np.full(7, t % 10))
            out += [obs.tobytes(), reward.tobytes()]
            obs[:] = 9  # the caller's copy
        return out

    assert run() == run()


def test_reset_mask_and_disabled_autoreset():
    env = ReleaseVectorEnv(3, autoreset_mode="Disabled", max_steps=2)
    env.reset(seed=0)
    env.step(np.zeros(3, int))
    _, _, _, truncated, _ = env.step(np.zeros(3, int))
    assert truncated.all()
    with pytest.raises(ReleaseBatchError, match="reset_mask"):
        env.step(np.zeros(3, int))
    _, info = env.reset(options={"reset_mask": np.array([True, True, True])})
    assert "seed" not in info
    env.step(np.zeros(3, int))


def test_bad_input_is_refused_with_the_value():
    with pytest.raises(ReleaseBatchError, match="dense"):
        ReleaseBatch(2, reward_timing="dense")
    with pytest.raises(HeldOutFamilyError, match="held-out family: it is never in the train"):
        ReleaseBatch(2, "flapping_health")
    with pytest.raises(HeldOutFamilyError, match="held-out family: it is never in the train"):
        ReleaseVectorEnv(2, scenario="mixed", overrides={"family": "flapping_health"})
    with pytest.raises(opsgym.OpsgymError, match="no_such_fact"):
        ReleaseBatch(2, overrides={"no_such_fact": 1})
    env = ReleaseVectorEnv(2)
    env.reset(seed=0)
    with pytest.raises(ReleaseBatchError, match="got 10"):
        env.step(np.array([0, 10]))
    with pytest.raises(ReleaseBatchError, match="shape"):
        env.step(np.array([0, 1, 2]))


def test_make_vec_builds_it_through_a_vector_entry_point():
    gym.register(
        "opsgym-test/ReleaseBatched-v4",
        entry_point="opsgym.adapters.gym:OpsEnv",
        vector_entry_point="opsgym.vector.env:ReleaseVectorEnv",
        kwargs={"env": "release"},
        max_episode_steps=60,
    )
    try:
        env = gym.make_vec(
            "opsgym-test/ReleaseBatched-v4", 4, "vector_entry_point", scenario="nominal"
        )
        sync = gym.make_vec(GYM_ID, 4, "sync", scenario="nominal")
        assert np.array_equal(env.reset(seed=1)[0], sync.reset(seed=1)[0])
    finally:
        del gym.registry["opsgym-test/ReleaseBatched-v4"]


# -- Stable-Baselines3 ----------------------------------------------------------------------


def test_the_sb3_vec_env_is_dummy_vec_env_over_the_gym_face():
    sb3 = pytest.importorskip("stable_baselines3")
    from opsgym.vector.sb3 import ReleaseSB3VecEnv

    n = 6
    dummy = sb3.common.vec_env.DummyVecEnv([lambda: gym.make(GYM_ID, scenario="mixed")] * n)
    ours = ReleaseSB3VecEnv(n, scenario="mixed")
    dummy.seed(4)
    ours.seed(4)
    a, b = dummy.reset(), ours.reset()
    rng = np.random.default_rng(0)
    for t in range(200):
        masks = np.stack(dummy.env_method("action_masks"))
        assert np.array_equal(a, b), t
        assert np.array_equal(masks, np.stack(ours.env_method("action_masks"))), t
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        a, ra, da, ia = dummy.step(actions)
        b, rb, db, ib = ours.step(actions)
        assert ra.dtype == rb.dtype and ra.tobytes() == rb.tobytes(), t
        assert np.array_equal(da, db), t
        for x, y in zip(ia, ib, strict=True):
            if x.get("terminal_observation") is not None:
                assert np.array_equal(x["terminal_observation"], y["terminal_observation"])
                assert x["TimeLimit.truncated"] == y["TimeLimit.truncated"]
                assert x["outcome"] == y["outcome"]


def test_maskable_ppo_trains_on_the_sb3_vec_env_unchanged():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    from opsgym.vector.sb3 import ReleaseSB3VecEnv

    env = ReleaseSB3VecEnv(16, scenario="mixed")
    env.seed(0)
    assert is_masking_supported(env)
    assert get_action_masks(env).shape == (16, 10)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=8, batch_size=64, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(total_timesteps=256)
    obs = env.reset()
    for _ in range(20):
        masks = get_action_masks(env)
        actions, _ = model.predict(obs, action_masks=masks)
        assert masks[np.arange(16), actions].all()
        obs, *_ = env.step(actions)
