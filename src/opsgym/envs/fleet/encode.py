"""The fleet world as a vector, for the Gymnasium face. Built from the agent's view only.

Observation: ``Box(-1, 1, (419,), float32)``, four blocks in this order. Nothing in it names the
task: the family shows only through what the tools reported.

Globals (indices 0-39):

| idx   | meaning                                                          | values   |
|-------|------------------------------------------------------------------|----------|
| 0     | share of the incident window used                                | 0..1     |
| 1     | share of the episode's step cap used (the task's own budget,     | 0..1     |
|       | 50-300 calls, is not shown: it ends the episode)                 |          |
| 2     | tokens spent / token allowance (capped)                          | 0..1     |
| 3     | delegations used / budget of 10 (capped)                         | 0..1     |
| 4     | a telemetry scrape has been read                                 | 0/1      |
| 5     | that scrape is stale (predates the last remediation)             | 0/1      |
| 6     | calls before the next scrape / refresh interval                  | 0..1     |
| 7-10  | scraped job status: stalled, hung, degraded, running (one-hot)   | 0/1      |
| 11    | scraped throughput / nominal (capped)                            | 0..1     |
| 12    | scrape age in calls / 10 (capped)                                | 0..1     |
| 13    | phase / 3 (1: until a fresh scrape shows the job not stalled;    | 0..1     |
|       | 2: until three benchmark samples hold; 3)                        |          |
| 14    | spares in use / 2                                                | 0..1     |
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
| 39    | difficulty multiplier / 2                                        | 0..1     |

Patch files (40-54): for each of the five ``PATCH_FILES``, three values: listed as a candidate
(0/1), its diff (+1 collectives differ, -1 only a guard recompiled, 0 not diffed), the patch
agent names it (0/1).

Ranks (55-374): 32 ranks x 10 values (``state.R_*``): alerted in the last scrape, hot in it
(memory >= 79 GiB, unreadable or silent), flight recorder read, behind its peers, issuing a
different collective, a CUDA out-of-memory error in its log, another CUDA error in its log, a
current Xid 79 on its GPU, restarted by the agent, named by a worker.

Nodes (375-418): 4 nodes x 11 values (``state.N_*``): alerted, shown degraded, kernel log read,
NCCL log read, truncation warnings seen, a watchdog reports a different collective, NCCL
version (+1 wrong, -1 right, 0 unknown), library path fixed, drained, rescheduled onto a spare,
named by a worker.

Actions: ``Discrete(117)``, the parameterised tools expanded (see ``ACTIONS``): check_telemetry;
query_nccl_logs, read_kernel_log, check_nccl_version (x4 nodes); show_topology;
benchmark_allreduce; inspect_flight_recorder (x32 ranks, ``last=1``: the vector reads the dump's
summary, not its text);
restart_rank (x32); reorder_ring; reroute_ring (x2 spines); fix_library_path (x4);
patch_identify; patch_diff, patch_apply (x5 files); delegate (x4 workers); poll_consensus;
coalition (x3); drain_node (x4); reschedule (x4); restart_job; reboot_fleet; declare_resolved;
wait (last).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from opsgym.envs.fleet.state import NODE_FEATURES, RANK_FEATURES, View
from opsgym.envs.fleet.tasks import (
    BENCH_STREAK,
    COALITIONS,
    DELEGATION_BUDGET,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    WORKERS,
)

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

_STATUS = ("stalled", "hung", "degraded", "running")
N_GLOBAL = 40
_RANKS = N_GLOBAL + 3 * len(PATCH_FILES)
_NO_FILES = [0.0] * (3 * len(PATCH_FILES))
_HEAD = struct.Struct(f"={_RANKS}f")
"""Packs the head (globals and patch files) as float32 straight into the vector: the same
rounding as numpy's cast, without building an array from a list."""


def _actions() -> list[tuple[str, dict[str, Any]]]:
    nodes = [{"node": n} for n in range(N_NODES)]
    ranks = [{"rank": r} for r in range(N_RANKS)]
    files = [{"file": f} for f in PATCH_FILES]
    out: list[tuple[str, dict[str, Any]]] = [("check_telemetry", {})]
    out += [("query_nccl_logs", a) for a in nodes]
    out += [("read_kernel_log", a) for a in nodes]
    out += [("check_nccl_version", a) for a in nodes]
    out += [("show_topology", {}), ("benchmark_allreduce", {})]
    # the vector reads a dump's summary, never its text: the Gym catalogue asks for one entry
    out += [("inspect_flight_recorder", {**a, "last": 1}) for a in ranks]
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
    out += [("reschedule", a) for a in nodes]
    out += [("restart_job", {}), ("reboot_fleet", {}), ("declare_resolved", {}), ("wait", {})]
    return out


ACTIONS = _actions()


class FleetEncoder:
    """Encodes an episode of the fleet world as 419 floats in [-1, 1]."""

    size = N_GLOBAL + 3 * len(PATCH_FILES) + RANK_FEATURES * N_RANKS + NODE_FEATURES * N_NODES
    low, high = -1.0, 1.0
    actions = ACTIONS

    def __init__(self) -> None:
        self._files_key: tuple[Any, ...] | None = None
        self._files: list[float] = []

    def _patch_files(self, v: View) -> list[float]:
        """The patch block, rebuilt only when the patch evidence changed."""
        named = ((v.findings.get("patch_agent") or {}).get("target") or {}).get("file")
        candidates = tuple(v.candidates) if v.candidates is not None else None
        key = (candidates, tuple(v.diffs.items()), named)
        if key != self._files_key:
            files: list[float] = []
            for file in PATCH_FILES:
                diff = v.diffs.get(file)
                files += (
                    float(candidates is not None and file in candidates),
                    0.0 if diff is None else (1.0 if diff else -1.0),
                    float(file == named),
                )
            self._files_key, self._files = key, files
        return self._files

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        world = episode.world
        v: View = world.view
        k = v.level.refresh
        st = [0.0, 0.0, 0.0, 0.0]
        seen = stale = share = age = 0.0
        scrape = v.scrape
        if scrape is not None:
            job = scrape["job"]
            seen, stale = 1.0, 1.0 if v.scrape_call <= v.last_remediation else 0.0
            if job["status"] in _STATUS:
                st[_STATUS.index(job["status"])] = 1.0
            share = job["throughput_tokens_per_s"] / job["nominal_tokens_per_s"]
            age = (v.calls - v.scrape_call) / 10
        util = [0.0, 0.0]
        if v.topology is not None:
            util = [s["uplink_utilisation"] for s in v.topology["spines"]]
        workers = [0.0] * (2 * len(WORKERS) + 1)
        if v.findings:
            for i, worker in enumerate(WORKERS):
                found = v.findings.get(worker)
                if found is not None:
                    workers[i], workers[4 + i] = 1.0, found["confidence"]
            spine = ((v.findings.get("topology_agent") or {}).get("target") or {}).get("spine")
            workers[8] = 0.0 if spine is None else (1.0 if spine else -1.0)
        events = episode.events
        clock, tokens, streak = world.clock / world.deadline, v.tokens / v.allowance, v.bench_streak
        delegated = v.delegations / DELEGATION_BUDGET
        ring = v.ring_spine
        last = v.bench[-1] if v.bench else 0.0
        head = [
            clock if clock < 1.0 else 1.0,
            episode.steps / episode.max_steps if episode.max_steps else 0.0,
            tokens if tokens < 1.0 else 1.0,
            delegated if delegated < 1.0 else 1.0,
            seen,
            stale,
            (-v.calls % k) / k,
            *st,
            share if share < 1.0 else 1.0,
            age if age < 1.0 else 1.0,
            v.phase / 3,
            len(v.rescheduled) / 2,
            1.0 if v.coordination else 0.0,
            1.0 if v.ring_aware else 0.0,
            1.0 if ring == 0 else 0.0,
            1.0 if ring == 1 else 0.0,
            1.0 if v.topology is not None else 0.0,
            *util,
            streak / BENCH_STREAK if streak < BENCH_STREAK else 1.0,
            last if last < 1.0 else 1.0,
            1.0 if v.mismatch else 0.0,
            1.0 if v.candidates is not None else 0.0,
            1.0 if v.patched is not None else 0.0,
            1.0 if events and events[-1]["rejected"] is not None else 0.0,
            1.0 if v.consensus is not None else 0.0,
            *workers,
            world.settings.level / 3,
            world.settings.difficulty_multiplier / 2,
        ]
        if v.candidates is not None or "patch_agent" in v.findings:
            head += self._patch_files(v)
        else:
            head += _NO_FILES
        out = np.empty(self.size, np.float32)
        _HEAD.pack_into(out, 0, *head)
        out[_RANKS:] = v.features
        return out
