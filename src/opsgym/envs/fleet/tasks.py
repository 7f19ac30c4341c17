"""Tasks, challenge compositions, the ``mixed`` scenario, curriculum levels and public settings.

A *task* is a fault family with its own grader settings: which faults may strike (in the order
they manifest), the step budget, whether its phases are gated, whether its mistakes are
irreversible (``harsh``), whether the specialists must be consulted, a bound on lost training.
Each fault of a task is present on a share of the seeds only (``presence``) and its severity is
drawn too, so a task is a prior, never an answer; a seed with no fault present is a false alarm.

What the agent sees is the same whatever the family: one incident window, one token allowance,
a generic incident text drawn from a pool. The family shows only through what the tools report,
through what the agent's own actions do (an irreversible mistake ends a ``harsh`` run), and
through the end of the episode (the step budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.scenarios import Scenario, mixed
from opsgym.core.spec import WorldConfig

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
PRESENCE = 0.85
"""Default share of a task's seeds on which each of its faults is present."""
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


@dataclass(frozen=True, slots=True)
class Level:
    """One rung of the curriculum: how hard the telemetry is to read.

    Attributes:
        red_herring: Chance that a telemetry update carries an alert about a healthy part.
        mask: Chance that an update shows a truly degraded node or spine as healthy.
        refresh: Surface telemetry is re-scraped every this many calls.
        secondary: Chance of a secondary OOM on another rank when the first fault is fixed.
    """

    red_herring: float
    mask: float
    refresh: int
    secondary: float

    def scaled(self, multiplier: float) -> Level:
        """This level with its three rates multiplied (each capped at 0.95)."""
        if multiplier == 1.0:
            return self

        def cap(p: float) -> float:
            return round(min(0.95, p * multiplier), 4)

        return Level(cap(self.red_herring), cap(self.mask), self.refresh, cap(self.secondary))


LEVELS: dict[int, Level] = {
    1: Level(0.30, 0.20, 3, 0.10),
    2: Level(0.50, 0.35, 5, 0.25),
    3: Level(0.70, 0.50, 7, 0.40),
}


class FleetConfigError(OpsgymError, ValueError):
    """A config or override value of the fleet world that is out of range."""


class Settings(WorldConfig):
    """The public settings of one episode (``config``), with their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    error: ClassVar[type[OpsgymError]] = FleetConfigError

    level: int = Field(1, ge=1, le=3, description="Curriculum level 1-3 (see ``LEVELS``).")
    difficulty_multiplier: float = Field(
        1.0,
        ge=0.5,
        le=2.0,
        description="Scales the level's red-herring, masking and secondary-failure rates "
        "(each capped at 0.95), as the source's reset parameter of that name.",
    )
    downtime_cost_per_minute: float = Field(
        5000.0, ge=0, description="Dollars a minute of lost training costs (reported)."
    )
    coordination: bool = Field(True, description="Whether the specialists can be consulted.")
    token_allowance: int = Field(
        TOKEN_ALLOWANCE,
        ge=1,
        description="Tokens a good run may spend before its grade is scaled down.",
    )

    @model_validator(mode="before")
    @classmethod
    def _whole_multiplier(cls, data: Any) -> Any:
        # strict mode takes no int for a float: a multiplier of 2 means 2.0
        value = data.get("difficulty_multiplier") if isinstance(data, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return {**data, "difficulty_multiplier": float(value)}
        return data


READS = frozenset(
    {
        "check_telemetry",
        "query_nccl_logs",
        "read_kernel_log",
        "check_nccl_version",
        "show_topology",
        "benchmark_allreduce",
        "inspect_flight_recorder",
        "patch_identify",
        "patch_diff",
        "delegate",
        "poll_consensus",
    }
)
"""Tools that read the fleet, and so may reveal any hidden fact."""
HARSH_REVEALERS = frozenset({"restart_rank", "fix_library_path", "drain_node", "restart_job"})
"""In a harsh task a mistake ends the run: these calls may reveal a fact by ending it."""


def _hidden(faults: tuple[str, ...]) -> dict[str, tuple[Any, ...]]:
    """The hidden facts of a composition and the two values the leak tests force."""
    hidden: dict[str, tuple[Any, ...]] = {}
    for fault in faults:
        hidden[f"{fault}_present"] = (False, True)
    if "oom" in faults:
        hidden["oom_rank"] = (5, 22)
        hidden["oom_pair"] = (False, True)
    if "gpu_lost" in faults:
        hidden["lost_rank"] = (6, 25)
    if "congestion" in faults:
        hidden["congested_spine"] = (0, 1)
        hidden["bw_drop"] = (0.3, 0.6)
    if "desync" in faults:
        hidden["desync_rank"] = (3, 27)
        hidden["desync_file"] = (PATCH_FILES[0], PATCH_FILES[2])
    if "version" in faults:
        hidden["version_node"] = (1, 3)
    return hidden


def compose(
    *faults: str,
    name: str | None = None,
    description: str | None = None,
    held_out: bool = False,
    weight: float = 1.0,
    **params: Any,
) -> Scenario:
    """The challenge generator: a scenario whose ``faults`` may strike, in the order given.

    Desync manifests only once every fault before it is fixed (the job must run to reach the
    data-dependent branch); the others are active from the start. ``params`` override the task
    defaults: ``presence`` (share of seeds on which each fault is present), ``max_steps`` (the
    step budget: 50 for one fault, 40 per fault for more), ``gated`` (strict phase gating),
    ``harsh`` (decoys, wrapped kernel logs, irreversible mistakes), ``coalition`` (coordination
    sub-goals) and ``slo_minutes`` (a bound on lost training for a pass).
    """
    for fault in faults:
        if fault not in FAULTS:
            raise UnknownNameError("fleet fault", fault, FAULTS)
    n = len(faults)
    settings = {
        "presence": PRESENCE,
        "max_steps": 50 if n == 1 else 40 * n,
        "gated": False,
        "harsh": False,
        "coalition": False,
        "slo_minutes": None,
    }
    unknown = set(params) - set(settings)
    if unknown:
        raise UnknownNameError("fleet task parameter", sorted(unknown)[0], settings)
    settings.update(params)
    revealed = READS | (HARSH_REVEALERS if settings["harsh"] else set())
    return Scenario(
        name=name or "+".join(faults),
        description=description or "A generated incident: " + ", then ".join(faults) + ".",
        faults=tuple(faults),
        held_out=held_out,
        hidden=_hidden(tuple(faults)),
        revealed_by=frozenset(revealed),
        params=settings,
        weight=weight,
    )


TASKS: tuple[Scenario, ...] = (
    compose(
        "oom",
        name="easy",
        description="A rank's process died of a CUDA out-of-memory error and its peers hang in "
        "the AllReduce; find the rank in noisy telemetry and restart it.",
    ),
    compose(
        "congestion",
        name="medium",
        description="The ring crosses an oversubscribed spine and bus bandwidth is down 30-60%; "
        "re-form the ring off the congested spine and confirm the fix holds under jitter.",
    ),
    compose(
        "desync",
        name="hard",
        description="Ranks compiled different collectives and the job hangs; a staged patch "
        "(identify, diff, apply) after the flight recorders show the mismatch.",
    ),
    compose(
        "oom",
        "congestion",
        "desync",
        name="cascade",
        description="OOM, then spine congestion, then desync, with strict phase gating: a fix "
        "needs its investigation, and a phase opens only when the one before is confirmed.",
        max_steps=120,
        gated=True,
    ),
    compose(
        "version",
        "congestion",
        name="fleet_coordination",
        description="One node loads NCCL 2.21.5 through LD_LIBRARY_PATH while its peers run "
        "2.27.0, and the ring may cross a congested spine; where the version is wrong, consult "
        "the specialists, poll a consensus and fix it with a two-worker coalition.",
        max_steps=50,
        coalition=True,
    ),
    compose(
        "oom",
        "version",
        "congestion",
        "desync",
        name="black_swan",
        description="The source's four faults may all strike, with decoys (a stale Xid 79 "
        "from before the job, a rank at its memory high watermark that is healthy), a kernel "
        "log that may have "
        "wrapped, a certain secondary OOM, and irreversible mistakes: a wrong restart or "
        "library fix, or any destructive action, destroys the run. Lost training must stay "
        "within a 90-minute SLO.",
        max_steps=300,
        harsh=True,
        slo_minutes=90.0,
    ),
    compose(
        "gpu_lost",
        name="gpu_lost",
        description="A GPU fell off the bus (Xid 79): its rank is gone and its peers hang. A "
        "restart cannot bring it back; drain the node and reschedule onto a spare.",
    ),
)

CHALLENGES: tuple[Scenario, ...] = (
    compose("oom", "version"),
    compose("congestion", "desync"),
    compose("gpu_lost", "congestion"),
    compose("version", "desync", held_out=True),
    compose("oom", "congestion", "version", held_out=True),
)
"""The challenge generator's five compositions; the last two are held out of ``train``."""

FAMILY_REVEALED_BY = READS | frozenset({"drain_node", "restart_job", "reschedule", "wait"})
"""Tools whose reports or effects may tell one family from another before anything else has:
every read; the destructive calls, which end a harsh run (``reschedule`` needs a drain); and
``wait``, by time alone: the episode ends at the family's step budget (50, 80, 120 or 300
calls), so an agent still acting after its 50th call knows the family has a longer one. Every
other remediation needs evidence from a read first (its precondition), and the incident text,
the clock, the window, the allowance and the phase are the same for every family."""

MIXED = mixed(
    (*TASKS, *CHALLENGES),
    family_revealed_by=FAMILY_REVEALED_BY,
    description="The seed draws the task or challenge (each weighted 1; held-out challenges only "
    "on dev and test seeds), then whether each of its faults is present (85%) and how badly; "
    "nothing the agent sees names it.",
)
SCENARIOS: tuple[Scenario, ...] = (*TASKS, *CHALLENGES, MIXED)
TASK_NAMES = tuple(t.name for t in TASKS)


_SUBGOALS = {
    "oom": ("oom_located", "oom_fixed"),
    "gpu_lost": ("lost_located", "lost_replaced"),
    "congestion": ("congestion_located", "congestion_fixed", "congestion_confirmed"),
    "desync": ("desync_located", "desync_identified", "desync_diffed", "desync_patched"),
    "version": ("version_located", "version_fixed"),
}
COORDINATION_SUBGOALS = ("specialists_consulted", "consensus_polled", "coalition_fixed")


def subgoals(scenario: Scenario, present: tuple[str, ...]) -> list[str]:
    """The sub-goals an episode is graded on: those of each fault present (in the order they
    are usually reached), the coordination sub-goals where a coalition task's wrong NCCL is
    present, and the confirmed recovery.
    """
    names = [goal for fault in scenario.faults if fault in present for goal in _SUBGOALS[fault]]
    if scenario.params["coalition"] and "version" in present:
        names += COORDINATION_SUBGOALS
    return [*names, "recovery_confirmed"]


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
