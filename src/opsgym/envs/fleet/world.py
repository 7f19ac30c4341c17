"""The GPU training-fleet world: dynamics, truth, the agent's view, and its 22 tools.

The tools live in two mixins (``diagnose.py``: reads; ``act.py``: remediation, coordination,
destructive and terminal calls); this module holds what they share: the job's true status, the
fabric, time and the downtime it costs, the telemetry scrape schedule, milestones and damage.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import Scenario
from opsgym.core.tools import Args, Tool
from opsgym.core.world import World
from opsgym.envs.fleet.act import Actions
from opsgym.envs.fleet.diagnose import Diagnostics
from opsgym.envs.fleet.state import Truth, View, fabric_factor
from opsgym.envs.fleet.tasks import (
    BENCH_TARGET,
    DELEGATION_BUDGET,
    GPUS_PER_NODE,
    LEVELS,
    N_NODES,
    Settings,
    derived,
    draw,
    force,
    node_of,
    subgoals,
)
from opsgym.envs.fleet.telemetry import Inventory

SEQ_PER_MINUTE = 40
"""Collectives the job completes per minute while it runs."""


class Fleet(Actions, Diagnostics, World):
    """Four HGX nodes of eight GPUs on two leaves and two spines, one training job, and the
    faults of the scenario.
    """

    tokens_per_call = 30

    def __init__(
        self,
        scenario: Scenario,
        rng: np.random.Generator,
        rewards: RewardLedger,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ):
        super().__init__(scenario, rng, rewards, overrides, config)
        self.settings = Settings.parse(self.config)
        self.level = LEVELS[self.settings.level]
        self.params = scenario.params
        self.deadline = float(self.params["window"])
        self.harsh = bool(self.params["harsh"])
        self.allowance = self.settings.token_allowance or int(self.params["allowance"])
        facts = force(draw(scenario, self.level, rng), self.overrides)
        facts.update(derived(facts))
        self.facts = facts
        self.inv = Inventory.draw(rng)
        t = self.t = Truth(seq=self.inv.seq0)
        has = scenario.has
        self._xid79: list[list[Any]] = []
        if has("oom"):
            t.oom = [facts["oom_rank"]]
            self._xid79.append([facts["oom_rank"], 0.0])
        if has("congestion"):
            t.congested, t.ring_aware = True, False
        t.fabric = fabric_factor(t, facts["congested_spine"], facts["bw_drop"])
        t.desync = has("desync")
        if has("version"):
            t.version_nodes = [facts["version_node"]]
        t.subgoals = dict.fromkeys(subgoals(scenario), False)
        self.view = View(
            task=scenario.name,
            faults=scenario.faults,
            level=self.level,
            gated=bool(self.params["gated"]),
            coordination=self.settings.coordination,
            hosts=self.inv.hosts,
            allowance=self.allowance,
        )
        self._restarted_at: dict[int, float] = {}
        self._surface: dict[str, Any] = {}
        self._rendered: dict[str, Any] | None = None
        self._tokens_paid = 0
        self._call = 0

    # -- the step ---------------------------------------------------------------------

    def apply(self, tool: Tool, args: Args) -> dict[str, Any]:
        """Scrape the surface when a refresh is due, run the call, let its minutes pass, and
        charge the tokens spent since the last accepted call (``-0.10 x d log(tokens)``).
        """
        self._call = call = self.view.calls
        if call % self.level.refresh == 0:
            self._surface = self._capture()
            self._rendered = None
        report = super().apply(tool, args)
        self.view.calls = call + 1
        spent = self.tokens
        self.rewards.add("tokens", math.log(max(spent, 1)) - math.log(max(self._tokens_paid, 1)))
        self._tokens_paid = self.view.tokens = spent
        return report

    def advance(self, minutes: float) -> None:
        """Let time pass: the job makes progress or loses it, and downtime costs money."""
        if minutes:
            t = self.t
            lost = minutes * (1.0 - self._throughput())
            t.downtime_minutes += lost
            t.downtime_cost += lost * self.settings.downtime_cost_per_minute
            if self._status() in ("running", "degraded"):
                t.seq += int(minutes * SEQ_PER_MINUTE)
        super().advance(minutes)

    # -- the truth ----------------------------------------------------------------------

    def _fabric(self) -> float:
        return self.t.fabric

    def _spread(self) -> float:
        """Share of communicators the truncation errors have reached."""
        if not self.t.version_nodes:
            return 0.0
        return min(1.0, self.clock / self.facts["spread_minutes"])

    def _active(self, fault: str) -> bool:
        t = self.t
        if fault == "oom":
            return bool(t.oom)
        if fault == "congestion":
            return self._fabric() < 1.0
        if fault == "version":
            return bool(t.version_nodes)
        return t.desync

    def _hung(self) -> bool:
        """Whether the desync has manifested: the job must run to reach the branch."""
        t = self.t
        if not t.desync or t.oom or t.destroyed:
            return False
        if t.quiet_until is not None and self.clock < t.quiet_until:
            return False
        faults = self.scenario.faults
        before = faults[: faults.index("desync")] if "desync" in faults else ()
        return not any(self._active(f) for f in before)

    def _status(self) -> str:
        t = self.t
        if t.destroyed:
            return "failed"
        if t.oom:
            return "stalled"
        if self._hung():
            return "hung"
        if t.version_nodes and self._spread() >= 1.0:
            return "stalled"
        if t.version_nodes or self._fabric() < 1.0:
            return "degraded"
        return "running"

    def _throughput(self) -> float:
        if self._status() in ("stalled", "hung", "failed"):
            return 0.0
        capacity = 1.0 - len(self.t.drained) / N_NODES
        return self._fabric() * (1.0 - 0.5 * self._spread()) * capacity

    def _healthy(self) -> bool:
        t = self.t
        return not (t.destroyed or t.oom or t.desync or t.version_nodes or self._fabric() < 1.0)

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
        return {
            "call": self._call,
            "clock": self.clock,
            "status": self._status(),
            "healthy": self._healthy(),
            "factor": self._throughput(),
            "oom": list(t.oom),
            "version_nodes": list(t.version_nodes),
            "spread": self._spread(),
            "hot_spine": self._hot_spine(),
            "drained": list(t.drained),
            "decoy_rank": self.facts["decoy_rank"] if self.harsh else None,
        }

    def _state(self) -> dict[str, Any]:
        """The state summary the deep diagnostics render from."""
        t, f = self.t, self.facts
        return {
            "status": self._status(),
            "seq": t.seq,
            "seq0": self.inv.seq0,
            "clock": self.clock,
            "oom": list(t.oom),
            "hung": self._hung(),
            "desync": t.desync,
            "desync_rank": f["desync_rank"],
            "desync_file": f["desync_file"],
            "decoy_file": f["decoy_file"],
            "desync_op": f["desync_op"],
            "version_nodes": list(t.version_nodes),
            "spread": self._spread(),
            "stalled_by_oom": bool(t.oom),
            "ring_aware": t.ring_aware,
            "ring_spine": t.ring_spine,
            "hot_spine": self._hot_spine(),
            "decoy_rank": f["decoy_rank"] if self.harsh else None,
            "stale_xid": [f["stale_xid_node"], f["stale_xid_gpu"]] if self.harsh else None,
            "xid79": self._xid79,
            "restarted_at": self._restarted_at,
            "red_herring": self.level.red_herring,
            "dmesg_wrapped": f["dmesg_wrapped"],
        }

    # -- bookkeeping shared by the tools ----------------------------------------------

    def _draw(self, n: int | None = None) -> Any:
        """``n`` uniform draws as a list of floats (one float when ``n`` is None)."""
        return self.rng.random() if n is None else self.rng.random(n).tolist()

    def _reach(self, name: str) -> None:
        """Mark a sub-goal reached (once) and pay its share of the sub-goal credit."""
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
        """A destructive action: it costs, and in a harsh task it is irreversible."""
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
            self._xid79.append([rank, self.clock])

    def _restart(self, ranks: list[int]) -> list[int]:
        """Restart ``ranks`` from the last checkpoint; return the ones that were out of memory."""
        t = self.t
        cured = [r for r in ranks if r in t.oom]
        for rank in ranks:
            self._restarted_at[rank] = self.clock
        if cured:
            t.oom = [r for r in t.oom if r not in cured]
            if self.facts["oom_rank"] in cured and "oom" in self.scenario.faults:
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
        self._damage(f"restarted the healthy ranks of {self.inv.hosts[node]}")
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

    # -- views ---------------------------------------------------------------------------

    def observe(self) -> dict[str, Any]:
        """What the agent knows, from reports only."""
        v = self.view
        k = self.level.refresh
        scrape = None
        if v.scrape is not None:
            scrape = {
                "scrape": v.scrape["scrape"],
                "scraped_at_call": v.scrape_call,
                "job": dict(v.scrape["job"]),
                "alerts": [dict(a) for a in v.scrape["alerts"]],
                "hot_gpus": [dict(g) for g in v.scrape["hot_gpus"]],
                "nodes": [{"host": n["host"], "status": n["status"]} for n in v.scrape["nodes"]],
            }
            scrape["stale"] = v.stale()
            scrape["age_calls"] = v.calls - v.scrape_call
        findings = {w: dict(f) for w, f in v.findings.items()}
        return {
            "task": v.task,
            "faults": list(v.faults),
            "incident": self.scenario.description,
            "clock": self.clock,
            "minutes_left": self.deadline - self.clock,
            "calls": v.calls,
            "tokens": v.tokens,
            "token_allowance": v.allowance,
            "level": self.settings.level,
            "refresh_every": k,
            "next_refresh_in": -v.calls % k,
            "hosts": list(v.hosts),
            "phase": v.phase if v.gated else None,
            "telemetry": scrape,
            "evidence": {
                "flight_recorder": {str(r): dict(d) for r, d in v.flight.items()},
                "kernel": {str(n): dict(d) for n, d in v.kernel.items()},
                "nccl": {str(n): dict(d) for n, d in v.nccl.items()},
                "versions": {str(n): dict(d) for n, d in v.versions.items()},
                "topology": dict(v.topology) if v.topology else None,
                "benchmark": {
                    "samples": list(v.bench),
                    "streak": v.bench_streak,
                    "target": BENCH_TARGET,
                    "since_call": v.last_topology_change,
                },
                "collective_mismatch": v.mismatch,
            },
            "patch": {
                "candidates": list(v.candidates) if v.candidates is not None else None,
                "diffs": dict(v.diffs),
                "applied": v.patched,
            },
            "actions": {
                "restarted_ranks": list(v.restarted),
                "fixed_paths": list(v.fixed_paths),
                "drained": list(v.drained),
                "ring": {"reordered": v.ring_aware, "spine": v.ring_spine},
                "last_remediation_call": v.last_remediation,
            },
            "coordination": {
                "enabled": v.coordination,
                "budget": DELEGATION_BUDGET,
                "used": v.delegations,
                "findings": findings,
                "consensus": dict(v.consensus) if v.consensus else None,
            },
        }

    def truth(self) -> dict[str, Any]:
        """The hidden state, for the judge and the record."""
        t = self.t
        return {
            "task": self.scenario.name,
            "faults": list(self.scenario.faults),
            "status": self._status(),
            "healthy": self._healthy(),
            "throughput_factor": round(self._throughput(), 4),
            "fabric_factor": round(self._fabric(), 4),
            "oom": sorted(t.oom),
            "desync": t.desync,
            "version_nodes": sorted(t.version_nodes),
            "ring": {"aware": t.ring_aware, "spine": t.ring_spine},
            "drained": sorted(t.drained),
            "destructive": t.destructive,
            "destroyed": t.destroyed,
            "declared": t.declared,
            "tokens": self._tokens_paid,
            "token_allowance": self.allowance,
            "delegations": t.delegations,
            "over_budget": t.over_budget,
            "subgoals": dict(t.subgoals),
            "downtime_minutes": round(t.downtime_minutes, 3),
            "downtime_cost_usd": round(t.downtime_cost, 2),
            "slo_minutes": self.params["slo_minutes"],
            "telemetry": dict(t.scrapes),
            "facts": dict(self.facts),
        }
