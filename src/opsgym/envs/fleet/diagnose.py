"""The fleet's diagnostic tools: the surface dashboard and the deep reads.

Each read draws a fixed number of uniforms whatever the truth, renders what the real tool would
print (``telemetry.py``), stores what a careful reader extracts in the agent's view, and marks
the sub-goals the evidence reaches (their credit is settled: paid on the episode's last step).
"""

from __future__ import annotations

from typing import Any

from opsgym.core.tools import NoArgs, tool
from opsgym.envs.fleet import state as st
from opsgym.envs.fleet.base import ANY, FleetBase
from opsgym.envs.fleet.domain import BENCH_STREAK, BENCH_TARGET, GOOD_NCCL, GPUS_PER_NODE
from opsgym.envs.fleet.recorder import flight_recorder
from opsgym.envs.fleet.state import FlightArgs, NodeArgs, node_in_service, rank_in_service
from opsgym.envs.fleet.telemetry import (
    BENCH_DRAWS,
    SCRAPE_DRAWS,
    benchmark,
    kernel_log,
    library_path,
    nccl_log,
    scrape,
    topology,
)


def _hot(body: dict[str, Any]) -> list[dict[str, Any]]:
    """GPUs a scrape shows near their memory limit, unreadable, or silent."""
    return [
        {"rank": g["rank"], "mem_gib": g["mem_gib"], "heartbeat_s": g["heartbeat_s"]}
        for node in body["nodes"]
        for g in node["gpus"]
        if g["mem_gib"] is None or g["mem_gib"] >= 79.0 or g["heartbeat_s"] >= 30
    ]


def _degraded_at(s: dict[str, Any], node: int) -> bool:
    """Whether a captured surface state ``s`` had ``node`` degraded (as the scrape counts it)."""
    ranks = s["oom"] + s["lost"]
    return node in s["version_nodes"] or any(r // GPUS_PER_NODE == node for r in ranks)


class Diagnostics(FleetBase):
    """Mixin of the read tools of :class:`~opsgym.envs.fleet.world.Fleet`."""

    @tool(minutes=1.0)
    def check_telemetry(self, args: NoArgs) -> dict[str, Any]:
        """Read the fleet dashboard: the job's status and throughput, alerts, and each GPU's
        memory, utilisation and heartbeat. The dashboard is scraped only every few calls
        (next_refresh_in); in between it serves the last scrape, and `stale` says whether that
        scrape predates your last remediation. Some alerts are red herrings and some degraded
        nodes show as ok.
        """
        v, s, k = self.view, self._surface, self.level.refresh
        if self._rendered is None:
            body, counts = scrape(self.inv, s, self.level, self._draw(SCRAPE_DRAWS))
            body["hot_gpus"] = _hot(body)
            self._rendered = body
            tally = self.t.scrapes
            tally["updates"] += 1
            for key, value in counts.items():
                tally[key] += value
            self._tell_scrape(s, body)
        body = self._rendered
        report = {
            "scrape": s["call"] // k,
            "scraped_at_call": s["call"],
            "scraped_at_minute": s["clock"],
            **body,
        }
        v.scrape, v.scrape_call = report, s["call"]
        stale = v.stale()
        if not stale and s["status"] != self._status():
            self._tell_stale(s)
        ranks, nodes = v.ranks, v.nodes
        ranks[:, st.R_ALERT] = ranks[:, st.R_HOT] = 0.0
        nodes[:, st.N_ALERT] = nodes[:, st.N_DEGRADED] = 0.0
        for alert in body["alerts"]:
            if alert["rank"] is not None:
                ranks[alert["rank"], st.R_ALERT] = 1.0
            if alert["source"] in v.hosts:
                nodes[v.hosts.index(alert["source"]), st.N_ALERT] = 1.0
        for gpu in body["hot_gpus"]:
            ranks[gpu["rank"], st.R_HOT] = 1.0
        for i, node in enumerate(body["nodes"]):
            nodes[i, st.N_DEGRADED] = float(node["status"] == "degraded")
        status = body["job"]["status"]
        if not stale:
            if v.phase == 1 and status != "stalled":
                v.phase = 2
            if status == "running" and s["healthy"]:
                self._reach("recovery_confirmed")
        # the rendered body is shared by the events that served it and never changed again;
        # the caller gets its own copy from the episode
        return {
            **report,
            "stale": stale,
            "age_calls": self._call - s["call"],
            "next_refresh_in": -(self._call + 1) % k,
        }

    @tool(NodeArgs, requires=(node_in_service,), minutes=2.0)
    def query_nccl_logs(self, args: NodeArgs) -> dict[str, Any]:
        """Read the log of one node's eight ranks: NCCL debug lines (NCCL_DEBUG=INFO: version,
        ring channels, truncation warnings), ProcessGroupNCCL watchdog timeouts, and the errors
        a training process died of (a CUDA out-of-memory error, a CUDA failure).
        """
        v, t, node = self.view, self.t, args.node
        out = nccl_log(self.inv, node, self._state(), self._init_lines)
        summary = out["summary"]
        v.nccl[node] = {**summary, "call": self._call}
        row = v.nodes[node]
        row[st.N_NCCL] = 1.0
        row[st.N_TRUNC] = float(summary["truncation_warnings"] > 0)
        odd = [int(r) for r, op in summary["watchdog_ops"].items() if op != "ALLREDUCE"]
        row[st.N_ODD_OP] = float(bool(odd))
        row[st.N_VERSION] = 1.0 if summary["version"] != GOOD_NCCL else -1.0
        first = node * GPUS_PER_NODE
        v.ranks[first : first + GPUS_PER_NODE, st.R_OOM_LOG] = 0.0
        v.ranks[first : first + GPUS_PER_NODE, st.R_CUDA_LOG] = 0.0
        for rank in odd:
            v.ranks[rank, st.R_ODD_OP] = 1.0
        for rank in summary["oom_errors"]:
            v.ranks[rank, st.R_OOM_LOG] = 1.0
        for rank in summary["cuda_errors"]:
            v.ranks[rank, st.R_CUDA_LOG] = 1.0
        if node in t.version_nodes:
            self._reach("version_located")
        if any(r in self.facts["oom_ranks"] for r in summary["oom_errors"]):
            self._reach("oom_located")
        if self._hung() and self.facts["desync_rank"] in odd:
            self._reach("desync_located")
        return {"node": node, **out}

    @tool(NodeArgs, requires=(node_in_service,), minutes=1.0)
    def read_kernel_log(self, args: NodeArgs) -> dict[str, Any]:
        """Read the kernel ring buffer (dmesg) of the machine serving one node: NVRM Xid
        messages with the PCI bus of the GPU and the uptime they were logged at, and the uptime
        at which the job started there (an Xid from before it is stale).
        """
        v, node = self.view, args.node
        out = kernel_log(self.inv, node, self._state())
        summary = out["summary"]
        v.kernel[node] = {**summary, "call": self._call}
        v.nodes[node, st.N_KERNEL] = 1.0
        first = node * GPUS_PER_NODE
        v.ranks[first : first + GPUS_PER_NODE, st.R_XID] = 0.0
        for rank in summary["current_xid79_ranks"]:
            v.ranks[rank, st.R_XID] = 1.0
        if any(r in self.t.lost for r in summary["current_xid79_ranks"]):
            self._reach("lost_located")
        start = summary["job_start_uptime_s"]
        for xid in summary["xids"]:
            if xid["xid"] == 79 and xid["uptime_s"] < start and self._rank_healthy(xid["rank"]):
                rank = xid["rank"]
                self._tell_healthy(
                    "decoy_xid",
                    rank,
                    (("query_nccl_logs", node), ("inspect_flight_recorder", rank)),
                    f"{out['host']}'s kernel log holds an Xid 79 (GPU {xid['gpu']} fell off the "
                    f"bus) from uptime {xid['uptime_s']:.0f} s, before the job started at "
                    f"{start:.0f} s; rank {rank} is healthy",
                )
        return {"node": node, **out}

    @tool(NodeArgs, requires=(node_in_service,), minutes=1.0)
    def check_nccl_version(self, args: NodeArgs) -> dict[str, Any]:
        """Audit one node's LD_LIBRARY_PATH and the libnccl it resolves."""
        v, node = self.view, args.node
        bad = node in self.t.version_nodes
        out = library_path(v.hosts[node], bad, node in v.fixed_paths or node in v.rescheduled)
        v.versions[node] = {
            "version": out["version"],
            "LD_LIBRARY_PATH": out["LD_LIBRARY_PATH"],
            "call": self._call,
        }
        v.nodes[node, st.N_VERSION] = 1.0 if bad else -1.0
        if bad:
            self._reach("version_located")
        return {"node": node, **out}

    @tool(minutes=1.0)
    def show_topology(self, args: NoArgs) -> dict[str, Any]:
        """Show the leaves, their spare nodes and the spines, the ring's order and route, and
        each spine's uplink utilisation and ECN-marked packets from the switch counters.
        """
        t, f = self.t, self.facts
        s = {
            "ring_aware": t.ring_aware,
            "ring_spine": t.ring_spine,
            "loads": st.spine_loads(t),
            "congested": t.congested,
            "spine": f["congested_spine"],
            "hosts": self.view.hosts,
        }
        out = topology(self.inv, s, self._draw(4))
        self.view.topology = {
            "spines": [dict(x) for x in out["spines"]],
            "ring": dict(out["ring"]),
            "call": self._call,
        }
        if t.congested and s["loads"][f["congested_spine"]] > 0:
            self._reach("congestion_located")
        return out

    @tool(minutes=3.0)
    def benchmark_allreduce(self, args: NoArgs) -> dict[str, Any]:
        """Run nccl-tests' all_reduce_perf (1 GiB, bfloat16) over the job's ring and report the
        bus bandwidth. Samples jitter; a fabric fix is confirmed by three consecutive samples at
        90% of nominal or better (the ratio rounded to four places) after the last topology
        change.
        """
        v, t = self.view, self.t
        fabric = self._fabric()
        out = benchmark(self.inv, fabric, self._draw(BENCH_DRAWS))
        v.bench = [*v.bench[-7:], out["ratio"]]
        v.bench_streak = v.bench_streak + 1 if out["at_target"] else 0
        if v.bench_streak >= BENCH_STREAK:
            if t.congested and fabric >= 1.0:
                self._reach("congestion_confirmed")
            if v.phase == 2:
                v.phase = 3
        return {**out, "streak": v.bench_streak, "target": BENCH_TARGET}

    @tool(FlightArgs, requires=(rank_in_service,), minutes=2.0)
    def inspect_flight_recorder(self, args: FlightArgs) -> dict[str, Any]:
        """Dump one rank's PyTorch flight recorder (a ring buffer of the last 2000 collectives,
        TORCH_NCCL_TRACE_BUFFER_SIZE=2000): pg_config, pg_status (last enqueued, started and
        completed collective) and the newest `last` entries (4 by default), with their ops,
        sizes and states.
        """
        v, rank, t, f = self.view, args.rank, self.t, self.facts
        status = self._status()
        decoy = f["decoy_rank"] if self.harsh else None
        out = flight_recorder(
            rank,
            args.last,
            t.seq,
            status,
            rank in t.oom or rank in t.lost,
            f["desync_op"] if status == "hung" and rank == f["desync_rank"] else "nccl:all_reduce",
            rank == decoy,
            v.hosts[rank // GPUS_PER_NODE],
            self._dumps,
        )
        summary = out["summary"]
        v.flight[rank] = {**summary, "call": self._call}
        row = v.features  # the flat buffer: cheaper than a view of the rank's row
        at = rank * st.RANK_FEATURES
        row[at + st.R_FR_SEEN] = 1.0
        row[at + st.R_FR_BEHIND] = float(summary["behind"])
        if summary["op"] != "nccl:all_reduce":
            row[at + st.R_ODD_OP] = 1.0
        # one seq, two ops among the collectives the ranks read wait in; kept per rank rather
        # than gathered from every dump read so far
        started = self._started
        if summary["state"] == "started":
            started[rank] = (summary["seq"], summary["op"])
        elif started:
            started.pop(rank, None)
        if started:
            pairs = set(started.values())
            v.mismatch = len({seq for seq, _ in pairs}) < len(pairs)
        else:
            v.mismatch = False
        if rank in f["oom_ranks"] and summary["behind"] and rank in t.oom:
            self._reach("oom_located")
        if rank == f["desync_rank"] and self._hung():
            self._reach("desync_located")
        if decoy == rank and summary["returned"] >= 2 and self._rank_healthy(rank):
            self._tell_healthy(
                "decoy_straggler",
                rank,
                (("query_nccl_logs", rank // GPUS_PER_NODE),),
                f"rank {rank}'s flight recorder shows collective {summary['seq'] - 1} taking "
                "180-270 ms (its peers' take 3-12); the rank is healthy, in step with its peers",
            )
        return out

    # -- lies (hidden; see the manual's "Lies") -------------------------------------------

    def _tell_scrape(self, s: dict[str, Any], body: dict[str, Any]) -> None:
        """Mark what a newly rendered scrape gets wrong about the fleet as it is now: a
        red-herring alert on a healthy GPU, a degraded node or spine shown ok, black_swan's
        healthy rank at its memory high watermark.
        """
        for alert in body["alerts"]:
            rank = alert["rank"]
            # a real alert is critical (a dead rank) or names no rank (NCCL warnings, spines)
            if alert["severity"] == "warning" and rank is not None and self._rank_healthy(rank):
                node = rank // GPUS_PER_NODE
                self._tell_healthy(
                    "red_herring",
                    rank,
                    (
                        ("query_nccl_logs", node),
                        ("read_kernel_log", node),
                        ("inspect_flight_recorder", rank),
                    ),
                    f"alert on {alert['source']}: {alert['message']!r}; rank {rank} is healthy",
                    also=(("fix_library_path", node),),
                )
        for node, shown in enumerate(body["nodes"]):
            if shown["status"] == "ok" and _degraded_at(s, node) and self._node_degraded(node):
                self._tell_masked(node, s["hosts"][node])
        spine = s["hot_spine"]
        source = f"spine-{spine}"
        if spine is not None and not any(a["source"] == source for a in body["alerts"]):
            if self._fabric() < 1.0:
                self._tell(
                    "masked",
                    ("masked", "spine", spine),
                    (("show_topology", None), ("benchmark_allreduce", None)),
                    (("declare_resolved", ("spine", spine)),),
                    f"the dashboard raises no alert on {source}; the ring runs at "
                    f"{self._fabric():.2f} of its nominal bandwidth",
                )
        decoy = s["decoy_rank"]
        if decoy is not None and self._rank_healthy(decoy):
            if any(g["rank"] == decoy for g in body["hot_gpus"]):
                self._tell_healthy(
                    "decoy_watermark",
                    decoy,
                    (
                        ("query_nccl_logs", decoy // GPUS_PER_NODE),
                        ("inspect_flight_recorder", decoy),
                    ),
                    f"rank {decoy} shows at its memory high watermark; it is healthy",
                )

    def _tell_masked(self, node: int, host: str) -> None:
        """The dashboard shows degraded ``node`` ok."""
        t = self.t
        ranks = [r for r in t.oom + t.lost if r // GPUS_PER_NODE == node]
        reads: list[tuple[str, Any]] = [("query_nccl_logs", node)]
        reads += [("inspect_flight_recorder", r) for r in ranks]
        if any(r in t.lost for r in ranks):
            reads.append(("read_kernel_log", node))
        if node in t.version_nodes:
            reads.append(("check_nccl_version", node))
        faults = [f"rank {r} out of memory" for r in ranks if r in t.oom]
        faults += [f"rank {r}'s GPU lost" for r in ranks if r in t.lost]
        faults += ["it loads NCCL 2.21.5"] * (node in t.version_nodes)
        self._tell(
            "masked",
            ("masked", "node", node),
            tuple(reads),
            (("declare_resolved", ("node", node)),),
            f"the dashboard shows {host} ok; it is degraded: {', '.join(faults)}",
        )

    def _tell_stale(self, s: dict[str, Any]) -> None:
        """A scrape served as current (not stale) while the job's status has changed since."""
        self._tell(
            "stale_dashboard",
            ("stale_dashboard", s["call"]),
            (
                ("query_nccl_logs", ANY),
                ("inspect_flight_recorder", ANY),
                ("check_telemetry", "fresh"),
            ),
            (("declare_resolved", ("fleet", None)),),
            f"the scrape of call {s['call']} (minute {s['clock']:g}) is served as current and "
            f"shows the job {s['status']}; it is {self._status()} now",
        )

    def _tell_healthy(
        self,
        kind: str,
        rank: int,
        reads: tuple[tuple[str, Any], ...],
        detail: str,
        also: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        """A report that makes healthy ``rank`` look faulty: ``reads`` settle it; a restart of
        the rank or a drain of its node (and ``also``) trust it.
        """
        aims = (("restart_rank", rank), ("drain_node", rank // GPUS_PER_NODE), *also)
        self._tell(kind, (kind, rank), reads, aims, detail)
