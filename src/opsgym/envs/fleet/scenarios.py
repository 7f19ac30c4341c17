"""The fleet's scenarios: tasks, challenge compositions, ``mixed``, curriculum levels, public
settings, and the hidden facts each seed draws.

A *task* is a fault family with its own grader settings: which faults may strike (in the order
they manifest), the step budget, whether its phases are gated, whether its mistakes are
irreversible (``harsh``), whether the specialists must be consulted, its SLO on lost training.
Each fault of a task is present on a share of the seeds only (``presence``) and its severity is
drawn too, so a task is a prior, never an answer; a seed with no fault present is a false alarm.

What the agent sees is the same whatever the family: one incident window, one token allowance,
a generic incident text drawn from a pool. The family shows only through what the tools report,
through what the agent's own actions do (an irreversible mistake ends a ``harsh`` run), and
through the end of the episode (the step budget).

## Hidden facts
Drawn from the seed, forced by overrides (``draw``, ``force``). Every fact is drawn in every
family, in one fixed order, so that forcing one of them (or the family, in ``mixed``) leaves the
others as the seed made them. Rates (per fault of the task):

| fact              | distribution                                                        |
|-------------------|---------------------------------------------------------------------|
| `<fault>_present` | the task's ``presence`` (85% by default), independently per fault   |
| `oom_rank`        | uniform over the 32 ranks                                           |
| `oom_pair`        | 20%: a second rank, on another node, runs out of memory as well     |
| `lost_rank`       | uniform: the GPU that fell off the bus                              |
| `congested_spine` | uniform over the two spines                                         |
| `bw_drop`         | uniform 0.30-0.60: the congested spine's loss of bandwidth          |
| `desync_rank`     | uniform; `desync_file` uniform over the five files; op 50/50        |
| `recur_minutes`   | uniform 4-12: how soon a desync hidden by a job restart returns     |
| `version_node`    | uniform over the four nodes                                         |
| `spread_minutes`  | uniform 40-80: until truncation errors stall the whole job          |
| `secondary`       | the level's rate (x the difficulty multiplier); always when harsh   |
| decoys            | `decoy_rank`, `stale_xid_node` uniform; `dmesg_wrapped` 35% if harsh |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from opsgym.core.curriculum import Curriculum
from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.scenarios import Scenario, mixed
from opsgym.core.spec import WorldConfig
from opsgym.envs.fleet.domain import (
    FAULTS,
    GPUS_PER_NODE,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    TOKEN_ALLOWANCE,
)

PRESENCE = 0.85
"""Default share of a task's seeds on which each of its faults is present."""

FAULT_SLO = {"oom": 60.0, "congestion": 60.0, "gpu_lost": 75.0, "desync": 75.0, "version": 75.0}
"""The SLO on lost training (minutes at full loss) of an incident of one fault: a restart or a
ring change is quick; a drain and reschedule, a staged patch or a library fix take longer.
Set so that the scripted oracle keeps within it even at level 3 (a scrape every 7 calls) on
99% of 300 test seeds (its worst there: easy 61, medium 56, hard 65, gpu_lost 71; at level 1:
26, 35, 49, 45)."""
MULTI_SLO = 120.0
"""The SLO of an incident of several faults (the oracle's worst at level 3: cascade 112,
oom+congestion+version 112; at level 1: 73 and 48). ``black_swan`` keeps the source's 90."""


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


def curriculum(**kwargs) -> Curriculum:
    """An adaptive curriculum over the fleet's three levels; ``config`` feeds ``make``."""
    return Curriculum([{"level": n} for n in sorted(LEVELS)], **kwargs)


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
    sub-goals) and ``slo_minutes`` (the bound on lost training: beyond it a recovery is
    ``recovered_late``; by default ``FAULT_SLO`` of a single fault, ``MULTI_SLO`` for several).
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
        "slo_minutes": FAULT_SLO[faults[0]] if n == 1 else MULTI_SLO,
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


OOM_PAIR = 0.20
"""Share of OOM episodes in which a second rank runs out of memory too."""

N_DRAWS = 23

_CHOICES: dict[str, tuple[Any, ...]] = {
    **{f"{fault}_present": (False, True) for fault in FAULTS},
    "oom_rank": tuple(range(N_RANKS)),
    "oom_pair": (False, True),
    "oom_pair_offset": tuple(range(8, 24)),
    "lost_rank": tuple(range(N_RANKS)),
    "congested_spine": tuple(range(N_SPINES)),
    "desync_rank": tuple(range(N_RANKS)),
    "desync_file": PATCH_FILES,
    "decoy_file_offset": tuple(range(1, len(PATCH_FILES))),
    "desync_op": ("nccl:all_gather", "nccl:reduce_scatter"),
    "version_node": tuple(range(N_NODES)),
    "secondary": (False, True),
    "secondary_offset": tuple(range(1, N_RANKS)),
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
    """Draw the hidden facts of one episode, every one in every family, in one order."""
    u = rng.random(N_DRAWS).tolist()
    p, params = scenario.params["presence"], scenario.params
    harsh = bool(params["harsh"])
    return {
        "oom_present": u[0] < p,
        "oom_rank": int(u[1] * N_RANKS),
        "oom_pair": u[2] < OOM_PAIR,
        "oom_pair_offset": 8 + int(u[3] * 16),
        "gpu_lost_present": u[4] < p,
        "lost_rank": int(u[5] * N_RANKS),
        "congestion_present": u[6] < p,
        "congested_spine": int(u[7] * N_SPINES),
        "bw_drop": round(0.30 + 0.30 * u[8], 3),
        "desync_present": u[9] < p,
        "desync_rank": int(u[10] * N_RANKS),
        "desync_file": PATCH_FILES[int(u[11] * len(PATCH_FILES))],
        "decoy_file_offset": 1 + int(u[12] * (len(PATCH_FILES) - 1)),
        "desync_op": "nccl:all_gather" if u[13] < 0.5 else "nccl:reduce_scatter",
        "recur_minutes": round(4.0 + 8.0 * u[14], 1),
        "version_present": u[15] < p,
        "version_node": int(u[16] * N_NODES),
        "spread_minutes": round(40.0 + 40.0 * u[17], 1),
        "secondary": u[18] < level.secondary or harsh,
        "secondary_offset": 1 + int(u[19] * (N_RANKS - 1)),
        "decoy_rank": int(u[20] * N_RANKS),
        "stale_xid_node": int(u[21] * N_NODES),
        "dmesg_wrapped": u[22] < 0.35 and harsh,
        "worker_error": 0.25 if params["coalition"] else 0.15,
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


def derived(facts: dict[str, Any], present: tuple[str, ...]) -> dict[str, Any]:
    """Facts that follow from the drawn ones (kept apart so that overrides move them along)."""
    desync_index = PATCH_FILES.index(facts["desync_file"])
    oom_ranks = [facts["oom_rank"]]
    if facts["oom_pair"]:
        oom_ranks.append((facts["oom_rank"] + facts["oom_pair_offset"]) % N_RANKS)
    busy = set(oom_ranks) | ({facts["lost_rank"]} if "gpu_lost" in present else set())
    decoy_rank = facts["decoy_rank"]
    while decoy_rank in busy:
        decoy_rank = (decoy_rank + 9) % N_RANKS
    secondary = (facts["oom_rank"] + facts["secondary_offset"]) % N_RANKS
    while secondary in busy:
        secondary = (secondary + 5) % N_RANKS
    return {
        "present": list(present),
        "oom_ranks": oom_ranks if "oom" in present else [],
        "secondary_rank": secondary,
        "decoy_file": PATCH_FILES[(desync_index + facts["decoy_file_offset"]) % len(PATCH_FILES)],
        "decoy_rank": decoy_rank,
        "stale_xid_gpu": (decoy_rank + 3) % GPUS_PER_NODE,
    }
