"""Scripted reference policies for the fleet world. They read observations only, and never the
task: a policy meets the fault through what its tools report, as an operator would.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.envs.fleet.domain import BENCH_STREAK, GOOD_NCCL, N_NODES, N_RANKS, N_SPINES

Call = tuple[str, dict[str, Any]]
CHECK: Call = ("check_telemetry", {})
WAIT: Call = ("wait", {})
DECLARE: Call = ("declare_resolved", {})
BENCH: Call = ("benchmark_allreduce", {})


class Naive:
    """Acts on the first alert it sees, then declares the incident resolved. It never reads a
    log, never checks that a scrape is fresh, and never confirms its fix.
    """

    name = "naive"

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._acted = False

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        tele = obs["telemetry"]
        if tele is None:
            return CHECK
        if self._acted or not tele["alerts"]:
            return DECLARE
        self._acted = True
        alert = tele["alerts"][0]
        if alert["rank"] is not None:
            return "restart_rank", {"rank": alert["rank"]}
        if alert["source"].startswith("spine-"):
            spine = int(alert["source"].split("-")[1])
            return "reroute_ring", {"spine": (spine + 1) % N_SPINES}
        return "fix_library_path", {"node": obs["hosts"].index(alert["source"])}


def fresh(summary: dict[str, Any] | None, obs: dict[str, Any]) -> bool:
    """Whether a piece of evidence was gathered after the last remediation."""
    return summary is not None and summary["call"] > obs["actions"]["last_remediation_call"]


def node_order(obs: dict[str, Any]) -> list[int]:
    """Nodes in service to examine first: those the dashboard flags (silent or unreadable GPUs,
    critical alerts, degraded status).
    """
    tele = obs["telemetry"] or {"hot_gpus": [], "alerts": [], "nodes": []}
    score = [0] * N_NODES
    for gpu in tele["hot_gpus"]:
        score[gpu["rank"] // 8] += 4 if gpu["heartbeat_s"] >= 30 else 1
    hosts = obs["hosts"]
    for alert in tele["alerts"]:
        if alert["source"] in hosts:
            score[hosts.index(alert["source"])] += 2 if alert["severity"] == "critical" else 1
    for i, node in enumerate(tele["nodes"]):
        score[i] += node["status"] == "degraded"
    drained = set(obs["actions"]["drained"])
    return sorted((n for n in range(N_NODES) if n not in drained), key=lambda n: -score[n])


def _truncating(obs: dict[str, Any], logs_only: bool = False) -> bool:
    """Whether "Message truncated" warnings showed in the last scrape or a fresh log (a log
    shows none while a dead rank stalls the job, so there they also say that no rank died).
    """
    tele = obs["telemetry"] or {"alerts": []}
    if not logs_only and any("Message truncated" in a["message"] for a in tele["alerts"]):
        return True
    return any(
        fresh(log, obs) and log["truncation_warnings"] for log in obs["evidence"]["nccl"].values()
    )


def flagged(obs: dict[str, Any]) -> list[int]:
    """Nodes in service the dashboard flags strongly: a silent GPU or a critical alert."""
    tele = obs["telemetry"] or {"hot_gpus": [], "alerts": []}
    nodes = {g["rank"] // 8 for g in tele["hot_gpus"] if g["heartbeat_s"] >= 30}
    hosts = obs["hosts"]
    nodes |= {
        hosts.index(a["source"])
        for a in tele["alerts"]
        if a["severity"] == "critical" and a["source"] in hosts
    }
    drained = set(obs["actions"]["drained"])
    return [n for n in node_order(obs) if n in nodes and n not in drained]


class Oracle:
    """A careful operator who is never told the task. It reads the dashboard, waits for a scrape
    fresher than its last fix, and trusts only decisive evidence: a rank's log saying it died of
    a CUDA out-of-memory error (restart it); a CUDA failure confirmed by a current Xid 79 in
    the kernel log (drain the node, reschedule onto the spare); a spine whose counters show the
    congestion (re-form and pin the ring, then three benchmark samples); a library path that
    resolves the wrong NCCL (fixed through the specialists and a coalition when they can be
    consulted, checking each one's claim first); a collective mismatch between two flight
    recorders, then the staged patch. A gate it did not expect (a rejection) tells it what to
    confirm first. It declares only on a fresh scrape showing the job running.
    """

    name = "oracle"

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._hot_spine: int | None = None
        self._restarts: dict[int, int] = {}
        self._gate = False

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        call = self._decide(obs)
        if call[0] == "restart_rank":
            self._restarts[call[1]["rank"]] = obs["calls"]
        return call

    def _decide(self, obs: dict[str, Any]) -> Call:
        tele = obs["telemetry"]
        if tele is None:
            return CHECK
        last = obs.get("last") or {}
        if "fabric phase" in (last.get("rejected") or ""):
            self._gate = True  # the task gates the patch on a confirmed fabric: confirm it
        if self._gate and obs["phase"] < 3:
            return BENCH
        status = tele["job"]["status"]
        if tele["stale"]:
            call = self._pending(obs)
        elif status == "stalled":
            call = self._stalled(obs)
        elif status == "hung":
            call = self._congestion(obs, known_only=True) or self._desync(obs)
        elif status == "degraded":
            # truncation warnings spread until they stall the job: the version comes first
            first = (
                (self._version, self._congestion)
                if _truncating(obs)
                else (
                    self._congestion,
                    self._version,
                )
            )
            call = self._pending(obs) or first[0](obs) or first[1](obs)
        else:
            call = self._confirm(obs)
            if call is None:
                return DECLARE
        if call:
            return call
        return CHECK if obs["next_refresh_in"] == 0 else WAIT

    # -- work that needs no fresh scrape ------------------------------------------------------

    def _pending(self, obs: dict[str, Any]) -> Call | None:
        actions = obs["actions"]
        spares = {s["leaf"]: s["free"] for s in obs["spares"]}
        for node in actions["drained"]:
            if spares[node // 2]:
                return "reschedule", {"node": node}
        call = self._oom_restart(obs) or self._lost(obs)
        if call:
            return call
        if self._known_bad(obs):
            return self._version(obs)
        return self._congestion(obs, known_only=True)

    # -- a stalled job: a dead rank, a lost GPU, or the NCCL cascade at its worst -------------

    def _oom_ranks(self, obs: dict[str, Any]) -> list[int]:
        """Ranks whose log shows an out-of-memory death read after their last restart."""
        drained = set(obs["actions"]["drained"])
        found = []
        for node, log in obs["evidence"]["nccl"].items():
            if int(node) in drained:
                continue
            for rank in log["oom_errors"]:
                if log["call"] > self._restarts.get(rank, -1):
                    found.append(rank)
        return sorted(found)

    def _oom_restart(self, obs: dict[str, Any]) -> Call | None:
        ranks = self._oom_ranks(obs)
        return ("restart_rank", {"rank": ranks[0]}) if ranks else None

    def _lost(self, obs: dict[str, Any]) -> Call | None:
        """A CUDA failure in a rank's log: confirm the Xid 79 in the kernel log, then drain."""
        ev = obs["evidence"]
        drained = set(obs["actions"]["drained"])
        for node, log in ev["nccl"].items():
            n = int(node)
            if n in drained or not log["cuda_errors"]:
                continue
            kernel = ev["kernel"].get(node)
            if kernel is None or kernel["call"] < log["call"]:
                return "read_kernel_log", {"node": n}
            if set(log["cuda_errors"]) & set(kernel["current_xid79_ranks"]):
                return "drain_node", {"node": n}
        return None

    def _stalled(self, obs: dict[str, Any]) -> Call | None:
        nccl = obs["evidence"]["nccl"]
        unread = [n for n in node_order(obs) if not fresh(nccl.get(str(n)), obs)]
        for node in flagged(obs):
            if node in unread:
                return "query_nccl_logs", {"node": node}
        call = self._oom_restart(obs) or self._lost(obs)
        if call:
            return call
        if _truncating(obs, logs_only=True):  # no rank died: the NCCL cascade stalled the job
            return self._version(obs)
        if unread:
            return "query_nccl_logs", {"node": unread[0]}
        return self._version(obs)

    # -- the NCCL version ----------------------------------------------------------------------

    def _known_bad(self, obs: dict[str, Any]) -> list[int]:
        versions = obs["evidence"]["versions"]
        fixed = set(obs["actions"]["fixed_paths"]) | set(obs["actions"]["drained"])
        return [
            int(n) for n, s in versions.items() if s["version"] != GOOD_NCCL and int(n) not in fixed
        ]

    def _version(self, obs: dict[str, Any]) -> Call | None:
        bad = self._known_bad(obs)
        if bad:
            if obs["coordination"]["enabled"]:
                call = self._coordinate(obs, bad[0])
                if call:
                    return call
            return "fix_library_path", {"node": bad[0]}
        versions = obs["evidence"]["versions"]
        fixed = set(obs["actions"]["fixed_paths"]) | set(obs["actions"]["rescheduled"])
        for node in node_order(obs):
            if str(node) not in versions and node not in fixed:
                return "check_nccl_version", {"node": node}
        return None

    def _coordinate(self, obs: dict[str, Any], node: int) -> Call | None:
        """Fix the wrong NCCL through the specialists: consult, poll, check their claims, and
        let the version checker and the topology agent act together.
        """
        coord = obs["coordination"]
        found = coord["findings"]
        spare = coord["used"] < coord["budget"]
        for worker in ("version_checker", "topology_agent", "log_inspector"):
            if worker not in found:
                return ("delegate", {"worker": worker}) if spare else None
        if coord["consensus"] is None:
            return ("poll_consensus", {}) if spare else None
        target = found["version_checker"]["target"] or {}
        if target.get("node") != node:
            return ("delegate", {"worker": "version_checker"}) if spare else None
        blamed = (found["topology_agent"]["target"] or {}).get("spine")
        if blamed is not None:
            if obs["evidence"]["topology"] is None:
                return "show_topology", {}
            if blamed != self._spine(obs):
                return ("delegate", {"worker": "topology_agent"}) if spare else None
        return "coalition", {"action": "topology_version_fix"}

    # -- the fabric -----------------------------------------------------------------------------

    def _spine(self, obs: dict[str, Any]) -> int | None:
        """The congested spine, read once while the ring still spreads over both spines."""
        topo = obs["evidence"]["topology"]
        if self._hot_spine is None and topo is not None and topo["ring"]["route"] == "ecmp":
            ecn = [s["ecn_marked_packets_per_s"] for s in topo["spines"]]
            if max(ecn) > 10000:
                self._hot_spine = ecn.index(max(ecn))
        return self._hot_spine

    def _congestion(self, obs: dict[str, Any], known_only: bool = False) -> Call | None:
        if obs["evidence"]["topology"] is None:
            return None if known_only else ("show_topology", {})
        hot = self._spine(obs)
        if hot is None or obs["phase"] < 2:
            return None
        ring = obs["actions"]["ring"]
        if not ring["reordered"]:
            return "reorder_ring", {}
        if ring["spine"] != (hot + 1) % N_SPINES:
            return "reroute_ring", {"spine": (hot + 1) % N_SPINES}
        if obs["evidence"]["benchmark"]["streak"] < BENCH_STREAK:
            return BENCH
        return None

    def _confirm(self, obs: dict[str, Any]) -> Call | None:
        """Before declaring: a ring this policy changed must hold three samples since the last
        topology change (a drain or a reschedule re-forms the ring too).
        """
        ring = obs["actions"]["ring"]
        changed = ring["reordered"] or ring["spine"] is not None
        if changed and obs["evidence"]["benchmark"]["streak"] < BENCH_STREAK:
            return BENCH
        return None

    # -- the desync --------------------------------------------------------------------------

    def _desync(self, obs: dict[str, Any]) -> Call | None:
        ev, patch = obs["evidence"], obs["patch"]
        if patch["applied"]:
            return None
        if not ev["collective_mismatch"]:
            nccl = {int(n): s for n, s in ev["nccl"].items() if fresh(s, obs)}
            odd = sorted(
                int(r)
                for s in nccl.values()
                for r, op in s["watchdog_ops"].items()
                if op != "ALLREDUCE"
            )
            if not odd:
                for node in node_order(obs):
                    if node not in nccl:
                        return "query_nccl_logs", {"node": node}
                return None
            suspect = odd[0]
            drained = set(obs["actions"]["drained"])
            reference = next(r for r in range(N_RANKS) if r != suspect and r // 8 not in drained)
            for rank in (suspect, reference):
                if not fresh(ev["flight_recorder"].get(str(rank)), obs):
                    return "inspect_flight_recorder", {"rank": rank}
            return None
        if patch["candidates"] is None:
            return "patch_identify", {}
        for file in patch["candidates"]:
            if file not in patch["diffs"]:
                return "patch_diff", {"file": file}
            if patch["diffs"][file]:
                return "patch_apply", {"file": file}
        return None


POLICIES = {"naive": Naive, "oracle": Oracle}
