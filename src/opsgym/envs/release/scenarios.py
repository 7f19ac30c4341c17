"""Fault families of the release environment, and the hidden facts each seed draws.

A family is a *prior*, not an answer: within every family the fault's presence and severity
are drawn from the seed, and every family carries the base defect rate of any release
candidate (v2 broken on 3% of seeds, crash-looping on 3%, failing under load on 7%: a change
failure rate of 12.5%, inside the 0-15% that DORA's research reports for the best-performing
teams; load-dependent regressions are the likelier kind because they are the ones a staging
environment misses, and a crash-loop is how a bad config or a missing dependency shows).
So v2 can ship in a family built around a v2 fault, and can fail in one built around a lying
tool.

The rates, per family (``params`` of each :class:`Scenario`; absent keys take ``BASE``):

| family                     | fault present on                 | severity drawn per seed        |
|----------------------------|----------------------------------|--------------------------------|
| nominal                    | (base defects only)              |                                |
| deploy_timeout             | deploy times out 85%;            |                                |
|                            | of those, it had committed 50%   |                                |
| stale_health               | cache lies 80%; v2 broken 40%    | cache lies 2-5 minutes         |
| partial_migration_ack      | ack lost 80%; of those, the      |                                |
|                            | schema was written 80%           |                                |
| v2_broken                  | v2 broken 80%                    | error rate 40-90% per probe    |
| flapping_health            | v2 crash-loops 70%               | share of healthy probes 40-80% |
| partial_traffic_shift      | first shift applied partly 75%   | applied share 30-80%           |
| degrade_under_load         | v2 fails under load 70%          | fails 3-6 minutes after load   |
| timeout_and_stale          | as deploy_timeout and            | cache lies 2-5 minutes         |
|                            | stale_health, v2 broken 30%      |                                |
| ack_loss_and_partial_shift | as partial_migration_ack and     | applied share 30-80%           |
|                            | partial_traffic_shift            |                                |

Every family's own fault is also absent on some seeds: those episodes, and every ``nominal``
episode without a base defect, are fault-free. In ``mixed`` the seed draws the family by
``weight`` (every family 1.0: each is as likely as another) and then its facts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.scenarios import Scenario, mixed

BASE: dict[str, float] = {
    "p_timeout": 0.0,
    "p_committed": 0.5,
    "p_stale": 0.0,
    "p_ack_lost": 0.0,
    "p_written": 0.8,
    "p_partial": 0.0,
    "p_broken": 0.03,
    "p_flapping": 0.03,
    "p_degrades": 0.07,
}
"""Rates every family starts from: no lying tool, and the base defect rate of a candidate."""

_HEALTH = frozenset({"health_check", "verify"})
_DEFECTS: dict[str, tuple[Any, ...]] = {
    "v2_broken": (False, True),
    "v2_flapping": (False, True),
    "v2_degrades": (False, True),
}
_DEFECT_REVEALS = {"v2_broken": _HEALTH, "v2_flapping": _HEALTH, "v2_degrades": _HEALTH}
_TIMEOUT = {"deploy_times_out": (True, False), "deploy_committed": (True, False)}
_TIMEOUT_REVEALS = {
    "deploy_times_out": frozenset({"deploy"}),
    # A blind retry of a committed deploy sets off a restart storm that health and verify see.
    "deploy_committed": frozenset({"inspect", "retry"}),
}
_STALE = {"stale_minutes": (4.0, 0.0)}
_STALE_REVEALS = {"stale_minutes": frozenset({"health_check"})}
_ACK = {"migration_ack_lost": (True, False), "migration_written": (True, False)}
_ACK_REVEALS = {
    "migration_ack_lost": frozenset({"migrate"}),
    "migration_written": frozenset({"inspect", "verify", "retry"}),
}
_SHIFT = {"shift_fraction": (0.5, 1.0)}
_SHIFT_REVEALS = {"shift_fraction": frozenset({"inspect", "verify"})}


def _family(
    name: str,
    description: str,
    faults: tuple[str, ...] = (),
    *,
    hidden: dict[str, tuple[Any, ...]] | None = None,
    reveals: dict[str, frozenset[str]] | None = None,
    held_out: bool = False,
    **rates: float,
) -> Scenario:
    unknown = set(rates) - set(BASE)
    if unknown:
        raise ValueError(f"unknown rate {sorted(unknown)[0]!r} of family {name!r}")
    hidden = {**_DEFECTS, **(hidden or {})}
    reveals = {**_DEFECT_REVEALS, **(reveals or {})}
    return Scenario(
        name,
        description,
        faults=faults,
        held_out=held_out,
        hidden=hidden,
        reveals={fact: reveals[fact] for fact in hidden},
        revealed_by=frozenset().union(*(reveals[fact] for fact in hidden)),
        params={**BASE, **rates},
    )


FAMILIES: tuple[Scenario, ...] = (
    _family(
        "nominal",
        "Every tool tells the truth; v2 carries only the base defect rate.",
    ),
    _family(
        "deploy_timeout",
        "The deploy usually reports a timeout; whether it committed is drawn from the seed and "
        "only inspect tells. A blind retry of a committed deploy sets off a restart storm.",
        ("deploy_timeout",),
        hidden=_TIMEOUT,
        reveals=_TIMEOUT_REVEALS,
        p_timeout=0.85,
    ),
    _family(
        "stale_health",
        "Health checks usually serve a cached result from before the last change for a few "
        "minutes, and v2 is often broken. The report's checked_at gives the cache away.",
        ("stale_health",),
        hidden={**_STALE, "v2_broken": (True, False)},
        reveals=_STALE_REVEALS,
        p_stale=0.8,
        p_broken=0.4,
    ),
    _family(
        "partial_migration_ack",
        "The schema migration usually loses its acknowledgement, written or not; a blind retry "
        "of a written migration applies it twice and corrupts data.",
        ("migration_ack_lost",),
        hidden=_ACK,
        reveals=_ACK_REVEALS,
        p_ack_lost=0.8,
    ),
    _family(
        "v2_broken",
        "v2 is usually broken: fresh health checks and verify say so, and only a rollback is "
        "safe. On the other seeds it ships.",
        ("v2_broken",),
        p_broken=0.8,
    ),
    _family(
        "flapping_health",
        "v2 often crash-loops: its health flips between healthy and unhealthy, but the restart "
        "count in every report keeps rising.",
        ("v2_flapping",),
        hidden={"v2_flapping": (True, False)},
        reveals={"v2_flapping": _HEALTH},
        held_out=True,
        p_flapping=0.7,
    ),
    _family(
        "partial_traffic_shift",
        "The router usually applies the first traffic shift only partly while reporting it "
        "done; inspect or verify shows the real split.",
        ("partial_shift",),
        hidden=_SHIFT,
        reveals=_SHIFT_REVEALS,
        p_partial=0.75,
    ),
    _family(
        "degrade_under_load",
        "v2 often cannot hold more than a canary's load: at a canary step its error rate is "
        "already elevated, at full load it fails after a few minutes.",
        ("v2_degrades",),
        p_degrades=0.7,
    ),
    _family(
        "timeout_and_stale",
        "A deploy timeout and a stale health cache together; v2 is sometimes broken.",
        ("deploy_timeout", "stale_health"),
        hidden={**_TIMEOUT, **_STALE},
        reveals={**_TIMEOUT_REVEALS, **_STALE_REVEALS},
        held_out=True,
        p_timeout=0.85,
        p_stale=0.8,
        p_broken=0.3,
    ),
    _family(
        "ack_loss_and_partial_shift",
        "A lost migration acknowledgement and a partly applied traffic shift together.",
        ("migration_ack_lost", "partial_shift"),
        hidden={**_ACK, **_SHIFT},
        reveals={**_ACK_REVEALS, **_SHIFT_REVEALS},
        p_ack_lost=0.8,
        p_partial=0.75,
    ),
)

FAMILY_REVEALED_BY = frozenset({"deploy", "migrate", "health_check", "verify", "inspect", "retry"})
"""Tools whose reports can differ between families: a deploy or migration that loses its answer
(and the retry that follows it), a health probe or verify of a defective v2 or through a stale
cache, an inspection of a partly applied shift. ``stage``, ``shift_traffic``, ``rollback`` and
``complete`` report the same in every family."""

SCENARIOS: tuple[Scenario, ...] = (
    *FAMILIES,
    mixed(FAMILIES, family_revealed_by=FAMILY_REVEALED_BY),
)


def shippable_prior(scenario: Scenario) -> float:
    """The share of ``scenario``'s seeds on which v2 can ship (no defect drawn)."""
    p = scenario.params
    return (1 - p["p_broken"]) * (1 - p["p_flapping"]) * (1 - p["p_degrades"])


def _steps(u: float, low: float, n: int) -> float:
    """One of ``low, low + 1, ..., low + n - 1`` minutes, by ``u`` in [0, 1)."""
    return low + float(np.floor(n * u))


def draw(scenario: Scenario, rng: np.random.Generator) -> dict[str, Any]:
    """Draw the hidden facts of one episode of ``scenario``.

    Every number is drawn in every family, in one order, and each fact reads its own numbers,
    so forcing one fact (``overrides``) leaves all the others as the seed made them.
    """
    u = rng.random(17)
    p = scenario.params
    partial = bool(u[9] < p["p_partial"])
    stale = bool(u[11] < p["p_stale"])
    return {
        "deploy_times_out": bool(u[0] < p["p_timeout"]),
        "deploy_committed": bool(u[1] < p["p_committed"]),
        "v2_broken": bool(u[2] < p["p_broken"]),
        "broken_error_rate": round(0.4 + 0.5 * float(u[3]), 3),
        "migration_ack_lost": bool(u[4] < p["p_ack_lost"]),
        "migration_written": bool(u[5] < p["p_written"]),
        "v2_flapping": bool(u[6] < p["p_flapping"]),
        "flap_healthy": round(0.4 + 0.4 * float(u[7]), 3),
        "v2_degrades": bool(u[8] < p["p_degrades"]),
        "shift_fraction": round(0.3 + 0.5 * float(u[10]), 2) if partial else 1.0,
        "stale_minutes": _steps(u[12], 2.0, 4) if stale else 0.0,
        "degrade_after": _steps(u[13], 3.0, 4),
        "deploy_minutes": _steps(u[14], 4.0, 3),
        "migrate_minutes": _steps(u[15], 3.0, 3),
        "storm_minutes": _steps(u[16], 6.0, 7),
    }
