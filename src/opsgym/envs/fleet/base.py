"""What the fleet's tools share: its state, its dynamics and its bookkeeping.

:class:`FleetBase` is the world below its tools. The tools live in two mixins over it
(``diagnose.py``: reads; ``act.py``: remediation, coordination, destructive and terminal
calls), which :class:`~opsgym.envs.fleet.world.Fleet` composes; neither imports the world back.
It holds the job's true status, the fabric and the job's capacity, the telemetry scrape
schedule, milestones and damage, and the lies its reports tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import Scenario
from opsgym.core.world import World
from opsgym.envs.fleet.domain import (
    DELEGATION_BUDGET,
    GPUS_PER_NODE,
    N_NODES,
    N_SPINES,
    SPARE_OF_LEAF,
    WINDOW_MINUTES,
    node_of,
)
from opsgym.envs.fleet.scenarios import LEVELS, Settings, derived, draw, force, subgoals
from opsgym.envs.fleet.state import Truth, View, fabric_factor
from opsgym.envs.fleet.telemetry import Inventory, benign_xids

LOST_AT_MINUTE = -3.0
"""When a lost GPU fell off the bus, in minutes before the incident was opened."""
ANY = "*"
"""A lie's read key that matches the read on any node or rank (:class:`Claim`)."""


@dataclass(frozen=True, slots=True)
class Claim:
    """What one misleading report said, as much as settling it needs (the manual's "Lies").

    ``reads`` are the deep reads that show the truth of it, ``(tool, node | rank | file | ANY
    | None)``; ``aims`` are the calls premised on it, ``(tool, key)``, each trusting it only
    if, when made, it is wrong by the truth. What it is about, and whether the agent already
    held one of the ``reads`` when it was told, the ledger keeps (:mod:`opsgym.core.lies`).
    """

    kind: str
    reads: tuple[tuple[str, Any], ...]
    aims: tuple[tuple[str, Any], ...]


class FleetBase(World):
    """Four HGX nodes of eight GPUs on two leaves and two spines, a spare node per leaf, one
    training job, and the faults of the scenario: the state and helpers the tools share.
    """

    deadline: float  # set in __init__ (the window of every level)

    def __init__(
        self,
        scenario: Scenario,
        rng: np.random.Generator,
        rewards: RewardLedger,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ):
        super().__init__(scenario, rng, rewards, overrides, config)
        self.settings = Settings.parse(self.config, "fleet")
        self.level = LEVELS[self.settings.level].scaled(self.settings.difficulty_multiplier)
        self.params = params = scenario.params
        self.deadline = WINDOW_MINUTES
        self.budget = int(params["max_steps"])
        self.harsh = bool(params["harsh"])
        self.allowance = self.settings.token_allowance
        facts = force(draw(scenario, self.level, rng), self.overrides)
        present = tuple(f for f in scenario.faults if facts[f"{f}_present"])
        facts.update(derived(facts, present))
        self.facts = facts
        self.present = present
        self._present_list = list(present)  # shared by every truth snapshot, never changed
        self.inv = inv = Inventory.draw(rng)
        self._benign = benign_xids(self.level, rng)
        t = self.t = Truth(seq=inv.seq0)
        t.oom = list(facts["oom_ranks"])
        self._xids: list[tuple[int, int, float]] = []
        if "gpu_lost" in present:
            lost = facts["lost_rank"]
            t.lost = [lost]
            self._xids.append((node_of(lost), lost % GPUS_PER_NODE, LOST_AT_MINUTE))
        t.ring_aware = not scenario.has("congestion")  # its tasks launch an interleaved ring
        t.congested = "congestion" in present
        t.fabric = fabric_factor(t, facts["congested_spine"], facts["bw_drop"])
        t.desync = "desync" in present
        if "version" in present:
            t.version_nodes = [facts["version_node"]]
        t.subgoals = dict.fromkeys(subgoals(scenario, present), False)
        self.view = View(
            level=self.level,
            gated=bool(params["gated"]),
            coordination=self.settings.coordination,
            hosts=list(inv.hosts[:N_NODES]),
            spares=[inv.hosts[m] for m in SPARE_OF_LEAF],
            allowance=self.allowance,
        )
        self._job_start = list(inv.job_start_uptime)
        self._lost_slots: list[int] = []
        self._init_lines: dict[tuple[Any, ...], Any] = {}
        self._dumps: dict[tuple[Any, ...], Any] = {}
        self._started: dict[int, tuple[int, str]] = {}  # rank -> (seq, op) its last dump waits in
        self._dmesg: dict[tuple[Any, ...], Any] = {}
        self._surface: dict[str, Any] = {}
        self._rendered: dict[str, Any] | None = None
        self._seen_tokens = 0
        self._charged = 0
        self._log_charged = 0.0  # log(max(_charged, 1)), kept rather than recomputed
        self._call = 0

    # -- the truth ----------------------------------------------------------------------

    def _fabric(self) -> float:
        return self.t.fabric

    def _capacity(self) -> float:
        """Share of the job's nodes in service (a drained node not yet replaced is lost)."""
        return 1.0 - len(self.t.drained) / N_NODES

    def _spread(self) -> float:
        """Share of communicators the truncation errors have reached."""
        if not self.t.version_nodes:
            return 0.0
        return min(1.0, self.clock / self.facts["spread_minutes"])

    def _active(self, fault: str) -> bool:
        t = self.t
        if fault == "oom":
            return bool(t.oom)
        if fault == "gpu_lost":
            return bool(t.lost)
        if fault == "congestion":
            return self._fabric() < 1.0
        if fault == "version":
            return bool(t.version_nodes)
        return t.desync

    def _hung(self) -> bool:
        """Whether the desync has manifested: the job must run to reach the branch."""
        t = self.t
        if not t.desync or t.oom or t.lost or t.destroyed:
            return False
        if t.quiet_until is not None and self.clock < t.quiet_until:
            return False
        faults = self.scenario.faults
        before = faults[: faults.index("desync")]
        return not any(self._active(f) for f in before)

    def _status(self) -> str:
        # called several times a step: ``_fabric`` and ``_spread`` inlined, same values
        t = self.t
        if t.destroyed:
            return "failed"
        if t.oom or t.lost:
            return "stalled"
        if t.desync and self._hung():
            return "hung"
        if t.version_nodes:
            if min(1.0, self.clock / self.facts["spread_minutes"]) >= 1.0:
                return "stalled"
            return "degraded"
        if t.fabric < 1.0 or t.drained:
            return "degraded"
        return "running"

    def _throughput(self, status: str | None = None) -> float:
        status = status or self._status()
        if status == "running":
            return 1.0
        if status != "degraded":
            return 0.0
        t = self.t
        spread = min(1.0, self.clock / self.facts["spread_minutes"]) if t.version_nodes else 0.0
        return t.fabric * (1.0 - 0.5 * spread) * (1.0 - len(t.drained) / N_NODES)

    def _healthy(self) -> bool:
        """No fault, no root cause left, and the job at its nominal capacity."""
        t = self.t
        return not (
            t.destroyed
            or t.oom
            or t.lost
            or t.desync
            or t.version_nodes
            or t.drained
            or self._fabric() < 1.0
        )

    def _hot_spine(self) -> int | None:
        """The spine an alert would name: the congested one if it carries the ring, else an
        oversubscribed one; ``None`` when the fabric runs at full rate.
        """
        t = self.t
        if self._fabric() >= 1.0:
            return None
        spine = self.facts["congested_spine"]
        if t.congested and (t.ring_spine is None or t.ring_spine == spine):
            return spine
        return t.ring_spine if t.ring_spine is not None else spine

    def _capture(self) -> dict[str, Any]:
        """What the dashboard's next scrape will show (rendered when someone looks)."""
        t = self.t
        status = self._status()
        return {
            "call": self._call,
            "clock": self.clock,
            "status": status,
            "healthy": self._healthy(),
            "factor": self._throughput(status),
            "oom": list(t.oom),
            "lost": list(t.lost),
            "version_nodes": list(t.version_nodes),
            "spread": self._spread(),
            "hot_spine": self._hot_spine(),
            "drained": list(t.drained),
            "hosts": list(self.view.hosts),
            "decoy_rank": self.facts["decoy_rank"] if self.harsh else None,
        }

    def _state(self) -> dict[str, Any]:
        """The state summary the deep diagnostics render from (a copy of its keys with each
        value set: cheaper than a literal of 25 keys).
        """
        t, f, harsh = self.t, self.facts, self.harsh
        s = _STATE.copy()
        s["status"] = self._status()
        s["seq"] = t.seq
        s["clock"] = self.clock
        s["oom"] = t.oom
        s["lost"] = t.lost
        s["hung"] = self._hung()
        s["desync"] = t.desync
        s["desync_rank"] = f["desync_rank"]
        s["desync_file"] = f["desync_file"]
        s["decoy_file"] = f["decoy_file"]
        s["desync_op"] = f["desync_op"]
        s["version_nodes"] = t.version_nodes
        s["spread"] = self._spread()
        s["stalled_by_rank"] = bool(t.oom or t.lost)
        s["ring_aware"] = t.ring_aware
        s["ring_spine"] = t.ring_spine
        s["hot_spine"] = self._hot_spine()
        s["decoy_rank"] = f["decoy_rank"] if harsh else None
        s["stale_xid"] = (f["stale_xid_node"], f["stale_xid_gpu"]) if harsh else None
        s["xids"] = self._xids
        s["benign"] = self._benign
        s["dmesg_wrapped"] = f["dmesg_wrapped"]
        s["hosts"] = self.view.hosts
        s["slots"] = t.slots
        s["job_start"] = self._job_start
        return s

    # -- bookkeeping shared by the tools ----------------------------------------------

    def _draw(self, n: int | None = None) -> Any:
        """``n`` uniform draws as a list of floats (one float when ``n`` is None)."""
        return self.rng.random() if n is None else self.rng.random(n).tolist()

    def _reach(self, name: str) -> None:
        """Mark a sub-goal reached (once) and credit its share (settled: paid at the end)."""
        goals = self.t.subgoals
        if name in goals and not goals[name]:
            goals[name] = True
            self.rewards.add("subgoal", 1.0 / len(goals))

    def _remediated(self, topology: bool = False) -> None:
        self.view.last_remediation = self._call
        if topology:
            v = self.view
            v.last_topology_change, v.bench, v.bench_streak = self._call, [], 0

    def _damage(self, what: str) -> None:
        """A destructive action: it costs (settled), and in a harsh task it is irreversible."""
        self.t.destructive += 1
        self.rewards.add("destructive")
        if self.harsh:
            self._destroy(f"{what}: irreversible in this task")

    def _destroy(self, why: str) -> None:
        self.t.destroyed = why
        self.ended = why

    def _fixed(self) -> None:
        """A fault was truly fixed; the first fix may let a secondary OOM strike."""
        t = self.t
        if t.secondary_struck or not self.facts["secondary"]:
            return
        t.secondary_struck = True
        rank = self.facts["secondary_rank"]
        if node_of(rank) not in t.drained and rank not in t.oom:
            t.oom.append(rank)

    def _restart(self, ranks: list[int], targeted: bool = False) -> list[int]:
        """Restart ``ranks`` from the last checkpoint; return the ones that were out of memory.

        A rank on a GPU that fell off the bus fails again at once. Only a ``targeted`` restart
        (of the rank itself) earns the OOM sub-goal; a job restart cures it by accident.
        """
        t = self.t
        cured = [r for r in ranks if r in t.oom]
        if cured:
            t.oom = [r for r in t.oom if r not in cured]
            primary = self.facts["oom_ranks"]
            if targeted and any(r in primary for r in cured):
                if not any(r in t.oom for r in primary):
                    self._reach("oom_fixed")
            self._fixed()
        return cured

    def _retopologise(self, aware: bool | None = None, spine: int | None = None) -> bool:
        """Change the ring; return whether that fixed the fabric."""
        t = self.t
        before = self._fabric()
        if aware is not None:
            t.ring_aware = aware
        if spine is not None:
            t.ring_spine = spine
        t.fabric = fabric_factor(t, self.facts["congested_spine"], self.facts["bw_drop"])
        self._remediated(topology=True)
        if before < 1.0 <= self._fabric():
            self._reach("congestion_fixed")
            self._fixed()
            return True
        return False

    def _fix_path(self, node: int) -> bool:
        """Pin a node's LD_LIBRARY_PATH to NCCL 2.27.0 and restart its ranks."""
        t = self.t
        self._restart(list(range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)))
        if node in t.version_nodes:
            t.version_nodes.remove(node)
            self._reach("version_fixed")
            self._fixed()
            return True
        self._damage(f"restarted the healthy ranks of {self.view.hosts[node]}")
        return False

    def _patch(self, file: str) -> bool:
        """Ship a patch to ``file`` and restart every rank on it; return whether it fixed it."""
        t = self.t
        self._restart(list(range(N_NODES * GPUS_PER_NODE)))
        if t.desync and file == self.facts["desync_file"]:
            t.desync, t.quiet_until = False, None
            self._reach("desync_patched")
            self._fixed()
            return True
        return False

    def _delegated(self) -> None:
        t = self.t
        t.delegations += 1
        self.view.delegations += 1
        if t.delegations > DELEGATION_BUDGET:
            t.over_budget += 1
            self.rewards.add("over_budget")

    # -- lies: reports that misled (hidden; see the manual's "Lies") ---------------------

    def _tell(
        self,
        kind: str,
        about: tuple[Any, ...],
        reads: tuple[tuple[str, Any], ...],
        aims: tuple[tuple[str, Any], ...],
        detail: str,
    ) -> None:
        """Mark the report being made now as a lie (a :class:`Claim`) about ``about``: told
        once while open, and known when the agent holds a current read that reconciles it.
        """
        claim = Claim(kind, reads, aims)
        self.lies.tell(
            kind,
            reconciled_by=partial(self._reconciles, claim),
            trusted_by=partial(self._trusts, claim),
            detail=detail,
            about=about,
            known=any(self._holds(tool, key) for tool, key in reads),
        )

    def _holds(self, tool: str, key: Any) -> bool:
        """Whether the agent holds a current read ``(tool, key)``: one gathered after the last
        change that could make it out of date.
        """
        v = self.view
        if tool == "show_topology":
            return v.topology is not None and v.topology["call"] > v.last_topology_change
        if tool == "benchmark_allreduce":
            return bool(v.bench)  # emptied at every topology change
        if tool == "patch_diff":
            return key in v.diffs
        held = {
            "query_nccl_logs": v.nccl,
            "read_kernel_log": v.kernel,
            "check_nccl_version": v.versions,
            "inspect_flight_recorder": v.flight,
        }.get(tool)
        if held is None or key == ANY:
            return False
        read = held.get(key)
        return read is not None and read["call"] > v.last_remediation

    def _reconciles(self, claim: Claim, tool: str, args: Any) -> bool:
        """A deep read of what the claim is about."""
        for name, key in claim.reads:
            if name != tool:
                continue
            if key is None or key == ANY:
                return True
            if key == "fresh":  # a dashboard read that takes a new scrape
                if self.view.calls % self.level.refresh == 0:
                    return True
            elif key == getattr(args, _ARG[tool]):
                return True
        return False

    def _trusts(self, claim: Claim, tool: str, args: Any) -> bool:
        """A call premised on the claim that is wrong by the truth as it is made."""
        return any(name == tool and self._aimed(tool, key, args) for name, key in claim.aims)

    def _aimed(self, tool: str, key: Any, args: Any) -> bool:
        t = self.t
        if tool == "restart_rank":
            return args.rank == key and self._rank_healthy(key)
        if tool == "drain_node":
            return args.node == key and not self._node_lost(key)
        if tool == "fix_library_path":
            return args.node == key and key not in t.version_nodes
        if tool == "reroute_ring":
            return args.spine == key and self._bad_pin(key)
        if tool == "patch_apply":
            return args.file == key and key != self.facts["desync_file"]
        if tool == "coalition":
            action, worker, field, value = key
            if args.action != action:
                return False
            target = (self.view.findings.get(worker) or {}).get("target") or {}
            return target.get(field) == value and self._wrong(field, value)
        if tool == "declare_resolved":
            part, which = key
            if part == "node":
                return self._node_degraded(which)
            if part == "spine":
                return self._fabric() < 1.0
            return not self._healthy()
        return False

    def _wrong(self, field: str, value: Any) -> bool:
        """Whether acting on a worker's ``field`` = ``value`` is wrong by the truth now."""
        if field == "rank":
            return self._rank_healthy(value)
        if field == "node":
            return value not in self.t.version_nodes
        if field == "file":
            return value != self.facts["desync_file"]
        return self._bad_pin((value + 1) % N_SPINES)  # the coalition pins off the named spine

    def _rank_healthy(self, rank: int) -> bool:
        return rank not in self.t.oom and rank not in self.t.lost

    def _node_lost(self, node: int) -> bool:
        return any(r // GPUS_PER_NODE == node for r in self.t.lost)

    def _node_degraded(self, node: int) -> bool:
        t = self.t
        if node in t.drained:
            return False
        return node in t.version_nodes or any(r // GPUS_PER_NODE == node for r in t.oom + t.lost)

    def _bad_pin(self, spine: int) -> bool:
        """Whether pinning the ring to ``spine`` puts it on the congested one."""
        return self.t.congested and spine == self.facts["congested_spine"]


_STATE = dict.fromkeys(
    (
        "status",
        "seq",
        "clock",
        "oom",
        "lost",
        "hung",
        "desync",
        "desync_rank",
        "desync_file",
        "decoy_file",
        "desync_op",
        "version_nodes",
        "spread",
        "stalled_by_rank",
        "ring_aware",
        "ring_spine",
        "hot_spine",
        "decoy_rank",
        "stale_xid",
        "xids",
        "benign",
        "dmesg_wrapped",
        "hosts",
        "slots",
        "job_start",
    )
)
"""The keys of the state summary (``Fleet._state``), in order."""

_ARG = {
    "query_nccl_logs": "node",
    "read_kernel_log": "node",
    "check_nccl_version": "node",
    "inspect_flight_recorder": "rank",
    "patch_diff": "file",
}
"""The argument a deep read's key names."""
