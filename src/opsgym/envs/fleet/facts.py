"""The hidden facts of one fleet episode: drawn from the seed, forced by overrides.

Every fact is drawn in every family, in one fixed order, so that forcing one of them (or the
family, in ``mixed``) leaves the others as the seed made them. Rates (per fault of the task):

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

from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.fleet.tasks import (
    FAULTS,
    GPUS_PER_NODE,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PATCH_FILES,
    FleetConfigError,
    Level,
)

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
