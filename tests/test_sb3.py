"""Stable-Baselines3 meets the Gym face: sb3's own checker, and MaskablePPO using our masks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from opsgym.core.registry import specs

GYM_IDS = [specs()[e].gym_id for e in sorted(specs())]


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_sb3_env_checker_accepts_the_gym_face(gym_id):
    sb3_check_env(gym.make(gym_id).unwrapped, warn=True)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_action_masks_before_reset_asks_for_a_reset(gym_id):
    """Regression (issue 17, item 6; found by mypy): it raised AttributeError on ``None``."""
    env = gym.make(gym_id).unwrapped
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.action_masks()
    env.reset(seed=0)
    assert env.action_masks().dtype == bool


def trained_maskable_ppo(env: gym.Env, seed: int, width: int) -> MaskablePPO:
    """A tiny MaskablePPO after 128 steps on ``env``."""
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=seed,
        device="cpu",
        policy_kwargs={"net_arch": [width]},
    )
    return model.learn(total_timesteps=128)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_maskable_ppo_trains_and_never_picks_a_masked_action(gym_id):
    env = gym.make(gym_id)
    assert is_masking_supported(env)
    model = trained_maskable_ppo(env, seed=0, width=32)
    obs, _ = env.reset(seed=1)
    rejected = 0
    for _ in range(100):
        action, _ = model.predict(obs, action_masks=get_action_masks(env), deterministic=False)
        obs, _, terminated, truncated, info = env.step(int(action))
        rejected += info["rejected"] is not None
        if terminated or truncated:
            obs, _ = env.reset()
    assert rejected == 0


def test_maskable_ppo_training_is_reproducible_with_one_seed():
    def train():
        env = gym.make("opsgym/Release-v5", scenario="deploy_timeout")
        model = trained_maskable_ppo(env, seed=3, width=16)
        return np.concatenate([p.detach().numpy().ravel() for p in model.policy.parameters()])

    assert np.array_equal(train(), train())


@pytest.mark.parametrize("env", ["release", "oversight", "fleet"])
def test_the_batched_curriculum_starts_every_lane_where_the_gym_curriculum_does(env):
    """``batched_prefix_start`` over the batched lanes is ``PrefixStart(Monitor(gym.make))`` in a
    ``DummyVecEnv``, step by step: observations, masks, rewards, dones, where each episode
    started and what ``Monitor`` reports at its end (random valid actions; the schedule moved
    as the trainer moves it)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from opsgym.core.registry import spec
    from opsgym.training.ppo import PrefixStart, batched_prefix_start
    from opsgym.vector.sb3 import BatchedSB3VecEnv

    n, gym_id = 6, spec(env).gym_id

    def make() -> gym.Env:
        return PrefixStart(
            Monitor(gym.make(gym_id, scenario="mixed"), info_keywords=("outcome",)), env
        )

    dummy = DummyVecEnv([make] * n)
    lanes = batched_prefix_start(BatchedSB3VecEnv(n, env=env, scenario="mixed"), env, "mixed")
    rng = np.random.default_rng(0)
    for vec in (dummy, lanes):
        vec.seed(11)
    assert np.array_equal(dummy.reset(), lanes.reset())
    started = 0
    for step in range(300):
        if step % 50 == 0:
            schedule = [(1.0, 0.0), (1.0, 0.5), (1.0, 1.0), (0.5, 1.0), (0.0, 1.0), (0.7, 0.3)]
            for vec in (dummy, lanes):
                vec.env_method("set_schedule", *schedule[step // 50])
        masks = np.stack(dummy.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(lanes.env_method("action_masks"))), step
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = dummy.step(actions)
        obs_b, rewards_b, dones_b, infos_b = lanes.step(actions)
        assert np.array_equal(obs, obs_b) and np.array_equal(rewards, rewards_b), step
        assert np.array_equal(dones, dones_b), step
        for info, info_b in zip(infos, infos_b, strict=True):
            if "episode" in info:
                assert info["prefix"] == info_b["prefix"], step
                started += info["prefix"] > 0
                for key in ("r", "l", "outcome"):
                    assert info["episode"][key] == info_b["episode"][key], (step, key)
                assert np.array_equal(info["terminal_observation"], info_b["terminal_observation"])
            else:
                assert "episode" not in info_b
    assert started >= 10  # the curriculum did start episodes part-way
