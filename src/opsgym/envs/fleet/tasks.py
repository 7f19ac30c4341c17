"""Tasks, challenge compositions, curriculum levels, public settings and the hidden facts.

A *task* is a scenario with its own grader settings: which faults it injects (in the order they
manifest), how long its incident window is, how many tokens a good run needs, whether its phases
are gated, whether specialists must be consulted. The challenge generator composes further
scenarios from the same fault mechanisms; some of them are held out of the ``train`` split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.scenarios import Scenario

N_NODES = 4
GPUS_PER_NODE = 8
N_RANKS = N_NODES * GPUS_PER_NODE
N_SPINES = 2
LEAF_OF_NODE = (0, 0, 1, 1)
"""Nodes 0-1 hang off leaf 0, nodes 2-3 off leaf 1; every leaf has an uplink to every spine."""
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
BENCH_TARGET = 0.90
"""A benchmark sample holds when its bus bandwidth is at least this share of nominal."""
BENCH_STREAK = 3
"""Consecutive holding samples after the last topology change that confirm a fabric fix."""
FAULTS = ("oom", "congestion", "desync", "version")


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


LEVELS: dict[int, Level] = {
    1: Level(0.30, 0.20, 3, 0.10),
    2: Level(0.50, 0.35, 5, 0.25),
    3: Level(0.70, 0.50, 7, 0.40),
}


class FleetConfigError(OpsgymError, ValueError):
    """A config or override value of the fleet world that is out of range."""


class Settings(BaseModel):
    """The public settings of one episode (``config``), with their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    level: int = Field(1, ge=1, le=3, description="Curriculum level 1-3 (see ``LEVELS``).")
    downtime_cost_per_minute: float = Field(
        5000.0, ge=0, description="Dollars a minute of lost training costs (reported)."
    )
    coordination: bool = Field(True, description="Whether the specialists can be consulted.")
    token_allowance: int | None = Field(
        None,
        ge=1,
        description="Tokens a good run may spend before its grade is scaled down; None takes "
        "the task's default.",
    )

    @classmethod
    def parse(cls, config: dict[str, Any]) -> Settings:
        """Validate ``config``: an unknown key or a bad value raises, naming it and the value."""
        for key in config:
            if key not in cls.model_fields:
                raise UnknownNameError("fleet config key", key, cls.model_fields)
        try:
            return cls.model_validate(config)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise FleetConfigError(
                f"config {err['loc'][0]}: {err['msg']}, got {err['input']!r}"
            ) from None


_READS = frozenset(
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


def compose(
    *faults: str,
    name: str | None = None,
    description: str | None = None,
    held_out: bool = False,
    **params: Any,
) -> Scenario:
    """The challenge generator: a scenario injecting ``faults`` in the order given.

    Desync manifests only once every fault before it is fixed (the job must run to reach the
    data-dependent branch); the others are active from the start. ``params`` override the task
    defaults: ``window`` (minutes), token ``allowance``, ``gated`` (strict phase gating),
    ``harsh`` (decoys, wrapped kernel logs, irreversible mistakes), ``coalition`` (coordination
    sub-goals) and ``slo_minutes`` (a bound on lost training for a pass).
    """
    for fault in faults:
        if fault not in FAULTS:
            raise UnknownNameError("fleet fault", fault, FAULTS)
    hidden: dict[str, tuple[Any, ...]] = {}
    if "oom" in faults:
        hidden["oom_rank"] = (5, 22)
    if "congestion" in faults:
        hidden["congested_spine"] = (0, 1)
    if "desync" in faults:
        hidden["desync_rank"] = (3, 27)
        hidden["desync_file"] = (PATCH_FILES[0], PATCH_FILES[2])
    if "version" in faults:
        hidden["version_node"] = (1, 3)
    n = len(faults)
    settings = {
        "window": 60.0 + 60.0 * n,
        "allowance": 600 + 600 * n,
        "gated": False,
        "harsh": False,
        "coalition": False,
        "slo_minutes": None,
    }
    settings.update(params)
    revealed = _READS | ({"restart_rank", "fix_library_path"} if settings["harsh"] else set())
    return Scenario(
        name=name or "+".join(faults),
        description=description or "A generated incident: " + ", then ".join(faults) + ".",
        faults=tuple(faults),
        held_out=held_out,
        hidden=hidden,
        revealed_by=frozenset(revealed),
        params=settings,
    )


TASKS: tuple[Scenario, ...] = (
    compose(
        "oom",
        name="easy",
        description="One rank ran out of memory (XID 79) and the AllReduce stalls fleet-wide; "
        "find the failing rank in noisy telemetry and restart it.",
        window=90.0,
        allowance=1200,
    ),
    compose(
        "congestion",
        name="medium",
        description="The ring crosses an oversubscribed spine and bus bandwidth is down 40% or "
        "more; re-form the ring off the congested spine and confirm the fix holds under jitter.",
        window=120.0,
        allowance=1500,
    ),
    compose(
        "desync",
        name="hard",
        description="Ranks compiled different collectives and the job hangs; a staged patch "
        "(identify, diff, apply) after the flight recorders show the mismatch.",
        window=150.0,
        allowance=1800,
    ),
    compose(
        "oom",
        "congestion",
        "desync",
        name="cascade",
        description="OOM, then spine congestion, then desync, with strict phase gating: a fix "
        "needs its investigation, and a phase opens only when the one before is confirmed.",
        window=360.0,
        allowance=3600,
        gated=True,
    ),
    compose(
        "version",
        "congestion",
        name="fleet_coordination",
        description="One node loads NCCL 2.21.5 through LD_LIBRARY_PATH while its peers run "
        "2.27.0 and the ring crosses a congested spine; consult the specialists, poll a "
        "consensus and fix both with a two-worker coalition.",
        window=180.0,
        allowance=2400,
        coalition=True,
    ),
    compose(
        "oom",
        "version",
        "congestion",
        "desync",
        name="black_swan",
        description="Every fault at once with decoys (a stale XID from before the job, a rank "
        "that only looks out of memory), a kernel log that may have wrapped, a secondary OOM, "
        "and irreversible mistakes: a wrong restart or library fix, or any destructive action, "
        "destroys the run. Lost training must stay within a 90-minute SLO.",
        window=900.0,
        allowance=9000,
        harsh=True,
        slo_minutes=90.0,
    ),
)

CHALLENGES: tuple[Scenario, ...] = (
    compose("oom", "version"),
    compose("congestion", "desync"),
    compose("version", "desync", held_out=True),
    compose("oom", "congestion", "version", held_out=True),
)

SCENARIOS: tuple[Scenario, ...] = TASKS + CHALLENGES
TASK_NAMES = tuple(t.name for t in TASKS)


_SUBGOALS = {
    "oom": ("oom_located", "oom_fixed"),
    "congestion": ("congestion_located", "congestion_fixed", "congestion_confirmed"),
    "desync": ("desync_located", "desync_identified", "desync_diffed", "desync_patched"),
    "version": ("version_located", "version_fixed"),
}
COORDINATION_SUBGOALS = ("specialists_consulted", "consensus_polled", "coalition_fixed")


def subgoals(scenario: Scenario) -> list[str]:
    """The sub-goals a scenario is graded on, in the order they are usually reached."""
    names = [goal for fault in scenario.faults for goal in _SUBGOALS[fault]]
    if scenario.params["coalition"]:
        names += COORDINATION_SUBGOALS
    return [*names, "recovery_confirmed"]


def node_of(rank: int) -> int:
    """The node a rank runs on."""
    return rank // GPUS_PER_NODE


_CHOICES: dict[str, tuple[Any, ...]] = {
    "oom_rank": tuple(range(N_RANKS)),
    "secondary": (False, True),
    "secondary_offset": tuple(range(1, N_RANKS)),
    "congested_spine": tuple(range(N_SPINES)),
    "desync_rank": tuple(range(N_RANKS)),
    "desync_file": PATCH_FILES,
    "decoy_file_offset": tuple(range(1, len(PATCH_FILES))),
    "desync_op": ("nccl:all_gather", "nccl:reduce_scatter"),
    "version_node": tuple(range(N_NODES)),
    "decoy_rank": tuple(range(N_RANKS)),
    "stale_xid_node": tuple(range(N_NODES)),
    "dmesg_wrapped": (False, True),
}
"""The values each discrete hidden fact can take."""
_SPANS: dict[str, tuple[float, float]] = {
    "bw_drop": (0.0, 0.9),
    "spread_minutes": (1.0, 1e6),
    "recur_minutes": (0.0, 1e6),
    "worker_error": (0.0, 1.0),
}
"""The range of each continuous hidden fact."""


def draw(scenario: Scenario, level: Level, rng: np.random.Generator) -> dict[str, Any]:
    """Draw the hidden facts of one episode, every one in every family, in one order, so that
    forcing one of them (``overrides``) leaves the others as the seed made them.
    """
    u = rng.random(16)
    return {
        "oom_rank": int(u[0] * N_RANKS),
        "secondary": bool(u[1] < level.secondary) or scenario.params["harsh"],
        "secondary_offset": 1 + int(u[2] * (N_RANKS - 1)),
        "congested_spine": int(u[3] * N_SPINES),
        "bw_drop": round(0.40 + 0.20 * float(u[4]), 3),
        "desync_rank": int(u[5] * N_RANKS),
        "desync_file": PATCH_FILES[int(u[6] * len(PATCH_FILES))],
        "decoy_file_offset": 1 + int(u[7] * (len(PATCH_FILES) - 1)),
        "desync_op": "nccl:all_gather" if u[8] < 0.5 else "nccl:reduce_scatter",
        "version_node": int(u[9] * N_NODES),
        "spread_minutes": round(40.0 + 40.0 * float(u[10]), 1),
        "recur_minutes": round(4.0 + 8.0 * float(u[11]), 1),
        "decoy_rank": int(u[12] * N_RANKS),
        "stale_xid_node": int(u[13] * N_NODES),
        "worker_error": 0.25 if scenario.params["coalition"] else 0.15,
        "dmesg_wrapped": bool(u[14] < 0.35) and scenario.params["harsh"],
    }


def _valid(key: str, value: Any) -> bool:
    if key in _SPANS:
        lo, hi = _SPANS[key]
        return isinstance(value, int | float) and not isinstance(value, bool) and lo <= value <= hi
    choices = _CHOICES[key]
    return isinstance(value, bool) == isinstance(choices[0], bool) and value in choices


def force(facts: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``facts`` with ``overrides`` applied; unknown names and out-of-range values raise."""
    for key, value in overrides.items():
        if key not in facts:
            raise UnknownNameError("fleet override", key, facts)
        if not _valid(key, value):
            choices = _CHOICES.get(key, ())
            if key in _SPANS:
                allowed = "{} to {}".format(*_SPANS[key])
            elif all(type(c) is int for c in choices):
                allowed = f"{choices[0]}..{choices[-1]}"
            else:
                allowed = ", ".join(map(repr, choices))
            raise FleetConfigError(f"override {key} must be in {allowed}, got {value!r}")
    out = dict(facts)
    out.update(overrides)
    return out


def derived(facts: dict[str, Any]) -> dict[str, Any]:
    """Facts that follow from the drawn ones (kept apart so that overrides move them along)."""
    desync_index = PATCH_FILES.index(facts["desync_file"])
    decoy_rank = facts["decoy_rank"]
    if decoy_rank == facts["oom_rank"]:
        decoy_rank = (decoy_rank + 9) % N_RANKS
    return {
        "secondary_rank": (facts["oom_rank"] + facts["secondary_offset"]) % N_RANKS,
        "decoy_file": PATCH_FILES[(desync_index + facts["decoy_file_offset"]) % len(PATCH_FILES)],
        "decoy_rank": decoy_rank,
        "stale_xid_gpu": (decoy_rank + 3) % GPUS_PER_NODE,
    }
