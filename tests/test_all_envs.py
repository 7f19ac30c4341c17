"""Contracts every registered environment keeps, parametrized over every id."""

from __future__ import annotations

import json
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import opsgym
from opsgym.core.registry import catalogue, specs
from tests.conftest import random_valid_rollout

ENVS = sorted(specs())
GYM_IDS = [specs()[e].gym_id for e in ENVS]
ENV_SCENARIOS = [(e, s.name) for e in ENVS for s in specs()[e].scenarios]


def test_list_envs_names_every_env():
    assert opsgym.list_envs() == ENVS
    assert "release" in ENVS


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_check_env_passes_without_warnings(gym_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(gym_id).unwrapped)
        check_env(gym.make(gym_id, render_mode="ansi").unwrapped)


@pytest.mark.parametrize("env", ENVS)
def test_time_limit_comes_from_the_registration(env):
    genv = gym.make(specs()[env].gym_id)
    assert genv.spec.max_episode_steps == specs()[env].max_steps
    genv.reset(seed=0)
    assert genv.unwrapped.episode.max_steps == specs()[env].max_steps
    short = gym.make(specs()[env].gym_id, max_steps=3)
    short.reset(seed=0)
    lasting = next(i for i, (tool, _) in enumerate(catalogue(env)) if not tool.terminal)
    done = [short.step(lasting) for _ in range(3)][-1]
    assert done[3] and "verdict" in done[4]


def _rollout_gym(gym_id: str, seed: int, steps: int, action_seed: int = 1):
    env = gym.make(gym_id)
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    trace = [("reset", obs.tolist())]
    for _ in range(steps):
        mask = env.unwrapped.action_masks()
        action = int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0
        obs, reward, term, trunc, info = env.step(action)
        trace.append((action, obs.tolist(), reward, term, trunc, json.dumps(info, sort_keys=True)))
        if term or trunc:
            obs, _ = env.reset()
            trace.append(("reset", obs.tolist()))
    return trace


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_two_instances_with_one_seed_are_identical_over_200_steps(gym_id):
    a, b = _rollout_gym(gym_id, 123, 200), _rollout_gym(gym_id, 123, 200)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        assert x == y, f"first difference at step {i}: {x!r} != {y!r}"
    assert len(a) == len(b)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_different_seeds_give_different_episodes(gym_id):
    assert _rollout_gym(gym_id, 1, 60) != _rollout_gym(gym_id, 2, 60)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_pickle_round_trip_continues_identically(gym_id):
    env = gym.make(gym_id)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    table = catalogue(env.unwrapped.episode.env)
    lasting = np.array([not tool.terminal for tool, _ in table])  # a refusal would end it
    for _ in range(5):
        env.step(int(rng.choice(np.flatnonzero(env.unwrapped.action_masks() & lasting))))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(30):
        mask = env.unwrapped.action_masks()
        assert (mask == clone.unwrapped.action_masks()).all()
        action = int(rng.choice(np.flatnonzero(mask)))
        a, b = env.step(action), clone.step(action)
        assert a[0].tolist() == b[0].tolist() and a[1:4] == b[1:4]
        if a[2] or a[3]:
            break


@pytest.mark.parametrize("env,scenario", ENV_SCENARIOS)
def test_random_episodes_record_as_json_and_replay_exactly(env, scenario):
    for seed in (0, 9):
        ep = random_valid_rollout(env, scenario, seed, 80, action_seed=seed)
        record = json.loads(json.dumps(ep.record()))
        result = opsgym.replay(record)
        assert result.match, result.first_difference
        assert result.replayed_hash == record["hash"]


@pytest.mark.parametrize("env", ENVS)
def test_replay_names_the_first_tampered_event(env):
    ep = random_valid_rollout(env, None, 3, 12, terminal=False)
    record = ep.record()
    assert len(record["events"]) >= 4
    record["events"][2]["report"] = {"forged": True}
    result = opsgym.replay(record)
    assert not result.match
    assert result.first_difference["step"] == 3
    assert result.first_difference["field"] == "report"
    assert result.first_difference["recorded"] == {"forged": True}
    assert result.first_difference["replayed"] == ep.events[2]["report"]


@pytest.mark.parametrize("env", ENVS)
def test_replay_detects_a_forged_hash_and_a_forged_verdict(env):
    record = opsgym.run(env, None, 4, "random").record()
    forged = json.loads(json.dumps(record))
    forged["events"][0]["hash"] = "0" * 64
    assert opsgym.replay(forged).first_difference["field"] == "hash"
    forged = json.loads(json.dumps(record))
    forged["verdict"]["outcome"] = "forged"
    assert opsgym.replay(forged).first_difference["field"] == "verdict"


@pytest.mark.parametrize("env,scenario", ENV_SCENARIOS)
def test_hidden_facts_do_not_reach_the_agent_before_a_revealing_tool(env, scenario):
    """Force each hidden fact both ways; whatever the agent does short of a tool that may
    reveal it, everything it sees (observations, reports, vectors, masks) is identical."""
    s = specs()[env].scenario(scenario)
    for fact, values in s.hidden.items():
        allowed = [i for i, (t, _) in enumerate(catalogue(env)) if t.name not in s.revealers(fact)]
        for seed in range(4):
            rng = np.random.default_rng(seed)
            actions = [int(rng.choice(allowed)) for _ in range(40)]
            seen = []
            for value in values:
                genv = gym.make(
                    specs()[env].gym_id,
                    scenario=scenario,
                    overrides={fact: value},
                    split="test" if s.held_out or s.mixture else "train",
                )
                obs, _ = genv.reset(seed=seed)
                trace = [obs.tolist(), genv.unwrapped.episode.observe()]
                for a in actions:
                    obs, _, term, trunc, info = genv.step(a)
                    ep = genv.unwrapped.episode
                    trace.append(
                        (
                            a,
                            obs.tolist(),
                            info["report"],
                            info["rejected"],
                            genv.unwrapped.action_masks().tolist(),
                            ep.observe(),
                        )
                    )
                    if term or trunc:
                        break
                seen.append(trace)
            for value, other in zip(values[1:], seen[1:], strict=True):
                for i, (x, y) in enumerate(zip(seen[0], other, strict=False)):
                    assert x == y, f"{fact}={values[0]} vs {value} differ at step {i}: {x} != {y}"


@pytest.mark.parametrize("env", ENVS)
def test_unknown_names_suggest_close_matches(env):
    with pytest.raises(opsgym.OpsgymError, match="Did you mean"):
        opsgym.make(env[:-1] + "x")
    first = specs()[env].scenarios[0].name
    with pytest.raises(opsgym.OpsgymError, match=repr(first)):
        opsgym.make(env, scenario=first + "s")


@pytest.mark.parametrize("seed", [-3, 1.5, "7", True])
def test_bad_seeds_are_refused_with_the_value(seed):
    with pytest.raises(ValueError, match=repr(seed).replace(".", r"\.")):
        opsgym.make("release", seed=seed)


@pytest.mark.parametrize("env", ENVS)
def test_tool_schemas_are_generated_and_strict(env):
    ep = opsgym.make(env)
    names = [t["function"]["name"] for t in ep.tools]
    assert len(names) == len(set(names))
    for t in ep.tools:
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert t["function"]["description"]
    json.dumps(ep.tools)


@pytest.mark.parametrize("env", ENVS)
def test_scripted_oracle_and_random_policies_run_to_an_outcome(env):
    for policy in ("random", "oracle"):
        ep = opsgym.run(env, None, 11, policy)
        assert ep.done and ep.verdict is not None
        assert ep.verdict.outcome in specs()[env].outcome_rewards


@pytest.mark.parametrize("env", ENVS)
def test_only_tools_are_callable_never_other_world_methods(env):
    from tests.conftest import world_state

    ep = opsgym.make(env, None, 0)
    for name in ("truth", "observe", "advance", "apply", "__init__", "_change", "view", "rng"):
        before = world_state(ep)
        result = ep.step(name, {"minutes": 1000})
        assert result.rejected is not None and result.rejected.startswith("unknown tool")
        assert world_state(ep) == before
