"""PPO over the Gym face: MaskablePPO (sb3-contrib), a start-state curriculum, runs in the store.

    opsgym train ppo --env release [--scenario mixed] [--total-timesteps 300000] [--seed 1]
                     [--n-envs 4] [--curriculum/--no-curriculum] [--mask/--no-mask] [--vector]
                     [--out runs]

The script reads top to bottom, as CleanRL's do: :class:`PPOConfig` (a field per argument), one
seeding block, the environments, the curriculum, the model, training with checkpoints, the final
evaluation. A run is named ``{env}__ppo__{seed}__{time}`` unless given a name; its folder
``OUT/NAME`` must not exist. It holds ``config.json``, ``checkpoints/``, TensorBoard logs
(``tb/``, when ``tensorboard`` is installed), ``model.zip`` (the last policy) and
``evaluation.json``; the store records the run (config, learning curves, checkpoint, status).
Every evaluation, the final one and the ``dev_*`` curves' during training, is the evaluation
harness's (:func:`evaluate_policy`): the episodes and figures of ``opsgym eval``, and the figure
the world is summed up by (its ``headline``: on release, ``shipped_when_shippable``).
Ctrl-C saves the policy as it is (``model.zip``) and marks the run ``interrupted``.

**The curriculum** starts training episodes part-way along a reference trajectory: the oracle's
calls on that very episode, so every start is a state an agent can reach, each call put through
the action catalogue (:func:`as_catalogue_call`), so every start is one the trained policy can
reach with its own actions. It is a reverse curriculum (Florensa et al. 2017): over the first
``sweep`` of the budget every episode starts part-way, at first only before the last call, then
ever earlier, so the end of the sequence is learnt first and each earlier decision meets a
learnt value; from ``sweep`` to ``fade`` the chance of a start part-way falls linearly to 0,
and the rest of training starts normally (:func:`schedule`). **Every evaluation starts from the
normal initial state.**

Why, measured on the release world (v2 of its observation unless said): shipping v2 takes a
long, exact sequence of calls (stage, deploy, migrate, fresh health evidence, a canary, more
traffic, fresh health again, verify); from the normal start a policy finds the short verified
rollback long before it sees a ship pay, and once it rolls back with certainty it never tries
the canary again: without the curriculum, 300k steps, it rolled back on all 600 test episodes.
The catalogue matters as much: the oracle moves from a 10% canary straight to 100%, where
``shift_traffic()`` climbs 10, 50, 100; started on the oracle's own calls (v1), a policy never
learnt what to do at 50% and rolled back on all 600 too. The sweep matters on small budgets:
on ``nominal`` with 30k steps it shipped on 3 of 4 seeds, starts drawn uniformly along the
trajectory from the outset (fading from 0.9) on none of 4; at 300k steps both ship.

**Masks**: MaskablePPO samples only calls whose preconditions hold (``action_masks()``);
``--no-mask`` trains and plays with masking off (invalid calls are rejected and cost
``invalid``).

**Batched lanes** (``--vector``, every built-in world): the environments are lanes of the
world's batched twin (:mod:`opsgym.vector`) and the curriculum runs over them
(:func:`batched_prefix_start`); the run is the same, parameters bit for bit. It pays from tens
of lanes on (``benchmarks/ppo.md``): then PPO's update is what training waits on.

A trained policy is evaluated like any other: ``opsgym eval --env release --policy
ppo:runs/release__ppo__1__.../model.zip`` (:class:`opsgym.agents.ppo.PPOPolicy`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from pydantic import Field, field_validator, model_validator

from opsgym.agents.ppo import PPOPolicy
from opsgym.core.episode import Episode
from opsgym.core.errors import TrainingError
from opsgym.core.registry import catalogue, spec
from opsgym.core.request import EpisodeRequest
from opsgym.training.runs import TrainerConfig


class PPOConfig(TrainerConfig):
    """Everything a PPO run depends on (saved as ``config.json`` and in the store)."""

    env: str = "release"
    """World to train on."""
    scenario: str = "mixed"
    """Scenario of the training episodes (``mixed``: families drawn by the seed, train split)."""
    total_timesteps: int = Field(300_000, ge=1)
    """Environment steps to train for, over all environments (prefix calls not counted)."""
    seed: int = Field(1, ge=0)
    """Seeds the model, the environments' episode streams and the curriculum."""
    n_envs: int = Field(4, ge=1)
    """Environments stepped together (one process)."""
    vector: bool = False
    """Step the environments as lanes of the world's batched twin (opsgym.vector) instead of
    one Gym env each: the same episodes, curriculum, masks and rewards, so the same run bit for
    bit, with the simulator's cost nearly gone (every built-in world has a twin)."""
    curriculum: bool = True
    """Start training episodes part-way along the reference trajectory, fading out (why: the
    docstring of opsgym.training.ppo)."""
    mask: bool = True
    """Sample only valid calls (``action_masks()``)."""
    reference: str = "oracle"
    """Curriculum: the scripted policy whose trajectories the starts lie on."""
    start_prob: float = Field(1.0, ge=0, le=1)
    """Curriculum: chance an episode starts part-way while the start sweeps back."""
    sweep: float = Field(0.3, ge=0, le=1)
    """Curriculum: share of the budget over which the earliest start moves from the last call of
    the reference trajectory back to its first (at most ``fade``)."""
    fade: float = Field(0.6, ge=0, le=1)
    """Curriculum: share of the budget after which every episode starts normally."""
    learning_rate: float = Field(3e-4, gt=0)
    """Adam's step size."""
    anneal_lr: bool = True
    """Decay the step size linearly to 0 over the budget (CleanRL's default). Without it the
    release policy swung from 98.8% safe at its 300,000-step checkpoint to 88.2% after the one
    update that followed it; annealed, the last updates barely move the policy."""
    n_steps: int = Field(256, ge=1)
    """Steps per environment between updates."""
    batch_size: int = Field(256, ge=1)
    """Minibatch size."""
    n_epochs: int = Field(10, ge=1)
    """Passes over each rollout."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE's lambda."""
    ent_coef: float = Field(0.01, ge=0)
    """Entropy bonus."""
    net_arch: list[int] = Field(default_factory=lambda: [128, 128])
    """Hidden layers of the policy and value networks (their widths)."""
    checkpoint_every: int = Field(50_000, ge=0)
    """Save a checkpoint every this many steps (0: never)."""
    eval_every: int = Field(25_000, ge=0)
    """Evaluate the greedy policy from the normal start every this many steps (0: never)."""
    eval_curve_episodes: int = Field(100, ge=1)
    """Dev-split episodes of each evaluation during training (the ``dev_*`` curves)."""
    eval_episodes: int = Field(200, ge=0)
    """Test-split episodes (normal start) evaluated at the end (0: none)."""
    torch_threads: int = Field(1, ge=1)
    """Torch's CPU threads (1: runs repeat exactly)."""

    @field_validator("net_arch")
    @classmethod
    def _widths(cls, widths: list[int]) -> list[int]:
        if any(width < 1 for width in widths):
            raise ValueError("every width must be at least 1")
        return widths

    @model_validator(mode="after")
    def _sweep_then_fade(self) -> PPOConfig:
        if self.sweep > self.fade:
            raise ValueError(
                f"sweep must be at most fade, got sweep={self.sweep}, fade={self.fade}"
            )
        return self

    def check(self) -> PPOConfig:
        """Check the names against the registry: an unknown world, a scenario it lacks or one
        held out of training, an unknown reference policy (the fields' bounds were checked when
        the config was made).

        Raises:
            TrainingError: an unknown reference policy, or ``vector`` for a world without a
            batched twin (the registry's errors for the rest).
        """
        world = spec(self.env)  # an unknown world raises, naming the known ones
        if self.vector:
            from opsgym.vector.env import WORLDS

            if self.env not in WORLDS:
                raise TrainingError(
                    f"--vector needs a batched twin of the world; {self.env!r} has none "
                    f"(worlds with one: {', '.join(WORLDS)}): train it without --vector"
                )
        EpisodeRequest(self.env, self.scenario, split="train").resolve(np.random.default_rng(0))
        if self.reference not in world.policies:
            raise TrainingError(
                f"reference must be one of {sorted(world.policies)}, got {self.reference!r}"
            )
        return self


# -- the curriculum --------------------------------------------------------------------------


def reference_calls(
    episode: Episode, policy: str = "oracle", *, twin: bool = True
) -> list[tuple[str, dict[str, Any]]]:
    """The calls ``policy`` makes on a fresh twin of ``episode`` (same header), to the end,
    each put through the action catalogue (:func:`as_catalogue_call`). ``twin=False`` plays them
    on ``episode`` itself (one that has not started: it saves building the twin).
    """
    from opsgym.agents import get_policy, legal_calls
    from opsgym.agents.base import policy_rng

    if twin:
        episode = Episode(
            episode.spec,
            episode.scenario,
            episode.seed,
            max_steps=episode.max_steps,
            overrides=episode.overrides,
            config=episode.config,
            reward_timing=episode.reward_timing,
        )
    agent = get_policy(episode.env, policy)
    agent.reset(policy_rng(episode.seed))
    calls = []
    while not episode.done:
        call = as_catalogue_call(episode.env, *agent.act(episode.observe(), legal_calls(episode)))
        calls.append(call)
        episode.step(*call)
    return calls


def as_catalogue_call(env: str, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The catalogue action closest to ``tool(**args)``: the call itself if the catalogue has
    it, else the call with the arguments every catalogue action of the tool fixes set to the
    catalogue's (all of them where the tool has one action), if the catalogue has that, else
    the call as it is.

    Without it the release oracle's states are not the policy's: the oracle moves from a 10%
    canary straight to 100%, the catalogue's ``shift_traffic()`` climbs 10, 50, 100, and a
    policy started after the oracle's jump never learnt what to do at 50% (measured: it rolled
    back every episode). The fleet oracle reads flight recorders with ``last=4``, the catalogue
    with ``last=1`` (the vector reads a dump's summary, never its entries): the same states.
    """
    same = [a.model_dump() for t, a in catalogue(env) if t.name == tool]
    full = spec(env).world.tools[tool].args.model_validate(args).model_dump()
    if full in same or not same:
        return tool, args
    fixed = {k: v for k, v in same[0].items() if all(a[k] == v for a in same)}
    closest = {**full, **fixed}
    return (tool, closest) if closest in same else (tool, args)


class PrefixStart(gym.Wrapper):
    """Starts an episode after a prefix of the reference policy's calls on that same episode.

    The trainer moves the schedule (``set_schedule``): ``prob`` is the chance that an episode
    starts part-way, ``reach`` how far back from the end the start may lie (0: only the last
    call is left to make; 1: anywhere, the normal start included). A start part-way follows
    ``k`` calls of the reference's ``n``, ``k`` uniform over ``[round((1 - reach) * (n - 1)),
    n - 1]``. Its draws come from a generator of its own, seeded by the first
    ``reset(seed=...)``. ``info["prefix"]`` says how many calls were played, at the reset and on
    the episode's last step.
    """

    def __init__(self, env: gym.Env, world: str, reference: str = "oracle"):
        super().__init__(env)
        self.reference = reference
        self.prob, self.reach = 0.0, 1.0
        self.prefix = 0
        self._rng = np.random.default_rng(0)
        self._encoder = spec(world).encoder()

    def set_schedule(self, prob: float, reach: float) -> None:
        """The chance that the next episodes start part-way, and how far back they may."""
        self.prob, self.reach = float(prob), float(reach)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset, then maybe play a prefix of the reference trajectory."""
        if seed is not None:
            self._rng = np.random.default_rng([0xC0, seed])
        obs, info = self.env.reset(seed=seed, options=options)
        self.prefix = 0
        if self.prob > 0 and self._rng.random() < self.prob:
            episode = self.env.unwrapped.episode
            calls = reference_calls(episode, self.reference)
            last = len(calls) - 1
            self.prefix = int(self._rng.integers(round((1 - self.reach) * last), last + 1))
            for tool, args in calls[: self.prefix]:
                episode.step(tool, args)
            obs = self._encoder.encode(episode)
        info["prefix"] = self.prefix
        return obs, info

    def step(self, action: Any):
        """Step; the last step's ``info`` says where the episode started."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["prefix"] = self.prefix
        return obs, reward, terminated, truncated, info


def batched_prefix_start(venv: Any, world: str, scenario: str, reference: str = "oracle") -> Any:
    """:class:`PrefixStart` over the lanes of a batched world (``venv``: a
    :class:`~opsgym.vector.sb3.BatchedSB3VecEnv`), and ``Monitor``'s ``info["episode"]``.

    Lane ``i`` is ``PrefixStart(Monitor(gym.make(...)))`` in a ``DummyVecEnv``, draw for draw:
    its own generator (``default_rng([0xC0, seed])`` from the seed SB3 gives the lane, else
    ``default_rng(0)``), the chance drawn at each start only while ``prob > 0``, the prefix
    ``k`` drawn as there, the same :func:`reference_calls` (the scalar reference policy on a
    scalar episode of the lane's seed), played on the lane as catalogue actions. The reference's
    calls of all lanes that start at once are played in lock-step (step ``j`` on the lanes whose
    prefix is longer than ``j``, the others held). Their rewards, as the scalar wrapper's, are
    never seen; the settled components they accrue are paid on the last step. ``info["episode"]``
    counts, as ``Monitor`` does, the steps and rewards after the prefix.
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from opsgym.agents import get_policy  # an unknown reference fails here, not mid-run

    get_policy(world, reference)
    table = catalogue(world)
    tools = spec(world).world.tools
    index = {
        (t.name, json.dumps(a.model_dump(), sort_keys=True)): i for i, (t, a) in enumerate(table)
    }
    start_scenario = spec(world).scenario(scenario)

    class BatchedPrefixStart(VecEnvWrapper):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(venv)
            n = self.num_envs
            self.batch = venv.world
            self.prob, self.reach = 0.0, 1.0
            self.prefix = np.zeros(n, np.int64)
            self._rngs = [np.random.default_rng(0) for _ in range(n)]
            self._seeds: list[int] | None = None
            self._returns = np.zeros(n)
            self._lengths = np.zeros(n, np.int64)
            self._t0 = time.time()
            self._memo: dict[tuple[str, str], int] = {}

        def set_schedule(self, prob: float, reach: float) -> None:
            self.prob, self.reach = float(prob), float(reach)

        def seed(self, seed: int | None = None) -> Any:
            self._seeds = self.venv.seed(seed)
            return self._seeds

        def reset(self) -> Any:
            obs = self.venv.reset()
            if self._seeds is not None:
                self._rngs = [np.random.default_rng([0xC0, s]) for s in self._seeds]
                self._seeds = None
            self._returns[:] = 0.0
            self._lengths[:] = 0
            self._start(np.arange(self.num_envs), obs)
            return obs

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            self._returns += self.venv.last_rewards
            self._lengths += 1
            ended = np.flatnonzero(dones)
            for lane in ended.tolist():
                info = infos[lane]
                info["episode"] = {
                    "r": round(float(self._returns[lane]), 6),
                    "l": int(self._lengths[lane]),
                    "t": round(time.time() - self._t0, 6),
                    "outcome": info["outcome"],
                }
                info["prefix"] = int(self.prefix[lane])
            self._returns[ended] = 0.0
            self._lengths[ended] = 0
            self._start(ended, obs)
            return obs, rewards, dones, infos

        def env_method(
            self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any
        ) -> list[Any]:
            if method_name == "set_schedule":
                self.set_schedule(*args, **kwargs)
                return [None for _ in self._get_indices(indices)]
            return list(self.venv.env_method(method_name, *args, indices=indices, **kwargs))

        def _action(self, tool: str, args: dict[str, Any]) -> int:
            key = (tool, json.dumps(args, sort_keys=True, default=str))
            if key not in self._memo:
                full = tools[tool].args.model_validate(args).model_dump()
                at = index.get((tool, json.dumps(full, sort_keys=True)))
                if at is None:
                    raise TrainingError(
                        f"the {reference} policy's call {tool}({args}) is not in the action "
                        "catalogue: the batched world cannot start from its states"
                    )
                self._memo[key] = at
            return self._memo[key]

        def _start(self, lanes: np.ndarray, obs: np.ndarray) -> None:
            """Maybe start each of ``lanes`` (just reset) part-way; write their observations."""
            self.prefix[lanes] = 0
            if self.prob <= 0 or not lanes.size:
                return
            plans: dict[int, list[int]] = {}
            for lane in lanes.tolist():
                rng = self._rngs[lane]
                if rng.random() >= self.prob:
                    continue
                episode = Episode(spec(world), start_scenario, int(self.batch.seeds[lane]))
                calls = reference_calls(episode, reference, twin=False)
                last = len(calls) - 1
                k = int(rng.integers(round((1 - self.reach) * last), last + 1))
                if k:
                    plans[lane] = [self._action(*call) for call in calls[:k]]
                    self.prefix[lane] = k
            if not plans:
                return
            actions = np.zeros(self.num_envs, np.int64)
            active = np.zeros(self.num_envs, bool)
            for j in range(max(len(p) for p in plans.values())):
                active[:] = False
                for lane, plan in plans.items():
                    if j < len(plan):
                        actions[lane], active[lane] = plan[j], True
                self.batch.step(actions, active)
            started = np.fromiter(plans, np.int64, len(plans))
            obs[started] = self.batch.obs[started]

    return BatchedPrefixStart()


def schedule(cfg: PPOConfig, timesteps: int) -> tuple[float, float]:
    """The curriculum's ``(prob, reach)`` after ``timesteps`` (see :class:`PrefixStart`).

    Over the first ``sweep`` of the budget every episode (``start_prob``) starts part-way and
    the earliest start moves from the last call back to the first; from ``sweep`` to ``fade``
    the chance of a start part-way falls linearly to 0; after ``fade`` every episode starts
    normally (no curriculum: ``(0, 1)`` throughout).
    """
    done = timesteps / cfg.total_timesteps
    if not cfg.curriculum or done >= cfg.fade:
        return 0.0, 1.0
    if done < cfg.sweep:
        return cfg.start_prob, done / cfg.sweep
    return cfg.start_prob * (cfg.fade - done) / (cfg.fade - cfg.sweep), 1.0


# -- evaluation -----------------------------------------------------------------------------


def evaluate_policy(
    env: str, policy: PPOPolicy, scenario: str, episodes: int, split: str = "test"
) -> dict[str, Any]:
    """``policy`` on ``episodes`` seeds of ``split``, from the normal start, through the
    evaluation harness (:func:`~opsgym.evaluation.harness.evaluate_in_process`: the episodes and
    the figures of ``opsgym eval``, and the world's headline).

    Returns ``{"split", "scenario", "episodes", "mean_return", "safe_rate", "outcomes"
    (each one's share), HEADLINE (the world's headline figure, by its name:
    ``shipped_when_shippable`` on release), "summary"}``; ``summary`` is the harness's entry,
    with every interval.
    """
    from opsgym.evaluation.harness import evaluate_in_process

    (summary,) = evaluate_in_process(env, policy, [scenario], split=split, episodes=episodes)
    result: dict[str, Any] = {
        "split": split,
        "scenario": scenario,
        "episodes": summary["n"],
        "mean_return": summary["return"]["value"],
        "safe_rate": summary["pass_hat_k"]["1"],
        "outcomes": {name: share["value"] for name, share in summary["outcomes"].items()},
    }
    figure = summary["headline"]
    if figure is not None and figure["counted"]:
        result[figure["name"]] = figure["value"]
    result["summary"] = summary
    return result


# -- training ---------------------------------------------------------------------------------


def make_envs(cfg: PPOConfig) -> Any:
    """``cfg.n_envs`` training environments (train split), wrapped for the curriculum if asked,
    seeded from ``cfg.seed``: a ``DummyVecEnv`` of Gym envs, or with ``cfg.vector`` the lanes
    of the world's batched twin (:func:`batched_prefix_start`), the same episodes.
    """
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    gym_id = spec(cfg.env).gym_id

    def make() -> gym.Env:
        env = gym.make(gym_id, scenario=cfg.scenario, split="train")
        env = Monitor(env, info_keywords=("outcome",))
        if cfg.curriculum:
            env = PrefixStart(env, cfg.env, cfg.reference)
        return env

    if cfg.vector:
        from opsgym.vector.sb3 import BatchedSB3VecEnv

        vec = BatchedSB3VecEnv(cfg.n_envs, env=cfg.env, scenario=cfg.scenario, split="train")
        vec = batched_prefix_start(vec, cfg.env, cfg.scenario, cfg.reference)
    else:
        vec = DummyVecEnv([make] * cfg.n_envs)
    vec.seed(cfg.seed)
    return vec


def train(
    cfg: PPOConfig,
    out: str | os.PathLike[str] = "runs",
    db: str | bool | None = None,
    *,
    name: str | None = None,
) -> Path:
    """Train as ``cfg`` says; return the run's folder.

    ``db`` is the store the run is recorded in (``None``: ``OPSGYM_DB`` or the default file;
    ``False``: none). ``name`` is the run's name (default ``{env}__ppo__{seed}__{time}``).

    Raises:
        TrainingError: a bad argument, or the run's folder exists.
        KeyboardInterrupt: after saving the policy as it was and marking the run interrupted.
    """
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.utils import LinearSchedule

    from opsgym.training.runs import Record, new_folder, run_name, write_config

    cfg.check()
    name = name or run_name(cfg.env, "ppo", cfg.seed)
    folder = new_folder(out, name)
    record = Record(db, name, kind="ppo", env=cfg.env, config=cfg.model_dump())
    write_config(folder, cfg.model_dump())

    # -- seeding: one block; everything random below comes from cfg.seed
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.torch_threads)

    model = progress = None
    status = "failed"
    try:
        model = MaskablePPO(
            "MlpPolicy",
            make_envs(cfg),
            learning_rate=(
                LinearSchedule(cfg.learning_rate, 0.0, 1.0) if cfg.anneal_lr else cfg.learning_rate
            ),
            n_steps=cfg.n_steps,
            batch_size=cfg.batch_size,
            n_epochs=cfg.n_epochs,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            ent_coef=cfg.ent_coef,
            seed=cfg.seed,
            device="cpu",
            policy_kwargs={"net_arch": list(cfg.net_arch)},
            tensorboard_log=str(folder / "tb") if _has_tensorboard() else None,
            verbose=0,
        )
        progress = _progress(cfg, record)
        callbacks = [progress]
        if cfg.checkpoint_every:
            every = max(cfg.checkpoint_every // cfg.n_envs, 1)
            callbacks.append(CheckpointCallback(every, str(folder / "checkpoints"), "ppo"))
        model.learn(
            cfg.total_timesteps,
            callback=callbacks,
            use_masking=cfg.mask,
            progress_bar=_has_progress_bar(),
            tb_log_name="ppo",
        )
        model.save(folder / "model.zip")
        if cfg.eval_episodes:
            policy = PPOPolicy(cfg.env, folder)
            result = evaluate_policy(cfg.env, policy, cfg.scenario, cfg.eval_episodes)
            (folder / "evaluation.json").write_text(json.dumps(result, indent=1))
            progress.add_evaluation("test", model.num_timesteps, result)
            model.logger.dump(model.num_timesteps)
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        saved = folder / "model.zip"
        if status == "interrupted" and model is not None and not saved.exists():
            model.save(saved)
        curves = progress.thinned() if progress is not None else {}
        record.finish(status, curves, saved if saved.exists() else None)
    if status == "interrupted":
        raise KeyboardInterrupt
    return folder


def _progress(cfg: PPOConfig, record: Any) -> Any:
    """The callback that moves the curriculum, evaluates from the normal start and keeps the
    learning curves (``{name: [[timestep, value], ...]}``), written to the run's record as they
    grow.

    Curves: ``return`` and ``safe`` of every training episode, ``return_normal_start`` of those
    that started normally; ``start_prob`` and ``start_reach`` (the curriculum's schedule);
    ``dev_*`` (greedy, on dev-split episodes from the normal start, every ``eval_every`` steps):
    ``dev_return``, ``dev_safe``, the share of each outcome and the world's headline
    (``dev_shipped_when_shippable`` on release); the same ``test_*`` once, at the end.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    safe_outcomes = spec(cfg.env).safe_outcomes

    class Progress(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.curves: dict[str, list[list[float]]] = {}
            self.rollouts = 0
            self.next_eval = cfg.eval_every

        def _add(self, key: str, value: float, step: int | None = None) -> None:
            step = self.num_timesteps if step is None else step
            self.curves.setdefault(key, []).append([step, float(value)])

        def _on_rollout_start(self) -> None:
            if cfg.curriculum:
                prob, reach = schedule(cfg, self.num_timesteps)
                self.training_env.env_method("set_schedule", prob, reach)
                self._add("start_prob", prob)
                self._add("start_reach", reach)
                self.logger.record("curriculum/start_prob", prob)
                self.logger.record("curriculum/start_reach", reach)

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", ()):
                episode = info.get("episode")
                if episode is None:
                    continue
                self._add("return", episode["r"])
                self._add("safe", info.get("outcome") in safe_outcomes)
                if not info.get("prefix"):
                    self._add("return_normal_start", episode["r"])
            if cfg.eval_every and self.num_timesteps >= self.next_eval:
                self.next_eval += cfg.eval_every
                policy = PPOPolicy.from_model(cfg.env, self.model, cfg.mask)
                result = evaluate_policy(
                    cfg.env, policy, cfg.scenario, cfg.eval_curve_episodes, "dev"
                )
                self.add_evaluation("dev", self.num_timesteps, result)
            return True

        def _on_rollout_end(self) -> None:
            self.rollouts += 1
            if self.rollouts % 8 == 0:
                record.update(self.thinned())

        def add_evaluation(self, split: str, step: int, result: dict[str, Any]) -> None:
            """Add an evaluation's numbers to the curves (``{split}_*``) and to TensorBoard."""
            numbers = {"return": result["mean_return"], "safe": result["safe_rate"]}
            numbers.update(result["outcomes"])
            figure = result["summary"]["headline"]
            if figure is not None and figure["name"] in result:
                numbers[figure["name"]] = result[figure["name"]]
            for key, value in numbers.items():
                self._add(f"{split}_{key}", value, step)
                self.logger.record(f"{split}/{key}", value)

        def thinned(self, most: int = 2000) -> dict[str, list[list[float]]]:
            """The curves with at most about ``most`` points each (every k-th), for the store."""
            return {k: v[:: max(1, len(v) // most)] for k, v in self.curves.items()}

    return Progress()


def _has_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True


def _has_progress_bar() -> bool:
    """SB3's bar needs tqdm and rich, and is only drawn on a terminal outside CI."""
    try:
        import rich  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return os.environ.get("CI") is None and os.isatty(2)
