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
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from opsgym.envs.fleet.domain import (
    BENCH_STREAK,
    COALITIONS,
    DELEGATION_BUDGET,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    WORKERS,
)
from opsgym.envs.fleet.state import NODE_FEATURES, RANK_FEATURES, View

if TYPE_CHECKING:
    from opsgym.core.episode import Episode
    from opsgym.envs.fleet.base import FleetBase

_STATUS = ("stalled", "hung", "degraded", "running")
N_GLOBAL = 40
_RANKS = N_GLOBAL + 3 * len(PATCH_FILES)
_NO_FILES = (0.0,) * (3 * len(PATCH_FILES))
_NO_STATUS = (0.0,) * len(_STATUS)
_ONE_HOT = {s: tuple(float(s == o) for o in _STATUS) for s in _STATUS}
"""Indices 7-10: the scraped job status, one-hot."""
_FLOAT32 = np.dtype(np.float32)
_MOVING = struct.Struct("=3f")
"""Indices 0-2 (clock, steps, tokens); then one float each at the refresh (6), the scrape's
age (12) and the last call's rejection (27): what changes on every call."""
_ONE = struct.Struct("=f")
_REFRESH, _AGE, _REJECTED = 6, 12, 27
_empty = np.empty
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
    """Encodes an episode of the fleet world as 419 floats in [-1, 1].

    Most of the globals change only when a tool's report changes the view; they are kept
    between calls, under a key of every view field they are read from (by value, or by identity
    for the reports the view holds, which the world replaces and never changes in place), and
    only the six that move on every call (clock, steps, tokens, refresh, scrape age, last
    rejection) are computed each time.
    """

    size = N_GLOBAL + 3 * len(PATCH_FILES) + RANK_FEATURES * N_RANKS + NODE_FEATURES * N_NODES
    low, high = -1.0, 1.0
    actions = ACTIONS

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._template = np.zeros(self.size, _FLOAT32)  # the globals kept, at their indices

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return type(self), ()  # the kept globals are a cache (holding the last world): not kept

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        world = cast("FleetBase", episode.world)  # the spec pairs this encoder with its world
        v: View = world.view
        findings, diffs, settings = v.findings, v.diffs, world.settings
        key = (
            world,
            settings.level,
            settings.difficulty_multiplier,
            v.delegations,
            v.scrape,
            v.scrape_call <= v.last_remediation,  # stale (the scrape's age moves: not kept)
            v.phase,
            len(v.rescheduled),
            v.coordination,
            v.ring_aware,
            v.ring_spine,
            v.topology,
            v.bench_streak,
            v.bench,
            v.mismatch,
            v.candidates,
            v.patched,
            v.consensus is None,
            tuple(findings.items()) if findings else (),
            tuple(diffs.items()) if diffs else (),
        )
        if key != self._key:
            _HEAD.pack_into(self._template, 0, *_static(world, v))
            self._key = key
        out = self._template.copy()  # then the six that move, and the ranks and nodes
        k = v.level.refresh
        calls = v.calls
        clock = world.clock / world.deadline
        tokens = v.tokens / v.allowance
        _MOVING.pack_into(
            out,
            0,
            clock if clock < 1.0 else 1.0,
            episode.steps / episode.max_steps if episode.max_steps else 0.0,
            tokens if tokens < 1.0 else 1.0,
        )
        _ONE.pack_into(out, 4 * _REFRESH, (-calls % k) / k)
        if v.scrape is not None:
            age = (calls - v.scrape_call) / 10
            _ONE.pack_into(out, 4 * _AGE, age if age < 1.0 else 1.0)
        events = episode.events
        if events and events[-1]["rejected"] is not None:
            _ONE.pack_into(out, 4 * _REJECTED, 1.0)
        out[_RANKS:] = v.features
        return out


def _static(world: Any, v: View) -> tuple[float, ...]:
    """The globals and patch files as they stand between calls: those that change only with
    the view's reports, and 0.0 at the six that move on every call (see ``encode``).
    """
    scrape = v.scrape
    if scrape is None:
        seen = stale = share = 0.0
        status = _NO_STATUS
    else:
        job = scrape["job"]
        seen, stale = 1.0, 1.0 if v.scrape_call <= v.last_remediation else 0.0
        status = _ONE_HOT.get(job["status"], _NO_STATUS)
        share = job["throughput_tokens_per_s"] / job["nominal_tokens_per_s"]
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
    files = _NO_FILES
    if v.candidates is not None or "patch_agent" in v.findings:
        files = []
        named = ((v.findings.get("patch_agent") or {}).get("target") or {}).get("file")
        for file in PATCH_FILES:
            diff = v.diffs.get(file)
            files += (
                float(v.candidates is not None and file in v.candidates),
                0.0 if diff is None else (1.0 if diff else -1.0),
                float(file == named),
            )
    delegated = v.delegations / DELEGATION_BUDGET
    streak, ring = v.bench_streak, v.ring_spine
    last = v.bench[-1] if v.bench else 0.0
    settings = world.settings
    return (
        0.0,  # clock, steps, tokens: moving
        0.0,
        0.0,
        delegated if delegated < 1.0 else 1.0,
        seen,
        stale,
        0.0,  # refresh: moving
        *status,
        share if share < 1.0 else 1.0,
        0.0,  # scrape age: moving
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
        0.0,  # the last call rejected: moving
        1.0 if v.consensus is not None else 0.0,
        *workers,
        settings.level / 3,
        settings.difficulty_multiplier / 2,
        *files,
    )
