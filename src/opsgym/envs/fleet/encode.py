"""The fleet world as a vector, for the Gymnasium face. Built from the agent's view only.

Observation: ``Box(-1, 1, (357,), float32)``, five blocks in this order.

Globals (indices 0-38):

| idx   | meaning                                                          | values   |
|-------|------------------------------------------------------------------|----------|
| 0     | share of the incident window used                                | 0..1     |
| 1     | share of the step budget used                                    | 0..1     |
| 2     | tokens spent / token allowance (capped)                          | 0..1     |
| 3     | delegations used / budget of 10 (capped)                         | 0..1     |
| 4     | a telemetry scrape has been read                                 | 0/1      |
| 5     | that scrape is stale (predates the last remediation)             | 0/1      |
| 6     | calls before the next scrape / refresh interval                  | 0..1     |
| 7-10  | scraped job status: stalled, hung, degraded, running (one-hot)   | 0/1      |
| 11    | scraped throughput / nominal (capped)                            | 0..1     |
| 12    | scrape age in calls / 10 (capped)                                | 0..1     |
| 13    | cascade phase / 3 (0 when the task is not phase-gated)           | 0..1     |
| 14    | the task is phase-gated                                          | 0/1      |
| 15    | coordination is enabled                                          | 0/1      |
| 16    | the agent re-formed the ring in topology order                   | 0/1      |
| 17-18 | the agent pinned the ring to spine 0 / spine 1                   | 0/1      |
| 19    | the topology has been read                                       | 0/1      |
| 20-21 | uplink utilisation of spine 0 / 1 as last read (0 if unread)     | 0..1     |
| 22    | consecutive benchmark samples at target since the last topology  | 0..1     |
|       | change / 3 (capped)                                              |          |
| 23    | last benchmark sample / nominal (capped; 0 if none)              | 0..1     |
| 24    | flight recorders disagree on a collective                        | 0/1      |
| 25    | patch_identify has listed candidates                             | 0/1      |
| 26    | a patch has been applied                                         | 0/1      |
| 27    | the last call was rejected                                       | 0/1      |
| 28    | a consensus has been polled                                      | 0/1      |
| 29-32 | consulted: log_inspector, patch_agent, topology_agent,           | 0/1      |
|       | version_checker                                                  |          |
| 33-36 | the confidence of each one's last finding                        | 0..1     |
| 37    | spine the topology agent blames: -1 spine 0, +1 spine 1, 0 none  | -1/0/1   |
| 38    | curriculum level / 3                                             | 0..1     |

Task (39-45): one-hot over ``easy, medium, hard, cascade, fleet_coordination, black_swan`` and
a generated challenge.

Patch files (46-60): for each of the five ``PATCH_FILES``, three values: listed as a candidate
(0/1), its diff (+1 collectives differ, -1 only a guard recompiled, 0 not diffed), the patch
agent names it (0/1).

Ranks (61-316): 32 ranks x 8 values (``state.R_*``): alerted in the last scrape, hot in it
(memory >= 79 GiB or silent), flight recorder read, behind its peers, issuing a different
collective, current XID 79, restarted by the agent, named by a worker.

Nodes (317-356): 4 nodes x 10 values (``state.N_*``): alerted, shown degraded, kernel log read,
NCCL log read, truncation warnings seen, a watchdog reports a different collective, NCCL
version (+1 wrong, -1 right, 0 unknown), library path fixed, drained, named by a worker.

Actions: ``Discrete(113)``, the parameterised tools expanded (see ``ACTIONS``): check_telemetry;
query_nccl_logs, read_kernel_log, check_nccl_version (x4 nodes); show_topology;
benchmark_allreduce; inspect_flight_recorder (x32 ranks); restart_rank (x32); reorder_ring;
reroute_ring (x2 spines); fix_library_path (x4); patch_identify; patch_diff, patch_apply
(x5 files); delegate (x4 workers); poll_consensus; coalition (x3); drain_node (x4);
restart_job; reboot_fleet; declare_resolved; wait (last).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from opsgym.envs.fleet.state import View
from opsgym.envs.fleet.tasks import (
    BENCH_STREAK,
    COALITIONS,
    DELEGATION_BUDGET,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    TASK_NAMES,
    WORKERS,
)

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

_STATUS = ("stalled", "hung", "degraded", "running")
N_GLOBAL = 39


def _actions() -> list[tuple[str, dict[str, Any]]]:
    nodes = [{"node": n} for n in range(N_NODES)]
    ranks = [{"rank": r} for r in range(N_RANKS)]
    files = [{"file": f} for f in PATCH_FILES]
    out: list[tuple[str, dict[str, Any]]] = [("check_telemetry", {})]
    out += [("query_nccl_logs", a) for a in nodes]
    out += [("read_kernel_log", a) for a in nodes]
    out += [("check_nccl_version", a) for a in nodes]
    out += [("show_topology", {}), ("benchmark_allreduce", {})]
    out += [("inspect_flight_recorder", a) for a in ranks]
    out += [("restart_rank", a) for a in ranks]
    out += [("reorder_ring", {})]
    out += [("reroute_ring", {"spine": s}) for s in range(N_SPINES)]
    out += [("fix_library_path", a) for a in nodes]
    out += [("patch_identify", {})]
    out += [("patch_diff", a) for a in files]
    out += [("patch_apply", a) for a in files]
    out += [("delegate", {"worker": w}) for w in WORKERS]
    out += [("poll_consensus", {})]
    out += [("coalition", {"action": a}) for a in COALITIONS]
    out += [("drain_node", a) for a in nodes]
    out += [("restart_job", {}), ("reboot_fleet", {}), ("declare_resolved", {}), ("wait", {})]
    return out


ACTIONS = _actions()


class FleetEncoder:
    """Encodes an episode of the fleet world as 357 floats in [-1, 1]."""

    size = N_GLOBAL + len(TASK_NAMES) + 1 + 3 * len(PATCH_FILES) + 8 * N_RANKS + 10 * N_NODES
    low, high = -1.0, 1.0
    actions = ACTIONS

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        world = episode.world
        v: View = world.view
        k = v.level.refresh
        status = [0.0] * len(_STATUS)
        seen = stale = throughput = age = 0.0
        scrape = v.scrape
        if scrape is not None:
            job = scrape["job"]
            seen, stale = 1.0, float(v.stale())
            if job["status"] in _STATUS:
                status[_STATUS.index(job["status"])] = 1.0
            throughput = min(job["throughput_tokens_per_s"] / job["nominal_tokens_per_s"], 1.0)
            age = min((v.calls - v.scrape_call) / 10, 1.0)
        spines = [0.0, 0.0]
        if v.topology is not None:
            spines = [s["uplink_utilisation"] for s in v.topology["spines"]]
        consulted = [0.0] * len(WORKERS)
        confidence = [0.0] * len(WORKERS)
        for i, worker in enumerate(WORKERS):
            found = v.findings.get(worker)
            if found is not None:
                consulted[i], confidence[i] = 1.0, found["confidence"]
        spine = ((v.findings.get("topology_agent") or {}).get("target") or {}).get("spine")
        task = [0.0] * (len(TASK_NAMES) + 1)
        task[TASK_NAMES.index(v.task) if v.task in TASK_NAMES else len(TASK_NAMES)] = 1.0
        named = ((v.findings.get("patch_agent") or {}).get("target") or {}).get("file")
        files = []
        for file in PATCH_FILES:
            diff = v.diffs.get(file)
            files += (
                float(v.candidates is not None and file in v.candidates),
                0.0 if diff is None else (1.0 if diff else -1.0),
                float(file == named),
            )
        head = [
            min(world.clock / world.deadline, 1.0),
            episode.steps / episode.max_steps if episode.max_steps else 0.0,
            min(v.tokens / v.allowance, 1.0),
            min(v.delegations / DELEGATION_BUDGET, 1.0),
            seen,
            stale,
            (-v.calls % k) / k,
            *status,
            throughput,
            age,
            v.phase / 3 if v.gated else 0.0,
            float(v.gated),
            float(v.coordination),
            float(v.ring_aware),
            float(v.ring_spine == 0),
            float(v.ring_spine == 1),
            float(v.topology is not None),
            *spines,
            min(v.bench_streak / BENCH_STREAK, 1.0),
            min(v.bench[-1], 1.0) if v.bench else 0.0,
            float(v.mismatch),
            float(v.candidates is not None),
            float(v.patched is not None),
            float(bool(episode.events) and episode.events[-1]["rejected"] is not None),
            float(v.consensus is not None),
            *consulted,
            *confidence,
            0.0 if spine is None else (1.0 if spine else -1.0),
            world.settings.level / 3,
            *task,
            *files,
        ]
        return np.concatenate((np.array(head, np.float32), v.ranks.ravel(), v.nodes.ravel()))
