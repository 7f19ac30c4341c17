"""The specialist workers a supervisor can delegate to, and their consensus poll.

Each worker reads its own domain of the fleet and answers with structured output: the fault it
sees, the target, a confidence, an uncertainty and a recommended action. Each is wrong with the
task's ``worker_error`` probability (it then names another target), and its confidence overlaps
between right and wrong answers, so a careful supervisor cross-checks before acting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from opsgym.envs.fleet.domain import N_NODES, N_RANKS, N_SPINES, WORKERS

DRAWS = 4
"""Uniform draws one worker answer consumes, whatever it says."""


def _domain(worker: str, s: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The fault and target a worker would report if it were right."""
    if worker == "log_inspector":
        if s["oom"]:
            return "oom", {"rank": min(s["oom"])}
        if s["lost"]:
            rank = min(s["lost"])
            return "gpu_lost", {"rank": rank, "node": rank // 8}
        if s["hung"]:
            return "desync", {"rank": s["desync_rank"]}
        if s["version_nodes"]:
            return "version_mismatch", {"node": min(s["version_nodes"])}
    elif worker == "patch_agent":
        if s["desync"]:
            return "desync", {"file": s["desync_file"]}
    elif worker == "topology_agent":
        if s["hot_spine"] is not None:
            return "congestion", {"spine": s["hot_spine"]}
    elif worker == "version_checker":
        if s["version_nodes"]:
            return "version_mismatch", {"node": min(s["version_nodes"])}
    return "none", None


def _mislead(target: dict[str, Any], s: dict[str, Any], u: float) -> dict[str, Any]:
    """Another target of the same kind."""
    if "rank" in target:
        rank = (target["rank"] + 1 + int(u * (N_RANKS - 1))) % N_RANKS
        return {"rank": rank, "node": rank // 8} if "node" in target else {"rank": rank}
    if "node" in target:
        return {"node": (target["node"] + 1 + int(u * (N_NODES - 1))) % N_NODES}
    if "spine" in target:
        return {"spine": (target["spine"] + 1) % N_SPINES}
    return {"file": s["decoy_file"]}


def recommend(fault: str, target: dict[str, Any] | None) -> str:
    """The call a worker recommends for its finding."""
    if target is None:
        return "none"
    if fault == "oom":
        return f"restart_rank(rank={target['rank']})"
    if fault == "gpu_lost":
        return f"drain_node(node={target['node']}) + reschedule(node={target['node']})"
    if fault == "congestion":
        return f"reorder_ring() + reroute_ring(spine={(target['spine'] + 1) % N_SPINES})"
    if fault == "version_mismatch":
        return f"fix_library_path(node={target['node']})"
    if "file" in target:
        return f"patch_apply(file={target['file']!r})"
    return "patch_identify()"


def answer(
    worker: str, s: dict[str, Any], error: float, hosts: tuple[str, ...], u: Sequence[float]
) -> tuple[dict[str, Any], bool]:
    """One worker's structured answer, and whether it is right (for the record only)."""
    fault, target = _domain(worker, s)
    right = True
    if target is not None and u[0] < error:
        target, right = _mislead(target, s, float(u[1])), False
    confidence = 0.62 + 0.33 * float(u[2]) if right else 0.38 + 0.40 * float(u[2])
    if target is None:
        confidence = 0.7 + 0.25 * float(u[2])
    if target is not None and "node" in target:
        target = {**target, "host": hosts[target["node"]]}
    return (
        {
            "worker": worker,
            "fault": fault,
            "target": target,
            "confidence": round(confidence, 2),
            "uncertainty": round(0.5 * (1.0 - confidence) + 0.1 * float(u[3]), 2),
            "recommended_action": recommend(fault, target),
        },
        right and target is not None,
    )


def ballots(
    s: dict[str, Any], error: float, hosts: tuple[str, ...], u: Sequence[float]
) -> list[dict[str, Any]]:
    """Every worker's answer as a consensus poll hears it (``WORKERS`` order, ``DRAWS`` each)."""
    return [
        answer(worker, s, error, hosts, u[i * DRAWS : (i + 1) * DRAWS])[0]
        for i, worker in enumerate(WORKERS)
    ]


def consensus(
    s: dict[str, Any], error: float, hosts: tuple[str, ...], u: Sequence[float]
) -> dict[str, Any]:
    """Every worker votes for an action; the majority among those with something to do."""
    return tally(ballots(s, error, hosts, u))


def tally(found: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The consensus of the workers' answers ``found`` (as ``ballots`` returns them)."""
    votes = {f["worker"]: f["recommended_action"] for f in found}
    counts = Counter(v for v in votes.values() if v != "none")
    top = counts.most_common()
    majority = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
    return {
        "votes": votes,
        "majority": majority,
        "support": top[0][1] if top else 0,
    }
