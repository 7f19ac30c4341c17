"""Which episodes an LLM trainer or eval plays, and how one it stops early is judged.

A *row* names one episode: ``{"environment", "seed", "scenario", "split", "config"}``. TRL's
``GRPOTrainer`` hands a dataset row to the environment's ``reset(**row)``
(:mod:`opsgym.adapters.trl`); Inspect turns rows into samples (:mod:`opsgym.adapters.inspect`).

```python
from opsgym.adapters.episodes import dataset, rows
rows("oversight", "train", 4)           # seeds 0, 1, 2, 3, scenario "mixed"
dataset("oversight", "dev", 64)         # a datasets.Dataset (the `grpo` extra)
```

Splits keep training honest: seeds split by ``seed % 10`` (0-7 ``train``, 8 ``dev``, 9 ``test``),
so the rows of different splits never share a seed, and a held-out family is refused on
``train`` (a ``mixed`` row of a ``train`` seed never draws one either). ``config`` is the
episode's public settings as canonical JSON (a string, so that every row of every world has the
same column types).

A trainer may stop an episode before the episode ends itself (a rollout runs out of tokens or
tool-calling turns). :func:`settle` judges such an episode as its step budget running out would:
the judge's verdict on the truth and the trajectory so far, the reward held back out of sight,
and the outcome's terminal reward.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import spec
from opsgym.core.request import EpisodeRequest, draw_seeds
from opsgym.core.scenarios import check_split
from opsgym.core.scenarios import seeds as split_seeds

if TYPE_CHECKING:
    from datasets import Dataset

    from opsgym.core.episode import Episode
    from opsgym.core.judge import Verdict

ALL = "all"
"""``scenario=ALL``: every named family of the split (held-out ones only in dev and test)."""


def config_json(config: Mapping[str, Any] | str | None) -> str:
    """``config`` as canonical JSON (``"{}"`` for none); a string must already be a JSON object."""
    if config is None:
        return "{}"
    if isinstance(config, str):
        config = parse_config(config)
    return json.dumps(dict(config), sort_keys=True, separators=(",", ":"))


def parse_config(config: Mapping[str, Any] | str | None, what: str = "config") -> dict[str, Any]:
    """A row's ``config`` (a JSON object as text, a mapping, or nothing) as a dict; ``what``
    names the column in the error.
    """
    if config is None or config == "":
        return {}
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} must be a JSON object, got {config!r}: {exc}") from None
    if not isinstance(config, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {config!r}")
    return dict(config)


def _scenario_names(env: str, split: str, scenario: str | Iterable[str]) -> list[str]:
    s = spec(env)
    if scenario == ALL:
        names = [f.name for f in s.families() if not (split == "train" and f.held_out)]
    else:
        names = [scenario] if isinstance(scenario, str) else list(scenario)
    if not names:
        raise ValueError(f"no scenario given for {env!r}")
    return names


def rows(
    env: str,
    split: str = "train",
    n: int = 64,
    *,
    scenario: str | Iterable[str] = "mixed",
    start: int = 0,
    config: Mapping[str, Any] | None = None,
    seeds: str = "public",
) -> list[dict[str, Any]]:
    """``n`` rows of ``env``: the first ``n`` seeds of ``split`` at or after ``start``, or ``n``
    sealed ones.

    Args:
        env: Environment name.
        split: ``train``, ``dev`` or ``test``.
        n: How many rows (one per seed).
        scenario: A scenario name (``mixed`` by default: the seed draws the family), several
            (assigned to the seeds in turn), or ``"all"``: every named family of the split.
        start: The first seed considered.
        config: Public settings of every episode (see ``opsgym.make``).
        seeds: ``public`` (the split's seeds in order from ``start``) or ``sealed``: ``n``
            seeds drawn now from a space too large to tabulate (``start`` is then unused), for
            an evaluation whose model must not know its episodes in advance.
    """
    check_split(split)
    if seeds not in ("public", "sealed"):
        raise UnknownNameError("seed mode", seeds, ("public", "sealed"))
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    names = _scenario_names(env, split, scenario)
    settings = config_json(config)
    chosen = draw_seeds(split, n) if seeds == "sealed" else split_seeds(split, n, start)
    probe = split_seeds(split, 1, start)[0]  # the request's rules, once per scenario
    for name in dict.fromkeys(names):
        EpisodeRequest(env, name, probe, split=split, config=config or {}).resolve()
    return [
        {
            "environment": env,
            "seed": seed,
            "scenario": names[i % len(names)],
            "split": split,
            "config": settings,
        }
        for i, seed in enumerate(chosen)
    ]


def dataset(
    envs: str | Iterable[str],
    split: str = "train",
    n: int = 64,
    *,
    scenario: str | Iterable[str] = "mixed",
    start: int = 0,
    config: Mapping[str, Any] | None = None,
) -> Dataset:
    """The rows of one world, or of several one after another, as a ``datasets.Dataset``.

    A dataset of several worlds suits ``GRPOTrainer(environment_factory={env: ...})``, which
    routes each row by its ``environment`` column. Needs the ``grpo`` extra.
    """
    from datasets import Dataset

    names = [envs] if isinstance(envs, str) else list(envs)
    table = [
        row
        for env in names
        for row in rows(env, split, n, scenario=scenario, start=start, config=config)
    ]
    return Dataset.from_list(table)


def settle(episode: Episode) -> tuple[Verdict, float]:
    """The verdict and return of ``episode``, judged now if it has not ended (it is not changed).

    An episode that ended has its own verdict and return. One that a trainer stopped is judged
    as its budget running out now would judge it (``completing=False``); its return adds the
    settled reward held back out of sight and the terminal reward of that outcome, so stopping
    early is never a way around a penalty the episode would have paid.
    """
    if episode.done:
        assert episode.verdict is not None  # an episode is done only once it is judged
        return episode.verdict, episode.total_reward
    verdict = episode.spec.judge.evaluate(episode.world.truth(), episode.events, completing=False)
    table = episode.world.outcome_rewards or episode.spec.outcome_rewards
    terminal = episode.rewards.table.get("terminal", 0.0) * table.get(verdict.outcome, 0.0)
    held = sum(episode.rewards.held.values())
    return verdict, episode.total_reward + held + terminal


def passed(episode: Episode, verdict: Verdict) -> bool:
    """Whether ``verdict`` is one of the world's safe outcomes (what pass^k counts)."""
    return verdict.outcome in episode.spec.safe_outcomes
