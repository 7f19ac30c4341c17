"""The fleet's hidden truth, the agent's view, and the preconditions (functions of the view).

``Truth`` is what really is: which ranks are out of memory, how the ring crosses the spines,
whether the desync's root cause is patched, which nodes load the wrong NCCL. ``View`` is what
the agent has been told: the last telemetry scrape, the evidence its diagnostics returned, the
actions it took. Preconditions read the view only, so a rejection never tells the agent
anything its tools did not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field

from opsgym.core.tools import Args
from opsgym.envs.fleet.tasks import (
    COALITIONS,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    WORKERS,
    Level,
    node_of,
)

RANK_FEATURES = 8
R_ALERT, R_HOT, R_FR_SEEN, R_FR_BEHIND, R_ODD_OP, R_XID, R_RESTARTED, R_WORKER = range(8)
"""Columns of ``View.ranks``: alerted, hot in the last scrape, flight recorder read, behind its
peers, issuing a different collective, current XID 79, restarted by the agent, named by a worker.
"""
NODE_FEATURES = 10
(
    N_ALERT,
    N_DEGRADED,
    N_KERNEL,
    N_NCCL,
    N_TRUNC,
    N_ODD_OP,
    N_VERSION,
    N_FIXED,
    N_DRAINED,
    N_WORKER,
) = range(10)
"""Columns of ``View.nodes``: alerted, shown degraded, kernel log read, NCCL log read, truncation
warnings seen, a watchdog reports a different collective, NCCL version (+1 wrong, -1 right),
library path fixed, drained, named by a worker.
"""


@dataclass(slots=True)
class Truth:
    """What is really so. Never shown to the agent during an episode."""

    oom: list[int] = field(default_factory=list)
    congested: bool = False
    ring_aware: bool = True
    ring_spine: int | None = None
    fabric: float = 1.0
    desync: bool = False
    quiet_until: float | None = None
    version_nodes: list[int] = field(default_factory=list)
    drained: list[int] = field(default_factory=list)
    seq: int = 0
    destructive: int = 0
    destroyed: str | None = None
    declared: bool = False
    secondary_struck: bool = False
    downtime_minutes: float = 0.0
    downtime_cost: float = 0.0
    delegations: int = 0
    over_budget: int = 0
    subgoals: dict[str, bool] = field(default_factory=dict)
    scrapes: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("updates", "red_herring", "degraded", "masked"), 0)
    )


def spine_loads(t: Truth) -> list[float]:
    """Cross-leaf ring hops each spine carries."""
    crossings = 2 if t.ring_aware else 4
    if t.ring_spine is None:
        return [crossings / N_SPINES] * N_SPINES
    return [float(crossings) if s == t.ring_spine else 0.0 for s in range(N_SPINES)]


def fabric_factor(t: Truth, spine: int, drop: float) -> float:
    """Share of nominal bus bandwidth the ring gets: cross-leaf hops share spine uplinks (two
    at full rate per spine), and the congested spine loses ``drop`` once it carries two hops
    (half of it with one).
    """
    factor = 1.0
    for s, load in enumerate(spine_loads(t)):
        if load:
            share = min(1.0, 2.0 / load)
            if t.congested and s == spine:
                share *= 1.0 - drop * min(1.0, load / 2.0)
            factor = min(factor, share)
    return factor


@dataclass(slots=True)
class View:
    """What the agent has been told. The only input to observations, preconditions and the
    vector encoding.
    """

    task: str
    faults: tuple[str, ...]
    level: Level
    gated: bool
    coordination: bool
    hosts: tuple[str, ...]
    allowance: int
    calls: int = 0
    tokens: int = 0
    phase: int = 1
    last_remediation: int = -1
    last_topology_change: int = -1
    scrape: dict[str, Any] | None = None
    scrape_call: int = -1
    flight: dict[int, dict[str, Any]] = field(default_factory=dict)
    kernel: dict[int, dict[str, Any]] = field(default_factory=dict)
    nccl: dict[int, dict[str, Any]] = field(default_factory=dict)
    versions: dict[int, dict[str, Any]] = field(default_factory=dict)
    topology: dict[str, Any] | None = None
    bench: list[float] = field(default_factory=list)
    bench_streak: int = 0
    mismatch: bool = False
    candidates: list[str] | None = None
    diffs: dict[str, bool] = field(default_factory=dict)
    patched: str | None = None
    restarted: list[int] = field(default_factory=list)
    fixed_paths: list[int] = field(default_factory=list)
    drained: list[int] = field(default_factory=list)
    ring_aware: bool = False
    ring_spine: int | None = None
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    consensus: dict[str, Any] | None = None
    delegations: int = 0
    ranks: np.ndarray = field(
        default_factory=lambda: np.zeros((N_RANKS, RANK_FEATURES), np.float32)
    )
    nodes: np.ndarray = field(
        default_factory=lambda: np.zeros((N_NODES, NODE_FEATURES), np.float32)
    )

    def stale(self) -> bool:
        """Whether the last scrape predates the agent's last remediation."""
        return self.scrape is None or self.scrape_call <= self.last_remediation

    def implicated(self, rank: int) -> bool:
        """Whether evidence points at ``rank``: a current XID on its GPU, or its flight recorder
        shows it never enqueued the collective its peers wait on.
        """
        kernel = self.kernel.get(node_of(rank))
        if kernel and rank in kernel["current_xid79_ranks"]:
            return True
        dump = self.flight.get(rank)
        return bool(dump and dump["behind"])


# -- arguments --------------------------------------------------------------------------


class NodeArgs(Args):
    """A node, by index (0-3, in the order of ``hosts``)."""

    node: int = Field(ge=0, le=N_NODES - 1, description="Node index 0-3, in the order of hosts.")


class RankArgs(Args):
    """A rank (global GPU index; rank r is GPU r % 8 of node r // 8)."""

    rank: int = Field(
        ge=0, le=N_RANKS - 1, description="Global rank 0-31 (GPU rank % 8 of node rank // 8)."
    )


class SpineArgs(Args):
    """A spine switch."""

    spine: int = Field(ge=0, le=N_SPINES - 1, description="Spine 0 or 1.")


class FileArgs(Args):
    """A source file whose compiled graph may differ between ranks."""

    file: Literal[PATCH_FILES] = Field(description="Source file to act on.")


class WorkerArgs(Args):
    """A specialist worker."""

    worker: Literal[WORKERS] = Field(description="Which specialist to ask.")


class CoalitionArgs(Args):
    """A two-worker coalition action."""

    action: Literal[tuple(COALITIONS)] = Field(  # type: ignore[valid-type]
        description="rank_recovery (restart log_inspector's rank, with topology_agent), "
        "desync_patch (patch patch_agent's file, with log_inspector), topology_version_fix "
        "(fix version_checker's node; re-form the ring off topology_agent's spine).",
    )


# -- preconditions: functions of the view only ------------------------------------------


def rank_in_service(view: View, args: Args) -> str | None:
    """The rank's node is not drained."""
    node = node_of(args.rank)
    return f"node {view.hosts[node]} is drained" if node in view.drained else None


def node_in_service(view: View, args: Args) -> str | None:
    """The node is not drained."""
    return f"node {view.hosts[args.node]} is drained" if args.node in view.drained else None


def rank_implicated_when_gated(view: View, args: Args) -> str | None:
    """In a phase-gated task, a current XID 79 or a flight recorder behind implicates the rank."""
    if view.gated and not view.implicated(args.rank):
        return f"phase gating: no evidence implicates rank {args.rank}; investigate it first"
    return None


def oom_phase_closed(view: View, args: Args) -> str | None:
    """In a phase-gated task, a fresh scrape has shown the job no longer stalled (OOM closed)."""
    if view.gated and view.phase < 2:
        return "phase gating: the OOM phase is not closed; confirm the job is no longer stalled"
    return None


def topology_seen_when_gated(view: View, args: Args) -> str | None:
    """In a phase-gated task, the topology (show_topology) has been read."""
    if view.gated and view.topology is None:
        return "phase gating: read the topology (show_topology) before changing the ring"
    return None


def congestion_phase_closed(view: View, args: Args) -> str | None:
    """In a phase-gated task, three benchmark samples at target have closed the fabric phase."""
    if view.gated and view.phase < 3:
        return "phase gating: the congestion phase is not closed; confirm the fabric fix first"
    return None


def mismatch_seen(view: View, args: Args) -> str | None:
    """Flight recorders of two ranks disagree on the collective at one sequence number."""
    if not view.mismatch:
        return "no flight-recorder evidence of a collective mismatch; inspect the ranks first"
    return None


def not_patched(view: View, args: Args) -> str | None:
    """No patch has been applied yet."""
    return f"{view.patched} is already patched" if view.patched else None


def file_identified(view: View, args: Args) -> str | None:
    """patch_identify listed the file as a candidate."""
    if view.candidates is None or args.file not in view.candidates:
        return f"{args.file} is not among the files patch_identify listed"
    return None


def file_diverges(view: View, args: Args) -> str | None:
    """patch_diff showed the file's collectives diverge between ranks."""
    if not view.diffs.get(args.file):
        return f"no diff has shown {args.file}'s collectives diverging"
    return None


def coordination_on(view: View, args: Args) -> str | None:
    """Coordination is enabled (config coordination=true)."""
    return None if view.coordination else "coordination is switched off in this episode"


def coalition_ready(view: View, args: Args) -> str | None:
    """Both workers have reported, the acting one naming its target (a rank, file or node)."""
    actor, partner, kind = COALITIONS[args.action]
    finding = view.findings.get(actor)
    if finding is None or partner not in view.findings:
        return f"{args.action} needs findings from both {actor} and {partner}"
    if kind not in (finding.get("target") or {}):
        return f"{actor} named no {kind} to act on"
    return None


def coalition_phase_open(view: View, args: Args) -> str | None:
    """In a phase-gated task, the coalition's phase is open."""
    if args.action == "topology_version_fix":
        return oom_phase_closed(view, args)
    if args.action == "desync_patch":
        return congestion_phase_closed(view, args)
    return None


def version_seen_when_gated(view: View, args: Args) -> str | None:
    """In a phase-gated task, the node's NCCL version has been checked."""
    if view.gated and args.node not in view.versions:
        return f"phase gating: check node {args.node}'s NCCL version first"
    return None
