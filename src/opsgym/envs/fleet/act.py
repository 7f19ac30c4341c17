"""The fleet's acting tools: remediation, the staged patch, coordination, destructive actions,
waiting and the declaration that ends the episode.

Reports of actions say what was done, never whether it worked: the agent learns that from its
diagnostics, as an operator would.
"""

from __future__ import annotations

from typing import Any

from opsgym.core.tools import NoArgs, tool
from opsgym.envs.fleet import state as st
from opsgym.envs.fleet.base import FleetBase
from opsgym.envs.fleet.domain import (
    COALITIONS,
    DELEGATION_BUDGET,
    GPUS_PER_NODE,
    LEAF_OF_NODE,
    N_NODES,
    N_RANKS,
    N_SPINES,
    SPARE_OF_LEAF,
    WORKERS,
)
from opsgym.envs.fleet.state import (
    CoalitionArgs,
    FileArgs,
    NodeArgs,
    RankArgs,
    SpineArgs,
    WorkerArgs,
    coalition_phase_open,
    coalition_ready,
    congestion_phase_closed,
    coordination_on,
    file_diverges,
    file_identified,
    mismatch_seen,
    node_drained,
    node_in_service,
    not_patched,
    oom_phase_closed,
    rank_implicated,
    rank_in_service,
    spare_available,
    topology_seen,
    version_checked,
)
from opsgym.envs.fleet.workers import DRAWS, answer, ballots, tally

WAIT_MINUTES = 5.0
_ACTS_ON = {(actor, kind): action for action, (actor, _, kind) in COALITIONS.items()}
_ACTS_ON["topology_agent", "spine"] = "topology_version_fix"
"""The coalition that acts on a worker's finding of a kind of target (the topology agent's
spine is what topology_version_fix pins the ring off)."""
_NOT = {"oom": "out of memory", "gpu_lost": "on a lost GPU", "desync": "the desynced rank"}


class Actions(FleetBase):
    """Mixin of the acting tools of :class:`~opsgym.envs.fleet.world.Fleet`."""

    # -- remediation ----------------------------------------------------------------------

    @tool(RankArgs, requires=(rank_in_service, rank_implicated), minutes=4.0)
    def restart_rank(self, args: RankArgs) -> dict[str, Any]:
        """Restart one rank's worker process; it rejoins the job from the last checkpoint.
        Restarting a healthy rank aborts its peers' collectives: destructive. A rank whose GPU
        fell off the bus fails again at once.
        """
        rank = args.rank
        self._remediated()
        self.view.restarted.append(rank)
        self.view.ranks[rank, st.R_RESTARTED] = 1.0
        healthy = rank not in self.t.oom and rank not in self.t.lost
        self._restart([rank], targeted=True)
        if healthy:
            self._damage(f"restarted healthy rank {rank}")
        return {
            "rank": rank,
            "host": self.view.hosts[rank // GPUS_PER_NODE],
            "gpu": rank % GPUS_PER_NODE,
            "status": "restarted",
            "message": "the worker was restarted and rejoins from the last checkpoint",
        }

    @tool(requires=(topology_seen, oom_phase_closed), minutes=3.0)
    def reorder_ring(self, args: NoArgs) -> dict[str, Any]:
        """Re-form the NCCL ring in topology order (leaf-contiguous), so it crosses the spines
        twice instead of at every hop.
        """
        self.view.ring_aware = True
        self._retopologise(aware=True)
        return {"ring": "topology-aware order", "leaf_crossings": 2}

    @tool(SpineArgs, requires=(topology_seen, oom_phase_closed), minutes=2.0)
    def reroute_ring(self, args: SpineArgs) -> dict[str, Any]:
        """Pin the ring's cross-leaf traffic to one spine (instead of ECMP over both)."""
        self.view.ring_spine = args.spine
        self._retopologise(spine=args.spine)
        return {"ring": f"cross-leaf traffic pinned to spine-{args.spine}"}

    @tool(NodeArgs, requires=(node_in_service, version_checked), minutes=5.0)
    def fix_library_path(self, args: NodeArgs) -> dict[str, Any]:
        """Pin one node's LD_LIBRARY_PATH to the NCCL 2.27.0 install and restart its eight
        ranks. On a node that was fine this only restarts healthy ranks: destructive.
        """
        node = args.node
        self._remediated()
        self.view.fixed_paths.append(node)
        self.view.nodes[node, st.N_FIXED] = 1.0
        self._fix_path(node)
        return {
            "node": node,
            "host": self.view.hosts[node],
            "LD_LIBRARY_PATH": "/opt/nccl-2.27.0/lib:/usr/local/cuda-12.4/lib64",
            "status": "ranks restarted",
        }

    # -- the staged patch: identify -> diff -> apply ----------------------------------------

    @tool(requires=(mismatch_seen, congestion_phase_closed), minutes=3.0)
    def patch_identify(self, args: NoArgs) -> dict[str, Any]:
        """Stage 1: compare the compiled graphs' hashes across ranks and list the source files
        whose graphs differ.
        """
        f = self.facts
        u = self._draw()
        candidates: list[str] = []
        ranks: list[int] = []
        if self.t.desync:
            pair = [f["desync_file"], f["decoy_file"]]
            candidates = pair if u < 0.5 else pair[::-1]
            ranks = [f["desync_rank"]]
            self._reach("desync_identified")
        self.view.candidates = candidates
        return {
            "compared_ranks": N_RANKS,
            "divergent_ranks": ranks,
            "candidates": candidates,
            "message": "graph hashes differ; diff the candidates"
            if candidates
            else "graph hashes are identical on every rank",
        }

    @tool(FileArgs, requires=(file_identified,), minutes=2.0)
    def patch_diff(self, args: FileArgs) -> dict[str, Any]:
        """Stage 2: diff one candidate file's compiled graph between a divergent rank and rank
        0, and say whether the collectives differ or only a guard recompiled.
        """
        f = self.facts
        divergent = self.t.desync and args.file == f["desync_file"]
        self.view.diffs[args.file] = divergent
        if divergent:
            self._reach("desync_diffed")
            op = f["desync_op"].split(":")[1]
            lines = [
                f"--- rank 0/{args.file} (graph 3)",
                f"+++ rank {f['desync_rank']}/{args.file} (graph 3)",
                "@@ -41,3 +41,5 @@",
                "-    all_reduce = torch.ops._c10d_functional.all_reduce(buf, 'sum', '0')",
                "+    if counts.max() > capacity:  # data-dependent branch, traced on this rank",
                f"+        out = torch.ops._c10d_functional.{op}(buf, 32, '0')",
            ]
        else:
            lines = [
                f"# {args.file}: guard failure on a dynamic shape recompiled graph 2; "
                "collective sequence identical on every rank"
            ]
        return {"file": args.file, "collectives_differ": divergent, "lines": lines}

    @tool(FileArgs, requires=(not_patched, file_diverges), minutes=8.0)
    def patch_apply(self, args: FileArgs) -> dict[str, Any]:
        """Stage 3: make the branch static in the diffed file, recompile, and restart every rank
        from the last checkpoint.
        """
        self._remediated()
        self.view.patched = args.file
        self._patch(args.file)
        return {"file": args.file, "status": "patched; ranks recompiled and restarted"}

    # -- coordination ------------------------------------------------------------------------

    @tool(WorkerArgs, requires=(coordination_on,), minutes=3.0)
    def delegate(self, args: WorkerArgs) -> dict[str, Any]:
        """Ask a specialist (log_inspector, patch_agent, topology_agent, version_checker) for a
        structured finding with confidence and uncertainty. Specialists are sometimes wrong.
        The budget is 10 delegations (a consensus poll counts as one); each one over costs.
        """
        v = self.view
        self._delegated()
        found, right = answer(
            args.worker,
            self._state(),
            self.facts["worker_error"],
            v.hosts,
            self._draw(DRAWS),
        )
        v.findings[args.worker] = found
        self._tell_finding("wrong_finding", found)
        self._note_finding(found)
        if len(v.findings) >= 2:
            self._reach("specialists_consulted")
        if right:
            self._credit_worker(args.worker, found)
        return {**found, "delegations_used": v.delegations, "budget": DELEGATION_BUDGET}

    @tool(requires=(coordination_on,), minutes=2.0)
    def poll_consensus(self, args: NoArgs) -> dict[str, Any]:
        """Poll every specialist for the action it recommends now; report the votes and the
        majority. Counts as one delegation.
        """
        v = self.view
        self._delegated()
        s, u = self._state(), self._draw(len(WORKERS) * DRAWS)
        heard = ballots(s, self.facts["worker_error"], v.hosts, u)
        result = tally(heard)  # ``consensus`` of the same answers, each worker asked once
        for found in heard:
            self._tell_finding("wrong_vote", found)
        v.consensus = result
        self._reach("consensus_polled")
        return {**result, "delegations_used": v.delegations, "budget": DELEGATION_BUDGET}

    @tool(
        CoalitionArgs,
        requires=(coordination_on, coalition_ready, coalition_phase_open),
        minutes=8.0,
    )
    def coalition(self, args: CoalitionArgs) -> dict[str, Any]:
        """Let two workers act together on their latest findings (see the action's
        description). The coalition trusts its workers: a wrong finding means a wrong fix.
        """
        v = self.view
        actor, partner, _ = COALITIONS[args.action]
        target = v.findings[actor]["target"]
        fixed = False
        done: dict[str, Any] = {"action": args.action, "workers": [actor, partner]}
        self._remediated()
        if args.action == "rank_recovery":
            rank = target["rank"]
            v.restarted.append(rank)
            v.ranks[rank, st.R_RESTARTED] = 1.0
            healthy = rank not in self.t.oom and rank not in self.t.lost
            fixed = bool(self._restart([rank], targeted=True))
            if healthy:
                self._damage(f"the coalition restarted healthy rank {rank}")
            done["restarted_rank"] = rank
        elif args.action == "desync_patch":
            v.patched = target["file"]
            fixed = self._patch(target["file"])
            if not fixed:
                self._damage(f"the coalition patched {target['file']}, which fixed nothing")
            done["patched"] = target["file"]
        else:
            node = target["node"]
            v.fixed_paths.append(node)
            v.nodes[node, st.N_FIXED] = 1.0
            fixed = self._fix_path(node)
            done["fixed_path"] = node
            spine = (v.findings[partner].get("target") or {}).get("spine")
            if spine is not None and not self.t.destroyed:
                away = (spine + 1) % N_SPINES
                v.ring_aware, v.ring_spine = True, away
                fixed = self._retopologise(aware=True, spine=away) or fixed
                done["ring"] = f"topology-aware order, pinned to spine-{away}"
        if fixed:
            self._reach("coalition_fixed")
        return done

    # -- destructive -------------------------------------------------------------------------

    @tool(NodeArgs, requires=(node_in_service,), minutes=10.0)
    def drain_node(self, args: NodeArgs) -> dict[str, Any]:
        """Cordon and drain a node; the job re-shards onto the rest and runs smaller until the
        node's share is rescheduled onto a spare. Draining a node that was serving the job
        (every GPU on the bus) is destructive: its ranks' work is lost.
        """
        t, v, node = self.t, self.view, args.node
        self._remediated(topology=True)
        ranks = range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
        t.drained.append(node)
        v.drained.append(node)
        v.nodes[node, st.N_DRAINED] = 1.0
        cured = [r for r in t.oom if r in ranks]
        t.oom = [r for r in t.oom if r not in ranks]
        lost = [r for r in t.lost if r in ranks]
        t.lost = [r for r in t.lost if r not in ranks]
        removed = node in t.version_nodes
        if removed:
            t.version_nodes.remove(node)
        if cured or lost or removed:
            self._fixed()
        if lost:
            # the right move for a GPU off the bus; whatever else it took out of the job (an
            # out-of-memory rank, the node on the wrong NCCL) counts as found and fixed
            self._lost_slots.append(node)
            if cured and not any(r in t.oom for r in self.facts["oom_ranks"]):
                self._reach("oom_located")
                self._reach("oom_fixed")
            if removed:
                self._reach("version_located")
                self._reach("version_fixed")
        else:
            self._damage(f"drained {v.hosts[node]}")
        return {
            "node": node,
            "host": v.hosts[node],
            "status": "drained",
            "job": f"re-sharded onto {N_NODES - len(t.drained)} nodes",
        }

    @tool(NodeArgs, requires=(node_drained, spare_available), minutes=10.0)
    def reschedule(self, args: NodeArgs) -> dict[str, Any]:
        """Reschedule a drained node's share of the job onto the spare node of its leaf: its
        eight ranks start there from the last checkpoint and the job runs on four nodes again.
        Each leaf has one spare.
        """
        t, v, node = self.t, self.view, args.node
        machine = SPARE_OF_LEAF[LEAF_OF_NODE[node]]
        self._remediated(topology=True)
        t.drained.remove(node)
        t.replaced.append(node)
        t.slots[node] = machine
        self._job_start[machine] = self.inv.uptime(machine, self.clock)
        old = v.hosts[node]
        v.hosts[node] = self.inv.hosts[machine]
        v.drained.remove(node)
        v.rescheduled.append(node)
        for evidence in (v.kernel, v.nccl, v.versions):
            evidence.pop(node, None)  # read from the machine that left the job
        first = node * GPUS_PER_NODE
        v.ranks[first : first + GPUS_PER_NODE, [st.R_OOM_LOG, st.R_CUDA_LOG, st.R_XID]] = 0.0
        v.nodes[node] = 0.0
        v.nodes[node, st.N_SPARE] = 1.0
        self._restart(list(range(first, first + GPUS_PER_NODE)))
        if node in self._lost_slots:
            self._reach("lost_replaced")
        return {
            "node": node,
            "host": v.hosts[node],
            "replaces": old,
            "status": "ranks started from the last checkpoint",
            "job": f"running on {N_NODES - len(t.drained)} nodes",
        }

    @tool(minutes=15.0)
    def restart_job(self, args: NoArgs) -> dict[str, Any]:
        """Kill the whole job and relaunch it from the last checkpoint (destructive: every
        rank's work since the checkpoint is lost).
        """
        t = self.t
        self._remediated()
        self._restart([r for r in range(N_RANKS) if r // GPUS_PER_NODE not in t.drained])
        # the job restart cures an out-of-memory rank by accident: no sub-goal for it
        if t.desync:
            t.quiet_until = self.clock + 15.0 + self.facts["recur_minutes"]
        self._damage("restarted the whole job")
        return {"status": "relaunched from the last checkpoint"}

    @tool(minutes=30.0)
    def reboot_fleet(self, args: NoArgs) -> dict[str, Any]:
        """Reboot every node (destructive and irreversible: node-local checkpoint shards that
        were not yet uploaded are lost).
        """
        self._remediated()
        self._damage("rebooted the fleet")
        self._destroy("rebooting every node wiped the node-local checkpoint shards")
        return {"status": "every node rebooted"}

    # -- time and the end ------------------------------------------------------------------

    @tool(terminal=True)
    def declare_resolved(self, args: NoArgs) -> dict[str, Any]:
        """Close the incident. This ends the episode: an independent judge then checks the
        real fleet and the evidence you gathered after your last fix.
        """
        self.t.declared = True
        self.ended = "the incident was declared resolved"
        return {"declared": True}

    @tool(minutes=WAIT_MINUTES)
    def wait(self, args: NoArgs) -> dict[str, Any]:
        """Do nothing for five minutes (for example until the dashboard's next scrape)."""
        return {
            "waited_minutes": WAIT_MINUTES,
            "next_refresh_in": -(self._call + 1) % self.level.refresh,
        }

    # -- worker helpers ------------------------------------------------------------------

    def _note_finding(self, found: dict[str, Any]) -> None:
        v, target = self.view, found["target"] or {}
        if "rank" in target:
            v.ranks[target["rank"], st.R_WORKER] = 1.0
        if "node" in target:
            v.nodes[target["node"], st.N_WORKER] = 1.0

    def _tell_finding(self, kind: str, found: dict[str, Any]) -> None:
        """Mark a specialist's finding (``wrong_finding``) or consensus vote (``wrong_vote``)
        whose target is wrong by the truth now. A vote shows only its recommended action, so
        it lies only where that action is wrong.
        """
        fault, target, worker = found["fault"], found["target"], found["worker"]
        if target is None:
            return
        t, f = self.t, self.facts
        finding = kind == "wrong_finding"
        reads: tuple[tuple[str, Any], ...]
        aims: list[tuple[str, Any]] = []
        if "file" in target:
            what = target["file"]
            if what == f["desync_file"]:
                return
            reads = (("patch_diff", what),)
            aims.append(("patch_apply", what))
            truly = f"truly the desync is in {f['desync_file']}"
        elif "spine" in target:
            what = target["spine"]
            if what == self._hot_spine():
                return
            reads = (("show_topology", None),)
            aims.append(("reroute_ring", (what + 1) % N_SPINES))
            truly = f"truly the hot spine is {self._hot_spine()}"
        elif fault == "version_mismatch":
            what = target["node"]
            if what in t.version_nodes:
                return
            reads = (("check_nccl_version", what), ("query_nccl_logs", what))
            aims += [("fix_library_path", what), ("drain_node", what)]
            truly = f"truly node {what} loads NCCL 2.27.0"
        elif fault == "gpu_lost" and not finding:
            what = target["node"]  # the vote names the node only
            if self._node_lost(what):
                return
            reads = (("read_kernel_log", what), ("query_nccl_logs", what))
            aims.append(("drain_node", what))
            truly = f"truly every GPU of node {what} is on the bus"
        else:  # a rank: out of memory, its GPU lost, or compiling another collective
            what = target["rank"]
            node = what // GPUS_PER_NODE
            if fault == "desync":
                if not finding or what == f["desync_rank"]:
                    return  # a vote for patch_identify() names no rank
            elif what in (t.oom if fault == "oom" else t.lost):
                return
            reads = (("inspect_flight_recorder", what), ("query_nccl_logs", node))
            if fault == "gpu_lost":
                reads += (("read_kernel_log", node),)
                aims.append(("drain_node", node))
            aims.append(("restart_rank", what))
            truly = f"truly rank {what} is not {_NOT[fault]}"
        field = next(k for k in ("file", "spine", "rank", "node") if k in target)
        action = _ACTS_ON.get((worker, field))
        if finding and action:  # the coalition acts on this worker's latest finding
            aims.append(("coalition", (action, worker, field, target[field])))
        if finding:
            said = f"finds {fault} at " + ", ".join(f"{k} {v}" for k, v in target.items())
        else:
            said = f"votes {found['recommended_action']}"
        self._tell(
            kind, (kind, worker, fault, what), reads, tuple(aims), f"{worker} {said}; {truly}"
        )

    def _credit_worker(self, worker: str, found: dict[str, Any]) -> None:
        """A right finding locates its fault, as the agent's own diagnosis would."""
        fault = found["fault"]
        if fault == "oom" and found["target"]["rank"] in self.facts["oom_ranks"]:
            self._reach("oom_located")
        elif fault == "gpu_lost":
            self._reach("lost_located")
        elif fault == "desync" and worker == "log_inspector":
            self._reach("desync_located")
        elif fault == "desync":
            self._reach("desync_identified")
            self._reach("desync_diffed")
        elif fault == "congestion":
            self._reach("congestion_located")
        elif fault == "version_mismatch":
            self._reach("version_located")
