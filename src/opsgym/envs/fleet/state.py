"""The fleet's hidden truth, the agent's view, and the preconditions (functions of the view).

``Truth`` is what really is: which ranks are out of memory, how the ring crosses the spines,
whether the desync's root cause is patched, which nodes load the wrong NCCL. ``View`` is what
the agent has been told: the last telemetry scrape, the evidence its diagnostics returned, the
actions it took. Preconditions read the view only, so a rejection never tells the agent
anything its tools did not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import Field

from opsgym.core.tools import Args
from opsgym.envs.fleet.domain import (
    COALITIONS,
    FR_BUFFER,
    LEAF_OF_NODE,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    WORKERS,
    node_of,
)
from opsgym.envs.fleet.scenarios import Level

RANK_FEATURES = 10
(
    R_ALERT,
    R_HOT,
    R_FR_SEEN,
    R_FR_BEHIND,
    R_ODD_OP,
    R_OOM_LOG,
    R_CUDA_LOG,
    R_XID,
    R_RESTARTED,
    R_WORKER,
) = range(RANK_FEATURES)
"""Columns of ``View.ranks``: alerted, hot in the last scrape, flight recorder read, behind its
peers, issuing a different collective, its log shows a CUDA out-of-memory error, its log shows
another CUDA error, a current Xid 79 on its GPU, restarted by the agent, named by a worker.
"""
NODE_FEATURES = 11
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
    N_SPARE,
    N_WORKER,
) = range(NODE_FEATURES)
"""Columns of ``View.nodes``: alerted, shown degraded, kernel log read, NCCL log read, truncation
warnings seen, a watchdog reports a different collective, NCCL version (+1 wrong, -1 right),
library path fixed, drained, rescheduled onto a spare, named by a worker.
"""
EVIDENCE = [R_ALERT, R_HOT, R_FR_BEHIND, R_OOM_LOG, R_CUDA_LOG, R_XID, R_WORKER]
"""Rank columns that implicate a rank (see :meth:`View.implicated`)."""


@dataclass(slots=True)
class Truth:
    """What is really so. Never shown to the agent during an episode."""

    oom: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    congested: bool = False
    ring_aware: bool = True
    ring_spine: int | None = None
    fabric: float = 1.0
    desync: bool = False
    quiet_until: float | None = None
    version_nodes: list[int] = field(default_factory=list)
    drained: list[int] = field(default_factory=list)
    replaced: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=lambda: list(range(N_NODES)))
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


_VIEWS = ("ranks", "nodes")


@dataclass(slots=True)
class View:
    """What the agent has been told. The only input to observations, preconditions and the
    vector encoding. ``gated`` is the task's phase gating: it shapes rejections only after a
    read has shown the agent the fleet, and is never shown itself.
    """

    level: Level
    gated: bool
    coordination: bool
    hosts: list[str]
    spares: list[str]
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
    rescheduled: list[int] = field(default_factory=list)
    ring_aware: bool = False
    ring_spine: int | None = None
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    consensus: dict[str, Any] | None = None
    delegations: int = 0
    features: np.ndarray = field(
        default_factory=lambda: np.zeros(N_RANKS * RANK_FEATURES + N_NODES * NODE_FEATURES, "f4")
    )
    """The per-rank and per-node features in one buffer (``ranks`` and ``nodes`` view it), so
    that the vector encoding copies them at once."""
    ranks: np.ndarray = field(init=False)
    nodes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        split = N_RANKS * RANK_FEATURES
        self.ranks = self.features[:split].reshape(N_RANKS, RANK_FEATURES)
        self.nodes = self.features[split:].reshape(N_NODES, NODE_FEATURES)

    def __getstate__(self) -> dict[str, Any]:
        # ``ranks`` and ``nodes`` are views of ``features``: rebuilt, never pickled apart
        return {f: getattr(self, f) for f in self.__dataclass_fields__ if f not in _VIEWS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def stale(self) -> bool:
        """Whether the last scrape predates the agent's last remediation."""
        return self.scrape is None or self.scrape_call <= self.last_remediation

    def implicated(self, rank: int) -> bool:
        """Whether anything the agent was told points at ``rank``: an alert or a hot GPU in the
        last scrape, an error in its log, a current Xid 79 on its GPU, a flight recorder behind
        its peers, or a specialist naming it.
        """
        row = self.ranks[rank].tolist()  # plain floats: cheaper than a numpy reduction
        return any(row[i] for i in EVIDENCE)

    def spare_free(self, node: int) -> bool:
        """Whether the spare of ``node``'s leaf is still free."""
        leaf = LEAF_OF_NODE[node]
        return not any(LEAF_OF_NODE[n] == leaf for n in self.rescheduled)


# -- arguments --------------------------------------------------------------------------


class NodeArgs(Args):
    """A node, by index (0-3, in the order of ``hosts``)."""

    node: int = Field(ge=0, le=N_NODES - 1, description="Node index 0-3, in the order of hosts.")


class RankArgs(Args):
    """A rank (global GPU index; rank r is GPU r % 8 of node r // 8)."""

    rank: int = Field(
        ge=0, le=N_RANKS - 1, description="Global rank 0-31 (GPU rank % 8 of node rank // 8)."
    )


class FlightArgs(Args):
    """A rank, and how many of the newest entries of its ring buffer to return."""

    rank: int = Field(
        ge=0, le=N_RANKS - 1, description="Global rank 0-31 (GPU rank % 8 of node rank // 8)."
    )
    last: int = Field(
        4,
        ge=1,
        le=FR_BUFFER,
        description=f"How many of the newest entries to return (the buffer holds {FR_BUFFER}).",
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
# Every remediation first needs evidence that only a read can give, so that a call made before
# any read is rejected for the same reason in every family; the task's phase gating comes after.


class Ranked(Protocol):
    """Arguments that name a rank (:class:`RankArgs`, :class:`FlightArgs`)."""

    @property
    def rank(self) -> int:
        """The rank."""


def rank_in_service(view: View, args: Ranked) -> str | None:
    """The rank's node is not drained."""
    node = node_of(args.rank)
    return f"node {view.hosts[node]} is drained" if node in view.drained else None


def node_in_service(view: View, args: NodeArgs) -> str | None:
    """The node is not drained."""
    return f"node {view.hosts[args.node]} is drained" if args.node in view.drained else None


def rank_implicated(view: View, args: RankArgs) -> str | None:
    """Something the agent read implicates the rank (an alert, a hot GPU, an error in its log,
    an Xid on its GPU, a flight recorder behind its peers, a specialist's finding).
    """
    if not view.implicated(args.rank):
        return f"nothing you have read implicates rank {args.rank}; investigate it first"
    return None


def topology_seen(view: View, args: Args) -> str | None:
    """The topology (show_topology) has been read."""
    if view.topology is None:
        return "read the topology (show_topology) before changing the ring"
    return None


def oom_phase_closed(view: View, args: Args) -> str | None:
    """In a phase-gated task, a fresh scrape has shown the job no longer stalled (phase 2)."""
    if view.gated and view.phase < 2:
        return "phase gating: the first phase is not closed; confirm the job is no longer stalled"
    return None


def congestion_phase_closed(view: View, args: Args) -> str | None:
    """In a phase-gated task, three benchmark samples at target have closed phase 2."""
    if view.gated and view.phase < 3:
        return "phase gating: the fabric phase is not closed; confirm the fabric (benchmarks)"
    return None


def mismatch_seen(view: View, args: Args) -> str | None:
    """Flight recorders of two ranks disagree on the collective at one sequence number."""
    if not view.mismatch:
        return "no flight-recorder evidence of a collective mismatch; inspect the ranks first"
    return None


def not_patched(view: View, args: Args) -> str | None:
    """No patch has been applied yet."""
    return f"{view.patched} is already patched" if view.patched else None


def file_identified(view: View, args: FileArgs) -> str | None:
    """patch_identify listed the file as a candidate."""
    if view.candidates is None or args.file not in view.candidates:
        return f"{args.file} is not among the files patch_identify listed"
    return None


def file_diverges(view: View, args: FileArgs) -> str | None:
    """patch_diff showed the file's collectives diverge between ranks."""
    if not view.diffs.get(args.file):
        return f"no diff has shown {args.file}'s collectives diverging"
    return None


def coordination_on(view: View, args: Args) -> str | None:
    """Coordination is enabled (config coordination=true)."""
    return None if view.coordination else "coordination is switched off in this episode"


def coalition_ready(view: View, args: CoalitionArgs) -> str | None:
    """Both workers have reported, the acting one naming its target (a rank, file or node)."""
    actor, partner, kind = COALITIONS[args.action]
    finding = view.findings.get(actor)
    if finding is None or partner not in view.findings:
        return f"{args.action} needs findings from both {actor} and {partner}"
    if kind not in (finding.get("target") or {}):
        return f"{actor} named no {kind} to act on"
    return None


def coalition_phase_open(view: View, args: CoalitionArgs) -> str | None:
    """In a phase-gated task, the coalition's phase is open."""
    if args.action == "topology_version_fix":
        return oom_phase_closed(view, args)
    if args.action == "desync_patch":
        return congestion_phase_closed(view, args)
    return None


def version_checked(view: View, args: NodeArgs) -> str | None:
    """The node's NCCL version has been checked (check_nccl_version)."""
    if args.node not in view.versions:
        return f"check node {args.node}'s NCCL version first"
    return None


def node_drained(view: View, args: NodeArgs) -> str | None:
    """The node has been drained."""
    if args.node not in view.drained:
        return f"node {view.hosts[args.node]} is not drained; drain it before rescheduling"
    return None


def spare_available(view: View, args: NodeArgs) -> str | None:
    """The spare node of the node's leaf is free."""
    if not view.spare_free(args.node):
        return f"the spare of leaf {LEAF_OF_NODE[args.node]} is already in use"
    return None
