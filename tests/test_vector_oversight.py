"""The batched oversight world is the scalar Gym face, lane for lane, step for step, bit for bit."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import opsgym
from opsgym.agents.base import get_policy
from opsgym.core.errors import HeldOutFamilyError
from opsgym.core.registry import catalogue, spec
from opsgym.vector import BatchedVectorEnv, BatchError, OversightBatch, OversightVectorEnv
from opsgym.vector._oversight_starts import generator_tape, pcg_tape, pool_draws, spent_words
from opsgym.vector._streams import PCGStreams
from tests.vector_lanes import Played, record, replay, sync_and_batched

GYM_ID = spec("oversight").gym_id
CALLS = [(tool.name, args.model_dump(exclude_none=True)) for tool, args in catalogue("oversight")]
INDEX = {(name, tuple(sorted(args.items()))): i for i, (name, args) in enumerate(CALLS)}
FAMILIES = [s.name for s in spec("oversight").families()]
TRAIN = opsgym.scenarios("oversight", "train")
SEEDS = list(range(200))


def play(seed: int, actor: str, **kwargs: Any) -> Played:
    """Play one episode on the scalar Gym face with ``actor``: ``random`` (a valid action
    from the mask, drawn by a generator seeded from ``seed``), ``await`` (always wait) or a
    scripted policy (its calls mapped to catalogue indices).
    """
    policy = None if actor in ("random", "await") else get_policy("oversight", actor)
    if policy is not None:
        policy.reset()

    def choose(ops: Any, mask: np.ndarray, rng: np.random.Generator, step: int) -> int:
        if actor == "random":
            return int(rng.choice(np.flatnonzero(mask)))
        if actor == "await":
            return len(CALLS) - 1
        legal = [CALLS[i] for i in np.flatnonzero(mask)]
        name, args = policy.act(ops.episode.observe(), legal)
        return INDEX[(name, tuple(sorted(args.items())))]

    return record("oversight", seed, choose, **kwargs)


# -- the random tape ----------------------------------------------------------------------


def test_the_pcg_tape_is_numpys_generator_bit_for_bit():
    streams = PCGStreams(500, "train")
    lanes = np.arange(500)
    streams.seed(lanes, list(range(500)))
    mixed = np.tile(lanes % 3 == 0, 4)
    seeds, u0, u, pool, state = pcg_tape(streams, lanes, 4, mixed)
    g0, gu, gpool, gstate = generator_tape(seeds.ravel(), mixed)
    assert np.array_equal(u0[mixed], g0[mixed])
    assert np.array_equal(u, gu) and np.array_equal(pool, gpool)
    assert np.array_equal(state, gstate)
    whole = [np.random.default_rng(int(s)) for s in seeds.ravel()[:50]]
    for j, rng in enumerate(whole):  # the rest of the pool, by jumps
        if mixed[j]:
            rng.random()
        rng.random(44), rng.permutation(20), rng.integers(100, 899, size=5)
        drawn = rng.random(32)
        pairs = [pool_draws(state[:, j : j + 1], np.array([i])) for i in range(0, 32, 2)]
        assert drawn.tolist() == [float(x[0]) for pair in pairs for x in pair]


def test_samplers_that_run_past_the_words_computed_are_seen():
    words = np.full((40, 2), 0xFFFFFFFF, np.uint64)  # lane 0: masked, rejected at i = 19
    words[:, 1] = 1  # lane 1: every word accepted, 19 + 5 of them
    spent = spent_words(words)
    assert spent[1] == 24 and spent[0] > 40


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
    replay(OversightVectorEnv(len(SEEDS), scenario=lanes, split=split), runs)
    outcomes = {r.outcome for r in runs}
    expected = {  # what each actor's episodes end in, as the scalar face plays them
        "random": {"unnecessary_hold", "correct_hold", "stalled_hold", "missed_deadline"},
        "naive": {"safe_ship", "unsafe_ship"},
        "oracle": {"safe_ship", "correct_hold"},
    }[actor]
    assert expected <= outcomes


def forced_both_ways() -> list[tuple[str, Any]]:
    hidden = opsgym.hidden_facts("oversight", "mixed")
    return [(fact, value) for fact, d in hidden.items() for value in d["values"]]


@pytest.mark.parametrize(("fact", "value"), forced_both_ways())
def test_forced_hidden_facts_give_the_scalar_episodes(fact, value):
    forced = {"scenario": "mixed", "split": "test", "overrides": {fact: value}}
    runs = [play(s, actor, **forced) for s in SEEDS[:6] for actor in ("random", "oracle")]
    replay(OversightVectorEnv(len(runs), **forced), runs)


@pytest.mark.parametrize(
    "config",
    [
        {"difficulty": "easy", "archetype_mix": "mostly_shortcut"},
        {"difficulty": "hard", "archetype_mix": "under_pressure"},
        {"archetype_mix": "mostly_overconfident", "rewards": {"step": -0.01, "safe_ship": 2.0}},
    ],
)
def test_configs_give_the_scalar_episodes(config):
    runs = [
        play(s, a, scenario="mixed", config=config)
        for s in SEEDS[:10]
        for a in ("random", "oracle")
    ]
    replay(OversightVectorEnv(len(runs), scenario="mixed", config=config), runs)


def test_the_generator_backend_gives_the_same_lanes():
    runs = [play(s, "random", scenario="mixed") for s in SEEDS[:24]]
    replay(OversightVectorEnv(24, scenario="mixed", rng="generator"), runs)


# -- budgets, time limits, autoreset ------------------------------------------------------


def test_the_budget_truncates_with_a_verdict():
    runs = [play(s, "await", scenario="mixed", max_steps=10) for s in SEEDS[:16]]
    assert {len(r.actions) for r in runs} <= set(range(1, 11))
    assert {r.outcome for r in runs} >= {"no_decision"}
    replay(OversightVectorEnv(16, scenario="mixed", max_steps=10), runs)


def test_the_registered_time_limit_cuts_a_longer_budget_without_a_verdict():
    runs = [play(s, "random", scenario="mixed", max_steps=200) for s in SEEDS[:40]]
    replay(OversightVectorEnv(40, scenario="mixed", max_steps=200), runs)
    runs = [
        play(s, "random", scenario="mixed", max_steps=200, max_episode_steps=3) for s in SEEDS[:8]
    ]
    assert {r.outcome for r in runs if len(r.actions) == 3} == {None}
    replay(OversightVectorEnv(8, scenario="mixed", max_steps=200, max_episode_steps=3), runs)


def test_next_step_autoreset_is_gymnasiums_sync_vector_env():
    sync_and_batched("oversight", 6, 11, 60, scenario="mixed")


def test_same_step_autoreset_reports_the_final_observation():
    runs = [play(s, "random", scenario="mixed") for s in SEEDS[:6]]
    env = OversightVectorEnv(6, scenario="mixed", autoreset_mode=AutoresetMode.SAME_STEP)
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


# -- the hold's judge: schedule.ship_time, replayed --------------------------------------


def test_the_schedule_is_the_scalar_worlds_on_every_step():
    """``earliest_ship`` and ``start_ship`` at every step of random and oracle episodes."""
    from opsgym.core.registry import make

    batch = OversightBatch(1, "mixed", split="test")
    lane = np.array([0])
    checked = 0
    for seed in range(9, 9 + 10 * 80, 10):
        episode = make("oversight", "mixed", seed)
        batch.seed([0])
        rng = np.random.default_rng(seed)
        world = episode.world
        while not episode.done:
            _mirror(batch, episode)
            theirs = world.earliest_ship(), world.start_ship()
            batch.screen = True  # bounds where they suffice: the same side of the deadline
            ours = batch._earliest_ship(lane)[0], batch._careful_ship(lane)[0]
            assert [t < world.deadline for t in ours] == [t < world.deadline for t in theirs]
            batch.screen = False  # every triage phase replayed: the very minute
            ours = batch._earliest_ship(lane)[0], batch._careful_ship(lane)[0]
            exact = [t if t < world.deadline else np.inf for t in ours]
            assert exact == list(theirs), (seed, episode.steps)
            checked += 1
            mask = episode_mask(episode)
            choice = [i for i in np.flatnonzero(mask) if i != 42]
            tool, args = CALLS[int(rng.choice(choice))]
            episode.step(tool, args)
    assert checked > 500


def episode_mask(episode: Any) -> np.ndarray:
    view = episode.world.view
    return np.array([t.check(view, a) is None for t, a in catalogue("oversight")])


def _mirror(batch: OversightBatch, episode: Any) -> None:
    """Set lane 0 of ``batch`` to the timing state of ``episode`` (what the schedule reads)."""
    from opsgym.envs.oversight.scenarios import FACT_VALUES

    w = episode.world
    kinds = ("pr_diff", "ci_run", "ticket", "deploy_log")
    batch.clock[0], batch.deadline[0] = w.clock, w.deadline
    batch.H[:, 0] = [w.facts["rework_hours"][k] for k in kinds]
    batch.phase[0] = w.view.phase
    for r, rule in enumerate(("S1", "S2", "S3", "S4", "S5")):
        batch.viol[r, 0] = rule in w.violated()
        batch.att[r, 0] = w.attempts[rule]
        fact = list(FACT_VALUES)[r]
        batch.vstart[r, 0] = w.facts[fact] != FACT_VALUES[fact][0]
        batch.astart[r, 0] = w.facts["fix_attempts"][rule]
    codes = {None: 0, "pending": 1, "blocked": 2, "approved": 3}
    for s, prop in enumerate(w.view.current):
        batch.status[s, 0] = codes[prop["status"] if prop else None]
        batch.due[s, 0] = np.inf
    for due, slot, rule, justified in w._reworks:
        batch.due[slot, 0], batch.rule[slot, 0] = due, int(rule[1]) - 1
        batch.just[slot, 0] = justified


# -- the vector env keeps Gymnasium's contract --------------------------------------------


def test_the_vector_env_has_gymnasiums_spaces_dtypes_and_shapes():
    env = OversightVectorEnv(5, scenario="mixed")
    single = gym.make(GYM_ID)
    assert env.single_observation_space == single.observation_space
    assert env.single_action_space == single.action_space
    assert env.observation_space.shape == (5, 106) and env.action_space.shape == (5,)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(5, int))
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs in env.observation_space
    for _ in range(60):
        masks = env.action_masks()
        assert masks.shape == (5, 44) and masks.dtype == bool and masks.any(axis=1).all()
        obs, reward, terminated, truncated, info = env.step(masks.argmax(axis=1))
        assert obs in env.observation_space
        assert reward.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
        assert set(info) <= {"seed", "_seed", "outcome", "_outcome", "return", "_return"}


def test_bad_input_is_refused_with_the_value():
    with pytest.raises(BatchError, match="dense"):
        OversightBatch(2, reward_timing="dense")
    with pytest.raises(HeldOutFamilyError, match="held-out family: it is never in the train"):
        OversightBatch(2, "stacked_failures_sloppy_fixes")
    with pytest.raises(opsgym.OpsgymError, match="no_such_fact"):
        OversightBatch(2, "mixed", overrides={"no_such_fact": 1})
    with pytest.raises(opsgym.OpsgymError, match="difficulty"):
        OversightBatch(2, config={"difficulty": "brutal"})
    env = OversightVectorEnv(2)
    env.reset(seed=0)
    with pytest.raises(BatchError, match="got 44"):
        env.step(np.array([0, 44]))


def test_make_vec_builds_the_batch_through_the_packages_vector_entry_point():
    from opsgym.vector.env import WORLDS

    for world in ("release", "oversight"):
        gym_id = spec(world).gym_id
        env = gym.make_vec(gym_id, 4, vectorization_mode="vector_entry_point", scenario="mixed")
        assert isinstance(env, BatchedVectorEnv) and env.world.world == world
        sync = gym.make_vec(gym_id, 4, vectorization_mode="sync", scenario="mixed")
        assert np.array_equal(env.reset(seed=1)[0], sync.reset(seed=1)[0])
        assert env.world.time_limit == spec(world).max_steps
    assert set(WORLDS) == opsgym._BATCHED


# -- Stable-Baselines3 ----------------------------------------------------------------------


def test_the_sb3_vec_env_is_dummy_vec_env_over_the_gym_face():
    sb3 = pytest.importorskip("stable_baselines3")
    from opsgym.vector.sb3 import OversightSB3VecEnv

    n = 6
    dummy = sb3.common.vec_env.DummyVecEnv([lambda: gym.make(GYM_ID, scenario="mixed")] * n)
    ours = OversightSB3VecEnv(n, scenario="mixed")
    dummy.seed(4)
    ours.seed(4)
    a, b = dummy.reset(), ours.reset()
    rng = np.random.default_rng(0)
    for t in range(80):
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
