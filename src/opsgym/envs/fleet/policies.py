"""Scripted reference policies for the fleet world. They read observations only."""

from __future__ import annotations

from typing import Any

from opsgym.envs.fleet.tasks import BENCH_STREAK, GOOD_NCCL, N_NODES, N_RANKS, N_SPINES

Call = tuple[str, dict[str, Any]]
CHECK: Call = ("check_telemetry", {})
WAIT: Call = ("wait", {})
DECLARE: Call = ("declare_resolved", {})


class Naive:
    """Acts on the first alert it sees, then declares the incident resolved. It never reads a
    log, never checks that a scrape is fresh, and never confirms its fix.
    """

    name = "naive"

    def reset(self, seed: int | None = None) -> None:
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


def _fresh(summary: dict[str, Any] | None, obs: dict[str, Any]) -> bool:
    """Whether a piece of evidence was gathered after the last remediation."""
    return summary is not None and summary["call"] > obs["actions"]["last_remediation_call"]


def _node_order(obs: dict[str, Any]) -> list[int]:
    """Nodes to examine first: those the dashboard flags (silent GPUs, alerts, degraded)."""
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


class Oracle:
    """A careful operator. It reads the dashboard, waits for a scrape fresher than its last
    fix, and trusts only decisive evidence: a current XID 79 confirmed by a flight recorder
    that is behind its peers; a spine whose counters show the congestion; a library path that
    resolves the wrong NCCL; a collective mismatch between two flight recorders, then the staged
    patch. In the coordination task it delegates, polls a consensus, checks each specialist's
    claim and asks again when one is wrong, then lets a coalition fix both faults. It declares
    only on a fresh scrape showing the job running, after a fabric fix has held three samples.
    """

    name = "oracle"

    def reset(self, seed: int | None = None) -> None:
        """Start over."""
        self._hot_spine: int | None = None

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        tele = obs["telemetry"]
        if tele is None:
            return CHECK
        if obs["task"] == "fleet_coordination":
            call = self._coordinate(obs)
            if call:
                return call
        status = tele["job"]["status"]
        if tele["stale"]:
            call = self._version(obs) or self._congestion(obs)
            if call:
                return call
            return CHECK if obs["next_refresh_in"] == 0 else WAIT
        if status == "stalled":
            call = (
                self._oom(obs)
                or self._sweep(obs, silent_only=True)
                or self._version(obs)
                or self._sweep(obs)
            )
        elif status == "hung":
            call = self._congestion(obs) or self._desync(obs)
        else:
            call = self._version(obs) or self._congestion(obs)
        if call:
            return call
        if status == "running":
            return DECLARE
        return CHECK if obs["next_refresh_in"] == 0 else WAIT

    # -- faults ----------------------------------------------------------------------------

    def _oom(self, obs: dict[str, Any]) -> Call | None:
        ev = obs["evidence"]
        kernel = {int(n): s for n, s in ev["kernel"].items() if _fresh(s, obs)}
        for rank in sorted({r for s in kernel.values() for r in s["current_xid79_ranks"]}):
            dump = ev["flight_recorder"].get(str(rank))
            if not _fresh(dump, obs):
                return "inspect_flight_recorder", {"rank": rank}
            if dump["behind"]:
                return "restart_rank", {"rank": rank}
        for node in _node_order(obs):
            if node not in kernel:
                return "read_kernel_log", {"node": node}
        return None

    def _sweep(self, obs: dict[str, Any], silent_only: bool = False) -> Call | None:
        """No current XID anywhere: find the rank behind its peers, silent GPUs first."""
        ev = obs["evidence"]
        for rank, dump in ev["flight_recorder"].items():
            if _fresh(dump, obs) and dump["behind"]:
                return "restart_rank", {"rank": int(rank)}
        hot = sorted(obs["telemetry"]["hot_gpus"], key=lambda g: (-g["heartbeat_s"], g["rank"]))
        order = [g["rank"] for g in hot if g["heartbeat_s"] >= 30]
        if not silent_only:
            order += [n * 8 + g for n in _node_order(obs) for g in range(8)]
        for rank in order:
            if not _fresh(ev["flight_recorder"].get(str(rank)), obs):
                return "inspect_flight_recorder", {"rank": rank}
        return None

    def _version(self, obs: dict[str, Any]) -> Call | None:
        if "version" not in obs["faults"]:
            return None
        versions = obs["evidence"]["versions"]
        fixed = obs["actions"]["fixed_paths"]
        bad = [int(n) for n, s in versions.items() if s["version"] != GOOD_NCCL]
        for node in bad:
            if node not in fixed:
                return "fix_library_path", {"node": node}
        if bad:
            return None
        for node in _node_order(obs):
            if str(node) not in versions:
                return "check_nccl_version", {"node": node}
        return None

    def _spine(self, obs: dict[str, Any]) -> int | None:
        """The congested spine, read once while the ring still spreads over both spines."""
        topo = obs["evidence"]["topology"]
        if self._hot_spine is None and topo is not None and topo["ring"]["route"] == "ecmp":
            ecn = [s["ecn_marked_packets_per_s"] for s in topo["spines"]]
            if max(ecn) > 10000:
                self._hot_spine = ecn.index(max(ecn))
        return self._hot_spine

    def _congestion(self, obs: dict[str, Any]) -> Call | None:
        if "congestion" not in obs["faults"]:
            return None
        if obs["phase"] is not None and obs["phase"] < 2:
            return None
        if obs["evidence"]["topology"] is None:
            return "show_topology", {}
        hot = self._spine(obs)
        if hot is None:
            return None
        ring = obs["actions"]["ring"]
        if not ring["reordered"]:
            return "reorder_ring", {}
        if ring["spine"] != (hot + 1) % N_SPINES:
            return "reroute_ring", {"spine": (hot + 1) % N_SPINES}
        if obs["evidence"]["benchmark"]["streak"] < BENCH_STREAK:
            return "benchmark_allreduce", {}
        return None

    def _desync(self, obs: dict[str, Any]) -> Call | None:
        ev, patch = obs["evidence"], obs["patch"]
        if patch["applied"]:
            return None
        if not ev["collective_mismatch"]:
            nccl = {int(n): s for n, s in ev["nccl"].items() if _fresh(s, obs)}
            odd = sorted(
                int(r)
                for s in nccl.values()
                for r, op in s["watchdog_ops"].items()
                if op != "ALLREDUCE"
            )
            if not odd:
                for node in _node_order(obs):
                    if node not in nccl:
                        return "query_nccl_logs", {"node": node}
                return None
            suspect = odd[0]
            drained = set(obs["actions"]["drained"])
            reference = next(r for r in range(N_RANKS) if r != suspect and r // 8 not in drained)
            for rank in (suspect, reference):
                if not _fresh(ev["flight_recorder"].get(str(rank)), obs):
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

    # -- coordination ----------------------------------------------------------------------

    def _coordinate(self, obs: dict[str, Any]) -> Call | None:
        coord = obs["coordination"]
        if not coord["enabled"] or obs["actions"]["fixed_paths"]:
            return None
        found = coord["findings"]
        for worker in ("version_checker", "topology_agent", "log_inspector"):
            if worker not in found:
                return "delegate", {"worker": worker}
        if coord["consensus"] is None:
            return "poll_consensus", {}
        spare = coord["used"] < coord["budget"]
        target = found["version_checker"]["target"] or {}
        versions = obs["evidence"]["versions"]
        if "node" in target:
            checked = versions.get(str(target["node"]))
            if checked is None:
                return "check_nccl_version", {"node": target["node"]}
            if checked["version"] == GOOD_NCCL and spare:
                return "delegate", {"worker": "version_checker"}
        if obs["evidence"]["topology"] is None:
            return "show_topology", {}
        hot = self._spine(obs)
        blamed = (found["topology_agent"]["target"] or {}).get("spine")
        if hot is not None and blamed != hot and spare:
            return "delegate", {"worker": "topology_agent"}
        return "coalition", {"action": "topology_version_fix"}


POLICIES = {"naive": Naive, "oracle": Oracle}
