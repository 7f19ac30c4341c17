"""The fleet as it is built: its topology, names, software, workers and yardsticks.

Fixed facts every episode shares, whatever the seed or the scenario: four HGX nodes of eight GPUs
on two leaves and two spines with a spare node per leaf, the NCCL versions, the source files a
patch may touch, the specialist workers and their coalitions, the incident window and token
allowance, the flight recorder's size, and the benchmark's target. Every other module of the
world may import these; this one imports nothing of the world.
"""

from __future__ import annotations

N_NODES = 4

GPUS_PER_NODE = 8

N_RANKS = N_NODES * GPUS_PER_NODE

N_SPINES = 2

LEAF_OF_NODE = (0, 0, 1, 1)
"""Nodes 0-1 hang off leaf 0, nodes 2-3 off leaf 1; every leaf has an uplink to every spine."""

SPARE_OF_LEAF = (4, 5)
"""Machine index of each leaf's spare node (machines 0-3 run the job at the start)."""

N_MACHINES = N_NODES + len(SPARE_OF_LEAF)

PCI_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
"""PCI bus of each local GPU (an HGX H100 board), as kernel messages name them."""

GOOD_NCCL, BAD_NCCL = "2.27.0", "2.21.5"

PATCH_FILES = (
    "model/moe_router.py",
    "model/attention.py",
    "data/packing.py",
    "train/loss_scaler.py",
    "model/activation_ckpt.py",
)
"""Source files whose compiled graphs may differ between ranks."""

WORKERS = ("log_inspector", "patch_agent", "topology_agent", "version_checker")

COALITIONS: dict[str, tuple[str, str, str]] = {
    "rank_recovery": ("log_inspector", "topology_agent", "rank"),
    "desync_patch": ("patch_agent", "log_inspector", "file"),
    "topology_version_fix": ("version_checker", "topology_agent", "node"),
}
"""Each two-worker action: the worker whose finding it acts on, its partner, and the kind of
target the finding must name."""

DELEGATION_BUDGET = 10

FAULTS = ("oom", "gpu_lost", "congestion", "desync", "version")

WINDOW_MINUTES = 900.0
"""The incident window, the same for every task (so the clock says nothing of the family)."""

TOKEN_ALLOWANCE = 3000
"""Tokens a good run may spend before its grade is scaled down, the same for every task."""

FR_BUFFER = 2000
"""Entries a flight recorder's ring buffer holds (``TORCH_NCCL_TRACE_BUFFER_SIZE=2000``)."""

INCIDENTS = (
    "PagerDuty: training job {job} breached its throughput SLO; the on-call is you.",
    "Slack #train-ops: '{job} looks off, loss curve flat for a while, can someone look?'",
    "Alertmanager: TrainingJobProgressLow firing for {job} (severity: page).",
    "Ticket: {job} tokens/s alert fired twice in the last hour; please investigate.",
    "PagerDuty: {job} step-time anomaly detector fired; the research team is waiting.",
)
"""Incident texts: one is drawn by the seed for every family alike, so none names a fault."""


def node_of(rank: int) -> int:
    """The node (job slot) a rank runs on."""
    return rank // GPUS_PER_NODE


BENCH_TARGET = 0.90
"""A benchmark sample holds when its bus bandwidth is at least this share of nominal."""

BENCH_STREAK = 3
"""Consecutive holding samples after the last topology change that confirm a fabric fix."""


def bench_ratio(busbw_gbps: float, nominal_gbps: float) -> float:
    """A benchmark sample's bus bandwidth as a share of nominal, rounded to four places: the one
    figure the agent's view, the report and the judge all read.
    """
    return round(busbw_gbps / nominal_gbps, 4)


def bench_holds(busbw_gbps: float, nominal_gbps: float) -> bool:
    """Whether a benchmark sample is at target. The view's streak and the judge both call this
    on the reported figures, so they can never disagree on a sample.
    """
    return bench_ratio(busbw_gbps, nominal_gbps) >= BENCH_TARGET
