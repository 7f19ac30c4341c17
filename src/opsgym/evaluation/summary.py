"""The summary of an evaluation, per policy and scenario, from its stored episodes.

Never one blended success rate: every outcome gets its own rate and Wilson interval
("deployed v2, verified" and "rolled back, v1 restored" are separate columns everywhere).
pass^k counts an episode as passed when it ended in one of the world's safe outcomes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from opsgym.evaluation.metrics import mean, pass_at_k, pass_hat_k, rate


def _key(row: Mapping[str, Any]) -> tuple:
    return (row["policy"], row["scenario"], row["seed"], row["trial"])


def summarise(
    rows: Iterable[Mapping[str, Any]],
    *,
    outcomes: Iterable[str],
    safe_outcomes: Iterable[str],
    trials: int = 1,
) -> list[dict[str, Any]]:
    """One summary per (policy, scenario), in sorted order, from light episode rows.

    Each row needs: policy, scenario, seed, trial, outcome, return, rewards (by component),
    steps, tokens; optionally downtime_cost and lies.
    """
    safe = frozenset(safe_outcomes)
    names = list(outcomes)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=_key):
        groups[(row["policy"], row["scenario"])].append(row)
    out = []
    for (policy, scenario), group in sorted(groups.items()):
        n = len(group)
        seen = names + sorted({r["outcome"] for r in group} - set(names))
        per_seed: dict[int, list[bool]] = defaultdict(list)
        for r in group:
            per_seed[r["seed"]].append(r["outcome"] in safe)
        counts = [(len(v), sum(v)) for _, v in sorted(per_seed.items())]
        ran = max(len(v) for v in per_seed.values())
        ks = range(1, max(trials, 1) + 1)
        deterministic = ran == 1 and trials > 1
        components: dict[str, list[float]] = defaultdict(list)
        for r in group:
            for name, value in r["rewards"].items():
                components[name].append(value)
        costs = [r["downtime_cost"] for r in group if r.get("downtime_cost") is not None]
        out.append(
            {
                "policy": policy,
                "scenario": scenario,
                "n": n,
                "seeds": len(per_seed),
                "outcomes": {
                    o: rate(sum(r["outcome"] == o for r in group), n).to_dict() for o in seen
                },
                "pass_hat_k": {str(k): pass_hat_k(counts, 1 if deterministic else k) for k in ks},
                "pass_at_k": {str(k): pass_at_k(counts, 1 if deterministic else k) for k in ks},
                "deterministic": deterministic,
                "return": mean([r["return"] for r in group]).to_dict(),
                "components": {k: float(np.mean(v)) for k, v in sorted(components.items())},
                "steps": float(np.mean([r["steps"] for r in group])),
                "tokens": float(np.mean([r["tokens"] for r in group])),
                "downtime_cost": float(np.mean(costs)) if costs else None,
                "lies": _lies(group),
            }
        )
    return out


def _lies(group: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    marked = [r["lies"] for r in group if r.get("lies") is not None]
    if not marked:
        return None
    by_kind: dict[str, dict[str, int]] = defaultdict(
        lambda: {"told": 0, "trusted": 0, "reconciled": 0}
    )
    for lies in marked:
        for kind, c in lies.get("by_kind", {}).items():
            for key in ("told", "trusted", "reconciled"):
                by_kind[kind][key] += c.get(key, 0)
    told = sum(m["told"] for m in marked)
    trusted = sum(m["trusted"] for m in marked)
    return {
        "told": told / len(marked),
        "trusted": trusted / len(marked),
        "reconciled": sum(m.get("reconciled", 0) for m in marked) / len(marked),
        "trusted_share": rate(trusted, told).to_dict(),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
    }
