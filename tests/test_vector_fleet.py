"""The batched fleet world is the scalar Gym face, lane for lane, step for step, bit for bit."""

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
from opsgym.vector import BatchError, FleetBatch, FleetVectorEnv
from opsgym.vector._pyfloat import py_round
from tests.vector_lanes import Played, record, replay, sync_and_batched

GYM_ID = spec("fleet").gym_id
CALLS = [(tool.name, args.model_dump(exclude_none=True)) for tool, args in catalogue("fleet")]
INDEX = {(name, tuple(sorted(args.items()))): i for i, (name, args) in enumerate(CALLS)}
FAMILIES = [s.name for s in spec("fleet").families()]
TRAIN = opsgym.scenarios("fleet", "train")
SEEDS = list(range(200))
WAIT = len(CALLS) - 1
ENDING = {CALLS.index(("reboot_fleet", {})), CALLS.index(("declare_resolved", {}))}
EXPLOITS = {e.name: e for e in spec("fleet").exploits if not e.family_aware}


def play(seed: int, actor: str, **kwargs: Any) -> Played:
    """Play one episode on the scalar Gym face with ``actor``: ``random`` (a valid action
    from the mask, drawn by a generator seeded from ``seed``), ``patient`` (the same, never
    rebooting the fleet nor declaring: episodes that run to the task's budget), ``await``
    (always wait), or a scripted policy or one of the audit's exploits (its calls mapped to
    catalogue indices; ``inspect_flight_recorder(last=4)`` played as the catalogue's
    ``last=1``, which changes only the dump's text).
    """
    if actor in EXPLOITS:
        policy = EXPLOITS[actor].policy()
    else:
        policy = None if actor in ("random", "patient", "await") else get_policy("fleet", actor)
    if policy is not None:
        policy.reset()

    def choose(ops: Any, mask: np.ndarray, rng: np.random.Generator, step: int) -> int:
        if actor == "random":
            return int(rng.choice(np.flatnonzero(mask)))
        if actor == "patient":
            return int(rng.choice([i for i in np.flatnonzero(mask) if i not in ENDING]))
        if actor == "await":
            return WAIT
        legal = [CALLS[i] for i in np.flatnonzero(mask)]
        name, args = policy.act(ops.episode.observe(), legal)
        if name == "inspect_flight_recorder":
            args = {**args, "last": 1}
        return INDEX[(name, tuple(sorted(args.items())))]

    return record("fleet", seed, choose, **kwargs)


# -- every lane is the scalar episode -----------------------------------------------------


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_py_round_is_pythons_round_on_any_range_and_on_halves(digits):
    rng = np.random.default_rng(digits)
    wide = rng.random(20_000) * 10.0 ** rng.integers(-3, 6, 20_000)
    halves = (rng.integers(0, 10**6, 5_000) + 0.5) / 10**digits  # decimal halves, as parsed
    for x in (wide, halves, np.nextafter(halves, 0), np.nextafter(halves, np.inf)):
        assert py_round(x, digits).tolist() == [round(float(v), digits) for v in x]


def lanes_of(scenarios: list[str], n: int) -> list[str]:
    return [scenarios[i % len(scenarios)] for i in range(n)]


@pytest.mark.parametrize(
    ("actor", "split", "scenarios"),
    [
        ("random", "train", [*TRAIN, "mixed"]),
        ("naive", "test", [*FAMILIES, "mixed"]),
        ("oracle", "dev", [*FAMILIES, "mixed"]),
        ("patient", "test", [*FAMILIES, "mixed"]),
    ],
)
def test_every_lane_is_the_scalar_episode(actor, split, scenarios):
    lanes = lanes_of(scenarios, len(SEEDS))
    runs = [play(s, actor, scenario=sc, split=split) for s, sc in zip(SEEDS, lanes, strict=True)]
    replay(FleetVectorEnv(len(SEEDS), scenario=lanes, split=split), runs)
    outcomes = {r.outcome for r in runs}
    expected = {  # what each actor's episodes end in, as the scalar face plays them
        "random": {"destroyed", "unrecovered", "recovered_unconfirmed"},
        "naive": {"destroyed", "unrecovered", "recovered_unconfirmed", "recovered"},
        "oracle": {"recovered", "recovered_late"},
        "patient": {"destroyed", "unrecovered", "recovered_unconfirmed"},
    }[actor]
    assert expected <= outcomes


def test_the_audits_exploits_give_the_scalar_episodes():
    """Damaged, late and undiagnosed recoveries, premature declarations, spam, blind fixes."""
    runs = [
        play(s, name, scenario=exploit.scenario, split="test")
        for name, exploit in EXPLOITS.items()
        for s in SEEDS[:12]
    ]
    scenarios = [e.scenario for e in EXPLOITS.values() for _ in SEEDS[:12]]
    replay(FleetVectorEnv(len(runs), scenario=scenarios, split="test"), runs)
    late, undiagnosed = "recovered_late", "recovered_undiagnosed"
    assert {late, undiagnosed, "recovered_with_damage"} <= {r.outcome for r in runs}


def forced_both_ways() -> list[tuple[str, Any]]:
    hidden = opsgym.hidden_facts("fleet", "mixed")
    return [(fact, value) for fact, d in hidden.items() for value in d["values"]]


@pytest.mark.parametrize(("fact", "value"), forced_both_ways())
def test_forced_hidden_facts_give_the_scalar_episodes(fact, value):
    forced = {"scenario": "mixed", "split": "test", "overrides": {fact: value}}
    runs = [play(s, a, **forced) for s in SEEDS[:6] for a in ("random", "patient", "oracle")]
    replay(FleetVectorEnv(len(runs), **forced), runs)


def test_every_fact_the_world_draws_can_be_forced():
    """The facts no scenario declares (offsets, decoys, spreads, the worker's error)."""
    forced = {
        "oom_pair_offset": 12,
        "decoy_file_offset": 3,
        "recur_minutes": 4.5,
        "spread_minutes": 41.0,
        "secondary": True,
        "secondary_offset": 30,
        "decoy_rank": 5,
        "stale_xid_node": 2,
        "dmesg_wrapped": True,
        "desync_op": "nccl:reduce_scatter",
        "worker_error": 0.9,
        "oom_pair": True,
    }
    for fact, value in forced.items():
        kwargs = {"scenario": "mixed", "split": "test", "overrides": {fact: value}}
        runs = [play(s, a, **kwargs) for s in SEEDS[:4] for a in ("patient", "oracle")]
        replay(FleetVectorEnv(len(runs), **kwargs), runs)


@pytest.mark.parametrize(
    "config",
    [
        {"level": 3},
        {"level": 2, "difficulty_multiplier": 2.0},
        {"coordination": False, "token_allowance": 500},
        {"level": 1, "difficulty_multiplier": 0.5, "downtime_cost_per_minute": 10.0},
    ],
)
def test_configs_give_the_scalar_episodes(config):
    runs = [
        play(s, a, scenario="mixed", config=config)
        for s in SEEDS[:12]
        for a in ("random", "patient", "oracle")
    ]
    replay(FleetVectorEnv(len(runs), scenario="mixed", config=config), runs)


def test_the_generator_backend_gives_the_same_lanes():
    runs = [play(s, a, scenario="mixed") for s in SEEDS[:12] for a in ("random", "patient")]
    replay(FleetVectorEnv(24, scenario="mixed", rng="generator"), runs)


# -- budgets, time limits, autoreset ------------------------------------------------------


def test_the_budget_truncates_with_a_verdict():
    runs = [play(s, "await", scenario="mixed", max_steps=10) for s in SEEDS[:16]]
    assert {len(r.actions) for r in runs} == {10}
    assert all(r.truncated[-1] and not r.terminated[-1] for r in runs)
    assert "unrecovered" in {r.outcome for r in runs}  # a verdict, though no call was made
    replay(FleetVectorEnv(16, scenario="mixed", max_steps=10), runs)


def test_the_task_budget_and_the_window_end_episodes():
    """Waiting out a task's 50 calls, and restarting a job past the 900-minute window."""
    runs = [
        play(s, "await", scenario=sc)
        for s, sc in zip(SEEDS[:4], ("easy", "hard", "medium", "gpu_lost"), strict=True)
    ]
    assert {len(r.actions) for r in runs} == {50} and all(r.terminated[-1] for r in runs)
    replay(FleetVectorEnv(4, scenario=["easy", "hard", "medium", "gpu_lost"]), runs)


def test_the_registered_time_limit_cuts_a_longer_budget_without_a_verdict():
    runs = [play(s, "patient", scenario="black_swan", max_steps=400) for s in SEEDS[:12]]
    replay(FleetVectorEnv(12, scenario="black_swan", max_steps=400), runs)
    runs = [
        play(s, "patient", scenario="mixed", max_steps=200, max_episode_steps=3) for s in SEEDS[:8]
    ]
    assert {r.outcome for r in runs if len(r.actions) == 3} == {None}
    replay(FleetVectorEnv(8, scenario="mixed", max_steps=200, max_episode_steps=3), runs)


class Quiet(gym.Wrapper):
    """A scalar env whose step infos are only its outcome: Gymnasium's sync vector env cannot
    stack fleet's reports (a key holding a dict on one lane and ``None`` on another).
    """

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {"outcome": info.get("outcome")}

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def test_next_step_autoreset_is_gymnasiums_sync_vector_env():
    sync_and_batched("fleet", 6, 11, 80, wrappers=[Quiet], scenario="mixed")


def test_same_step_autoreset_reports_the_final_observation():
    runs = [play(s, "random", scenario="mixed") for s in SEEDS[:6]]
    env = FleetVectorEnv(6, scenario="mixed", autoreset_mode=AutoresetMode.SAME_STEP)
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
    env = FleetVectorEnv(5, scenario="mixed")
    single = gym.make(GYM_ID)
    assert env.single_observation_space == single.observation_space
    assert env.single_action_space == single.action_space
    assert env.observation_space.shape == (5, 419) and env.action_space.shape == (5,)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(5, int))
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs in env.observation_space
    for _ in range(60):
        masks = env.action_masks()
        assert masks.shape == (5, 117) and masks.dtype == bool and masks.any(axis=1).all()
        obs, reward, terminated, truncated, info = env.step(masks.argmax(axis=1))
        assert obs in env.observation_space
        assert reward.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
        assert set(info) <= {"seed", "_seed", "outcome", "_outcome", "return", "_return"}


def test_bad_input_is_refused_with_the_value():
    with pytest.raises(BatchError, match="dense"):
        FleetBatch(2, reward_timing="dense")
    with pytest.raises(HeldOutFamilyError, match="held-out family: it is never in the train"):
        FleetBatch(2, "version+desync")
    with pytest.raises(opsgym.OpsgymError, match="no_such_fact"):
        FleetBatch(2, "mixed", overrides={"no_such_fact": 1})
    with pytest.raises(opsgym.OpsgymError, match="bw_drop"):
        FleetBatch(2, "mixed", overrides={"bw_drop": 5.0})
    with pytest.raises(opsgym.OpsgymError, match="level"):
        FleetBatch(2, config={"level": 4})
    env = FleetVectorEnv(2)
    env.reset(seed=0)
    with pytest.raises(BatchError, match="got 117"):
        env.step(np.array([0, 117]))


def test_make_vec_builds_the_batch_through_the_packages_vector_entry_point():
    env = gym.make_vec(GYM_ID, 4, vectorization_mode="vector_entry_point", scenario="mixed")
    assert isinstance(env, FleetVectorEnv.__mro__[1]) and env.world.world == "fleet"
    sync = gym.make_vec(GYM_ID, 4, vectorization_mode="sync", scenario="mixed")
    assert np.array_equal(env.reset(seed=1)[0], sync.reset(seed=1)[0])
