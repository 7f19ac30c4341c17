"""``opsgym eval --verify NAME``: recompute everything an evaluation's report says.

Everything the summary and tables read is either recomputed from the stored record or bound by
the evaluation's seal (:mod:`opsgym.store.seal`):

* each episode is rebuilt from the store (its outcome, return and reward columns included) and
  replayed; the first difference names the step and field (an edited event, header, verdict or
  summary column; a call after the end or an edited token count is a ``calls`` difference);
* the figures stored beside each record (steps, tokens, family, split, lies, downtime cost) are
  derived again from the replayed episode and compared;
* the set of episodes (policy x scenario x seed x trial, each with its record's hash) is
  compared with the manifest sealed when the evaluation finished, and the manifest's root hash
  recomputed: a missing, extra, replaced or relabelled episode (an edited policy or trial) is
  named, and the root printed, to compare with the one published in ``results.json``;
* the stored aggregates are recomputed from the episodes and compared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opsgym.core.errors import OpsgymError
from opsgym.core.replay import replay
from opsgym.core.scenarios import split_of

EXIT_MATCH, EXIT_EVENT, EXIT_HEADER, EXIT_VERDICT, EXIT_SEAL, EXIT_AGGREGATES = 0, 3, 4, 5, 6, 7
"""Exit codes of ``--verify``: all match; an event differs; a header; a verdict or a figure
stored beside the record; the set of episodes or its seal; the stored aggregates."""

_SEVERITY = (
    ("seal", EXIT_SEAL),
    ("verdict", EXIT_VERDICT),
    ("header", EXIT_HEADER),
    ("aggregates", EXIT_AGGREGATES),
    ("event", EXIT_EVENT),
)

DERIVED = ("steps", "tokens", "family", "split", "lies", "downtime_cost")
"""The columns stored beside a record that are derived again from its replay and compared."""


@dataclass
class Verification:
    """How many stored episodes replay to an exact match, the first difference of each one
    that does not, and what differs in the evaluation's set of episodes and aggregates.

    Attributes:
        name: The evaluation.
        total: Episodes stored.
        matched: Episodes whose replay and derived figures match.
        problems: One dict per difference: ``kind`` (``event``, ``header``, ``verdict``,
            ``seal``, ``aggregates``), ``episode`` (its id, ``None`` for one missing or for the
            whole evaluation), ``policy``, ``seed``, ``step``, ``field``, ``recorded`` and
            ``replayed`` (what the record or seal says, what recomputation gives), and for seal
            and aggregates a ``message``.
        root: The root hash of the episodes as stored now: what a published ``results.json``
            must show.
        sealed_root: The root stored with the evaluation when it finished (``None``: never
            sealed).
    """

    name: str
    total: int = 0
    matched: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)
    root: str | None = None
    sealed_root: str | None = None

    @property
    def exit_code(self) -> int:
        """The most serious kind found: seal > verdict > header > aggregates > event."""
        kinds = {p["kind"] for p in self.problems}
        for kind, code in _SEVERITY:
            if kind in kinds:
                return code
        return EXIT_MATCH


def _kind(field_name: str, step: int) -> str:
    if field_name in ("verdict", "return", "outcome", "rewards") or (
        step == 0 and field_name in DERIVED
    ):
        return "verdict"
    if field_name == "header" or step == 0:
        return "header"
    return "event"


def derived(episode: Any) -> dict[str, Any]:
    """The figures of ``episode`` (a replayed :class:`~opsgym.core.episode.Episode`) that the
    store keeps beside its record, as the harness computes them.
    """
    from opsgym.evaluation.runner import downtime_cost, lies_of

    events = episode.events
    return {
        "steps": len(events),
        "tokens": sum(e["tokens"] for e in events),
        "family": episode.family.name,
        "split": split_of(episode.seed),
        "lies": lies_of(episode),
        "downtime_cost": downtime_cost(events),
    }


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _figure_difference(row: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any] | None:
    for name in DERIVED:
        if _plain(row.get(name)) != _plain(fresh[name]):
            return {"step": 0, "field": name, "recorded": row.get(name), "replayed": fresh[name]}
    return None


def _replayed_row(row: dict[str, Any], episode: Any, figures: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every figure the summary reads taken from the replayed ``episode``."""
    verdict = episode.verdict
    return {
        **row,
        **figures,
        "outcome": verdict.outcome if verdict else None,
        "return": episode.rewards.total,
        "rewards": dict(episode.rewards.totals),
    }


def _check_episode(
    store: Any, row: dict[str, Any], split: str
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The first difference of stored episode ``row`` from its replay (``None`` if none), and
    the row as the replay gives it (the stored row where the record cannot be replayed).
    """
    where = {"episode": row["id"], "policy": row["policy"], "seed": row["seed"]}
    record = store.episode_record(row["id"])
    try:
        replayed = replay(record)
    except OpsgymError as exc:
        refused = {"step": 0, "field": "header", "recorded": str(exc), "replayed": None}
        return {**where, "kind": "header", **refused}, row
    d: dict[str, Any] | None = replayed.first_difference
    fresh = row
    if replayed.episode is not None:
        figures = derived(replayed.episode)
        fresh = _replayed_row(row, replayed.episode, figures)
        if d is None:
            d = _figure_difference(row, figures)
        if d is None and row["split"] != split:
            d = {"step": 0, "field": "split", "recorded": row["split"], "replayed": split}
    problem = None if d is None else {**where, "kind": _kind(d["field"], d["step"]), **d}
    return problem, fresh


def _seal_problems(
    sealed: dict[str, Any] | None, name: str, config: dict[str, Any], stored: list[Any]
) -> list[dict[str, Any]]:
    """What differs between the stored episodes ``stored`` and the evaluation's seal."""
    from opsgym.store import seal

    if sealed is None:
        never = (
            "the evaluation was never sealed (finished before opsgym kept seals, or still "
            "running): its set of episodes cannot be checked; run it again with the same name "
            "and settings to seal what it holds now"
        )
        return [_whole("seal", "root", None, None, never)]
    problems = []
    recomputed = seal.root(name, config, sealed["manifest"])
    if recomputed != sealed["root"]:
        problems.append(
            _whole(
                "seal",
                "root",
                sealed["root"],
                recomputed,
                "the stored manifest does not hash to the stored root",
            )
        )
    return problems + seal.differences(sealed["manifest"], stored)


def _whole(kind: str, name: str, recorded: Any, replayed: Any, message: str) -> dict[str, Any]:
    return {
        "episode": None,
        "policy": None,
        "seed": None,
        "kind": kind,
        "step": 0,
        "field": name,
        "recorded": recorded,
        "replayed": replayed,
        "message": message,
    }


def _first_path(old: Any, new: Any, path: str = "") -> str | None:
    """The first path (``a.b[2]``) where two JSON values differ, or ``None``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            found = _first_path(old.get(key), new.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _first_path(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new):
        return None
    return None if old == new else (path or "summary")


def _aggregate_problems(evaluation: Mapping[str, Any], rows: list[Any]) -> list[dict[str, Any]]:
    """The stored summary against one recomputed from the replayed episodes ``rows``: an
    edited episode is that episode's difference, edited aggregates this one.
    """
    from opsgym.core.registry import spec
    from opsgym.evaluation.summary import summarise

    if evaluation["status"] != "done":
        return []
    config = evaluation["config"]
    stored = (evaluation["aggregates"] or {}).get("summary")
    world = spec(config["env"])
    fresh = summarise(
        rows,
        outcomes=world.outcome_rewards,
        safe_outcomes=world.safe_outcomes,
        trials=config.get("trials", 1),
    )
    old, new = {"summary": stored}, _plain({"summary": fresh})
    path = _first_path(old, new)
    if path is None:
        return []
    recorded, replayed = _at(old, path), _at(new, path)
    why = f"stored aggregates differ from those recomputed at {path}"
    return [_whole("aggregates", path, recorded, replayed, why)]


def _at(value: Any, path: str) -> Any:
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            index = int(part[1:-1])
            value = value[index] if isinstance(value, list) and index < len(value) else None
        elif part:
            value = value.get(part) if isinstance(value, dict) else None
    return value


def verify(name: str, db: Any = None, *, expected_root: str | None = None) -> Verification:
    """Recompute everything evaluation ``name``'s report says (see the module's docstring).

    ``expected_root``: the root published with the evaluation (its ``results.json``); a store
    whose episodes no longer give it is a ``seal`` difference, even one sealed afresh.
    """
    from opsgym.store import open_store, seal

    result = Verification(name)
    with open_store(db) as store:
        evaluation = store.evaluation(name)  # raises NotFoundError naming the stored ones
        config = evaluation["config"]
        rows = store.episodes(evaluation=name, limit=None)
        replayed = []
        for row in rows:
            result.total += 1
            problem, fresh = _check_episode(store, dict(row), config.get("split", row["split"]))
            replayed.append(fresh)
            if problem is None:
                result.matched += 1
            else:
                result.problems.append(problem)
        sealed = store.seal(name)
    stored = [
        (r["id"], (r["policy"], r["scenario"], r["seed"], r["trial"], r["record_hash"]))
        for r in rows
    ]
    result.root = seal.root(name, config, seal.manifest(e for _, e in stored))
    result.sealed_root = None if sealed is None else sealed["root"]
    if expected_root is not None and expected_root != result.root:
        why = "the stored episodes do not give the root published with the evaluation"
        result.problems.append(_whole("seal", "root", expected_root, result.root, why))
    result.problems += _seal_problems(sealed, name, config, stored)
    result.problems += _aggregate_problems(evaluation, replayed)
    return result
