"""``opsgym.evaluate(...)``: run an evaluation into the store and summarise it; or, for a policy
held in memory (a model being trained), :func:`evaluate_in_process`: the same episodes and the
same summary, without the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opsgym.core.registry import spec
from opsgym.core.scenarios import seeds
from opsgym.core.spec import EnvSpec
from opsgym.evaluation.metrics import rate
from opsgym.evaluation.runner import (
    EvalConfig,
    Writer,
    check,
    downtime_cost,
    execute,
    heap_frozen,
    lies_of,
    request,
    tasks,
    with_seeds,
)
from opsgym.evaluation.summary import summarise


@dataclass(frozen=True)
class EvaluationResult:
    """A finished evaluation.

    Attributes:
        name: Its name in the store.
        config: What was evaluated.
        summary: One entry per (policy, scenario): outcome rates with Wilson intervals,
            pass^k, mean return with a bootstrap interval, reward by component, steps, tokens,
            downtime cost, lies told and trusted. Plain data.
        played: Episodes played by this call (the rest were already stored).
        stored: Episodes in the store for this evaluation.
        root: The root hash sealing its set of episodes (:mod:`opsgym.store.seal`): what
            ``opsgym eval --verify`` recomputes; publish it with the numbers.
    """

    name: str
    config: EvalConfig
    summary: list[dict[str, Any]]
    played: int
    stored: int
    root: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "name": self.name,
            "config": self.config.to_dict(),
            "summary": self.summary,
            "played": self.played,
            "stored": self.stored,
            "root": self.root,
        }


def default_name(cfg: EvalConfig) -> str:
    """``{env}__{policies}__{scenarios}__{split}__{episodes}x{trials}``, ending ``__public`` on
    the public seeds (so a run on each kind of seeds resumes its own kind).
    """
    parts = [cfg.env, "+".join(cfg.policies), "+".join(cfg.scenarios), cfg.split]
    parts.append(f"{cfg.episodes}x{cfg.trials}")
    if cfg.seeds == "public":
        parts.append("public")
    return "__".join(parts).replace("/", "_")


def _abandon(store: Any, writer: Writer, name: str, exc: BaseException) -> None:
    """Keep what was played and mark evaluation ``name`` ``failed`` (it raised) or
    ``interrupted`` (Ctrl-C, ``SystemExit``), with the error and how to resume.

    Never raises over ``exc``: a store that cannot take the mark (the store may be why it
    failed) leaves the evaluation ``running`` under this process, and a reader on this host
    marks it ``interrupted`` once the process has exited (:mod:`opsgym.store.owner`).
    """
    from opsgym.store.store import abandoned

    status = "failed" if isinstance(exc, Exception) else "interrupted"
    try:
        writer.flush()
    except Exception as lost:  # noqa: BLE001 -- the first error is the one to raise
        exc.add_note(f"episodes in hand were not stored: {type(lost).__name__}: {lost}")
    try:
        stored = store.evaluation(name)["episodes"]
        why = f"{type(exc).__name__}: {exc}".rstrip(": ")
        store.finish_evaluation(name, status, abandoned(why, name, stored))
    except Exception as unmarked:  # noqa: BLE001
        exc.add_note(f"evaluation {name!r} could not be marked {status}: {unmarked}")


def evaluate(
    env: str,
    policies: Sequence[str],
    scenarios: Sequence[str] = ("mixed",),
    *,
    split: str = "test",
    episodes: int = 200,
    trials: int = 1,
    config: dict[str, Any] | None = None,
    max_steps: int | None = None,
    workers: int = 1,
    ray: str | None = None,
    db: str | Path | None = None,
    name: str | None = None,
    out: str | Path | None = None,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
    runs_dir: str | Path | None = None,
    seeds: str = "sealed",
    seeds_from: str | None = None,
) -> EvaluationResult:
    """Evaluate ``policies`` on ``env`` and store every episode.

    Args:
        env: The environment.
        policies: Policy names (``random``, scripted ones, ``llm:MODEL`` ...).
        scenarios: Scenarios; ``mixed`` (the default) hides the family.
        split: Where seeds come from.
        episodes: Seeds per policy and scenario.
        trials: Runs per seed for pass^k (deterministic policies run once).
        config: Public settings of every episode.
        max_steps: Step budget (``None``: the environment's).
        workers: Local worker processes, this one among them.
        ray: ``local``, ``auto`` or a Ray address: run episodes as Ray tasks instead.
        db: The store (path or SQLAlchemy URL); ``None``: ``OPSGYM_DB`` or the default file.
        name: The evaluation's name; a stored name resumes where it stopped. An evaluation
            that raises is stored ``failed``, one stopped (Ctrl-C) ``interrupted``, each with
            the error and how to resume it in its ``aggregates``; one whose process was killed
            reads ``interrupted`` once that is seen (:mod:`opsgym.store.owner`).
        out: Write ``results.json``, ``episodes.csv``, ``report.md`` and charts here.
        progress: Wraps the stream of finished episodes (a progress bar).
        runs_dir: Where ``ppo:runs:NAME`` and ``hf:runs:NAME`` policies are found (``runs``).
        seeds: ``sealed`` (the default): seeds drawn when the evaluation is created, too many
            to tabulate, kept with it (a resume plays the same ones); ``public``: the split's
            first ``episodes`` seeds, the same for everyone (see :mod:`opsgym.evaluation.runner`).
        seeds_from: Play the sealed seeds of this stored evaluation (its first ``episodes``),
            so that policies evaluated apart are compared on the same episodes.
    """
    from opsgym.store import open_store
    from opsgym.store.errors import NotFoundError

    cfg = check(
        EvalConfig(
            env,
            tuple(policies),
            tuple(scenarios),
            split,
            episodes,
            trials,
            dict(config or {}),
            max_steps,
            None if runs_dir is None else str(runs_dir),
            seeds,
        )
    )
    name = name or default_name(cfg)
    with heap_frozen(), open_store(db) as store:
        try:
            stored: dict[str, Any] | None = store.evaluation(name)["config"]
        except NotFoundError:
            stored = None
        source = None
        if seeds_from is not None:
            source = (seeds_from, store.evaluation(seeds_from)["config"])
        cfg = with_seeds(cfg, stored, source)  # a resumed evaluation plays the seeds it drew
        store.start_evaluation(name, cfg.to_dict())  # creates it, or resumes it
        played = 0
        writer = Writer(store)
        try:
            done = store.done_keys(name)
            todo = [t for t in tasks(cfg) if (t.policy, t.scenario, t.seed, t.trial) not in done]
            stream = execute(cfg, todo, workers=workers, ray=ray, store=store, name=name)
            for item in progress(stream, len(todo)) if progress else stream:
                if "prepared" in item:
                    writer.add(item["prepared"])
                played += 1
            writer.flush()
            rows = store.episodes(evaluation=name, limit=None)
            s = spec(env)
            summary = summarise(
                rows,
                outcomes=s.outcome_rewards,
                safe_outcomes=s.safe_outcomes,
                trials=cfg.trials,
            )
        except BaseException as exc:
            _abandon(store, writer, name, exc)
            raise
        store.finish_evaluation(name, "done", {"summary": summary})
        sealed = store.seal(name)
    root = None if sealed is None else sealed["root"]
    result = EvaluationResult(name, cfg, summary, played, len(rows), root)
    if out is not None:
        from opsgym.evaluation.report import write_outputs

        write_outputs(result, rows, Path(out))
    return result


def evaluate_in_process(
    env: str,
    policy: Any,
    scenarios: Sequence[str] = ("mixed",),
    *,
    split: str = "test",
    episodes: int = 200,
) -> list[dict[str, Any]]:
    """Evaluate ``policy``, an object in this process (a model still training), with no store.

    The episodes are those :func:`evaluate` plays for a deterministic policy (each one requested
    as an evaluation's, the same seeds of ``split``) and the summary is its own
    (:func:`~opsgym.evaluation.summary.summarise`), one entry per scenario, each with the
    world's ``headline`` figure added (:func:`headline`).
    """
    from opsgym.agents import play

    world = spec(env)
    label = str(getattr(policy, "name", "policy"))
    cfg = EvalConfig(env, (label,), tuple(scenarios), split, episodes, seeds="public")
    rows: list[dict[str, Any]] = []
    scores: dict[str, list[bool | None]] = {}
    for scenario in cfg.scenarios:
        scores[scenario] = []
        for seed in seeds(split, episodes):
            episode = play(request(cfg, scenario, seed).start(evaluation=True), policy)
            outcome = episode.verdict.outcome if episode.verdict else None
            rows.append(
                {
                    "policy": label,
                    "scenario": scenario,
                    "seed": seed,
                    "trial": 0,
                    "outcome": outcome,
                    "return": episode.total_reward,
                    "rewards": dict(episode.rewards.totals),
                    "steps": len(episode.events),
                    "tokens": sum(e["tokens"] for e in episode.events),
                    "downtime_cost": downtime_cost(episode.events),
                    "lies": lies_of(episode),
                }
            )
            if world.headline is not None:
                truth = episode.events[-1]["truth"] if episode.events else {}
                scores[scenario].append(world.headline.score(outcome, truth))
    summary = summarise(
        rows, outcomes=world.outcome_rewards, safe_outcomes=world.safe_outcomes, trials=1
    )
    for entry in summary:
        entry["headline"] = headline(world, scores[entry["scenario"]])
    return summary


def headline(world: EnvSpec, scores: Sequence[bool | None]) -> dict[str, Any] | None:
    """The world's headline figure over episodes scored by :meth:`Headline.score
    <opsgym.core.spec.Headline.score>`: ``{"name", "value", "low", "high", "scored",
    "counted"}`` (a Wilson interval; ``None`` figures when no episode counted), or ``None`` for a
    world that declares none.
    """
    if world.headline is None:
        return None
    counted = [s for s in scores if s is not None]
    return {
        "name": world.headline.name,
        **rate(sum(counted), len(counted)).to_dict(),
        "scored": sum(counted),
        "counted": len(counted),
    }
