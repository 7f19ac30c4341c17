"""Fault families of the release environment, and the parameters each seed draws."""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.scenarios import Scenario

_HEALTH = frozenset({"health_check", "verify"})

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "nominal",
        "Nothing goes wrong: every tool tells the truth.",
        hidden={"v2_broken": (False, True)},
        revealed_by=_HEALTH,
    ),
    Scenario(
        "deploy_timeout",
        "The deploy reports a timeout; whether it committed is drawn from the seed and only "
        "inspect tells. A blind retry of a committed deploy restarts green.",
        faults=("deploy_timeout",),
        hidden={"deploy_committed": (True, False)},
        revealed_by=frozenset({"inspect"}),
    ),
    Scenario(
        "stale_health",
        "Health checks serve a cached result from before the last change for a few minutes; "
        "v2 may truly be broken. The report's checked_at gives it away.",
        faults=("stale_health",),
        hidden={"v2_broken": (True, False)},
        revealed_by=_HEALTH,
        params={"p_broken": 0.5},
    ),
    Scenario(
        "partial_migration_ack",
        "The schema migration is written but its acknowledgement is lost (usually); a blind "
        "retry applies it twice and corrupts data.",
        faults=("migration_ack_lost",),
        hidden={"migration_written": (True, False)},
        revealed_by=frozenset({"inspect", "verify", "retry"}),
    ),
    Scenario(
        "v2_broken",
        "v2 is broken: health checks say so once fresh, and only a rollback is safe.",
        faults=("v2_broken",),
        hidden={"v2_broken": (True, False)},
        revealed_by=_HEALTH,
    ),
    Scenario(
        "flapping_health",
        "v2 crash-loops: its health flips between healthy and unhealthy, but the restart count "
        "in every report keeps rising.",
        faults=("v2_flapping",),
        held_out=True,
        hidden={"v2_flapping": (True, False)},
        revealed_by=_HEALTH,
    ),
    Scenario(
        "partial_traffic_shift",
        "The router applies the first traffic shift only partly while reporting it done; "
        "inspect or verify shows the real split.",
        faults=("partial_shift",),
        hidden={"shift_fraction": (0.5, 1.0)},
        revealed_by=frozenset({"inspect", "verify"}),
    ),
    Scenario(
        "degrade_under_load",
        "v2 is fine idle but cannot hold full traffic; at a canary step its error rate is "
        "already elevated, at full load it fails after a few minutes.",
        faults=("v2_degrades",),
        hidden={"v2_degrades": (True, False)},
        revealed_by=_HEALTH,
    ),
    Scenario(
        "timeout_and_stale",
        "A deploy timeout and a stale health cache together.",
        faults=("deploy_timeout", "stale_health"),
        held_out=True,
        hidden={"deploy_committed": (True, False), "v2_broken": (True, False)},
        revealed_by=frozenset({"inspect"}) | _HEALTH,
        params={"p_broken": 0.3},
    ),
    Scenario(
        "ack_loss_and_partial_shift",
        "A lost migration acknowledgement and a partly applied traffic shift together.",
        faults=("migration_ack_lost", "partial_shift"),
        hidden={"migration_written": (True, False), "shift_fraction": (0.5, 1.0)},
        revealed_by=frozenset({"inspect", "verify", "retry"}),
    ),
)


def draw(scenario: Scenario, rng: np.random.Generator) -> dict[str, Any]:
    """Draw the hidden facts of one episode. Every draw happens in every family, in one order,
    so forcing one fact (``overrides``) leaves all the others as the seed made them.
    """
    u = rng.random(8)
    has = scenario.has
    return {
        "deploy_committed": bool(u[0] < 0.5),
        "v2_broken": has("v2_broken")
        or (has("stale_health") and bool(u[1] < scenario.params.get("p_broken", 0.0))),
        "migration_written": bool(u[2] < 0.8),
        "v2_flapping": has("v2_flapping"),
        "v2_degrades": has("v2_degrades"),
        "shift_fraction": round(0.3 + 0.5 * float(u[3]), 2) if has("partial_shift") else 1.0,
        "stale_minutes": (2.0 + float(np.floor(4 * u[4]))) if has("stale_health") else 0.0,
        "degrade_after": 3.0 + float(np.floor(4 * u[5])),
        "deploy_minutes": 4.0 + float(np.floor(3 * u[6])),
        "migrate_minutes": 3.0 + float(np.floor(3 * u[7])),
    }
