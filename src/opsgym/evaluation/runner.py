"""``opsgym.evaluate``: policies x scenarios x seeds x trials, played, stored, summarised.

Every episode is played on its own from ``(env, scenario, seed, policy, trial)`` and written to
the store in one transaction, so an evaluation killed half-way loses nothing it finished and a
re-run with the same name plays only what is missing. The summary is computed from the stored
episodes, sorted by key: it is the same whether the episodes ran in one process, in local worker
processes or as Ray tasks.

Evaluations are honest by construction: they default to the ``mixed`` scenario (the family is
hidden), refuse ``reward_timing="dense"`` (it pays hidden facts through the reward) and refuse
``overrides`` (forced hidden facts are for tests, not for numbers).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.rewards import LeakingConfigError
from opsgym.core.scenarios import check_split, seeds
from opsgym.registry import spec

DEFAULT_SCENARIO = "mixed"


class EvaluationError(OpsgymError, ValueError):
    """An evaluation was asked for with settings that cannot run."""


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate. Plain data: stored with the evaluation and compared on resume.

    Attributes:
        env: The environment.
        policies: Policy names (``random``, the world's scripted ones, ``llm:MODEL`` ...).
        scenarios: Scenarios to run; ``mixed`` hides the family.
        split: Seeds come from this split (``test`` by default).
        episodes: Seeds per policy and scenario.
        trials: Runs per seed, for pass^k. A deterministic policy runs once and reports
            pass^k = pass^1.
        config: Public settings of every episode.
        max_steps: Step budget (``None``: the environment's).
    """

    env: str
    policies: tuple[str, ...]
    scenarios: tuple[str, ...] = (DEFAULT_SCENARIO,)
    split: str = "test"
    episodes: int = 200
    trials: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    max_steps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        data = asdict(self)
        data["policies"], data["scenarios"] = list(self.policies), list(self.scenarios)
        return data


@dataclass(frozen=True, order=True)
class Task:
    """One episode of an evaluation."""

    policy: str
    scenario: str
    seed: int
    trial: int


def check(cfg: EvalConfig) -> EvalConfig:
    """Raise a one-line error naming what is wrong with ``cfg`` (and what exists)."""
    from opsgym.agents import policy_names

    s = spec(cfg.env)
    check_split(cfg.split)
    if not cfg.policies:
        raise EvaluationError("No policy to evaluate: pass at least one --policy.")
    known = policy_names(cfg.env)
    for name in cfg.policies:
        base = name.split(":", 1)[0]
        if name not in known and base + ":" not in known:
            raise UnknownNameError(f"policy for {cfg.env!r}", name, known)
    for name in cfg.scenarios:
        scenario = s.scenario(name)
        if scenario.held_out and cfg.split == "train":
            raise EvaluationError(
                f"Scenario {name!r} is a held-out family: it has no train seeds. "
                "Use --split dev or --split test."
            )
    if not isinstance(cfg.episodes, int) or cfg.episodes <= 0:
        raise EvaluationError(f"episodes must be a positive integer, got {cfg.episodes!r}")
    if not isinstance(cfg.trials, int) or cfg.trials <= 0:
        raise EvaluationError(f"trials must be a positive integer, got {cfg.trials!r}")
    if "reward_timing" in cfg.config or "overrides" in cfg.config:
        raise LeakingConfigError(
            "Evaluations run with reward_timing='end' and no overrides: "
            f"config has {sorted(set(cfg.config) & {'reward_timing', 'overrides'})}."
        )
    return cfg


def tasks(cfg: EvalConfig) -> list[Task]:
    """Every episode of the evaluation, in a fixed order."""
    from opsgym.agents import is_deterministic

    out = []
    for policy in cfg.policies:
        trials = 1 if is_deterministic(cfg.env, policy) else cfg.trials
        for scenario in cfg.scenarios:
            for seed in seeds(cfg.split, cfg.episodes):
                out.extend(Task(policy, scenario, seed, t) for t in range(trials))
    return out


def trial_seed(seed: int, trial: int) -> int:
    """The seed a policy with its own randomness is reset with on ``trial`` of ``seed``."""
    return seed if trial == 0 else seed + (trial << 32)


def play_task(cfg: EvalConfig, task: Task) -> dict[str, Any]:
    """Play one episode of the evaluation; return what the store keeps of it."""
    from opsgym.agents import get_policy, play
    from opsgym.registry import make

    episode = make(
        cfg.env, task.scenario, task.seed, max_steps=cfg.max_steps, config=cfg.config or None
    )
    policy = get_policy(cfg.env, task.policy)
    policy.reset(trial_seed(task.seed, task.trial))
    play(episode, policy, reset=False)
    return {
        "task": task,
        "record": episode.record(),
        "family": episode.family.name,
        "lies": lies_of(episode),
    }


def lies_of(episode: Any) -> dict[str, Any]:
    """The episode's lies told, trusted and reconciled (see :mod:`opsgym.core.lies`)."""
    return episode.world.lies.summary()


# -- executors ------------------------------------------------------------------------------


def _local(cfg: EvalConfig, todo: Sequence[Task]) -> Iterator[dict[str, Any]]:
    for task in todo:
        yield play_task(cfg, task)


def _processes(cfg: EvalConfig, todo: Sequence[Task], workers: int) -> Iterator[dict[str, Any]]:
    chunk = max(1, min(16, len(todo) // (workers * 4) or 1))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(play_task, [cfg] * len(todo), todo, chunksize=chunk)


def _ray(cfg: EvalConfig, todo: Sequence[Task], address: str) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError as exc:
        raise EvaluationError("--ray needs the ray extra: pip install 'opsgym[ray]'") from exc
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, num_cpus=os.cpu_count())
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(play_task)
    pending = [remote.remote(cfg, t) for t in todo]
    while pending:
        done, pending = ray.wait(pending, num_returns=min(len(pending), 32))
        yield from ray.get(done)


def execute(
    cfg: EvalConfig, todo: Sequence[Task], *, workers: int = 1, ray: str | None = None
) -> Iterator[dict[str, Any]]:
    """Play ``todo``, yielding each finished episode (in any order)."""
    if ray:
        return _ray(cfg, todo, ray)
    if workers > 1 and len(todo) > 1:
        return _processes(cfg, todo, workers)
    return _local(cfg, todo)


Progress = Callable[[Iterable[dict[str, Any]], int], Iterable[dict[str, Any]]]
