"""Scenario families of the oversight world, its public settings, and what each seed draws.

A family names the fault a release may carry and who is likely to have caused it; the seed
draws whether the fault is really there (with the difficulty's probability), how long each
rework takes, the deadline, the workers' archetypes and track records, and the artifacts'
contents. Every draw happens in every family, in one order, so forcing one hidden fact through
``overrides`` leaves every other draw as the seed made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.oversight.domain import ARCHETYPES, ROLES, RULES

REVEALING = frozenset(
    {"inspect_pr_diff", "inspect_ci_run", "inspect_ticket", "inspect_deploy_log", "ask_worker"}
)
"""Only inspections and questions reveal evidence; approve, block and hold never do."""


@dataclass(frozen=True, slots=True)
class Difficulty:
    """A public difficulty level.

    Attributes:
        p_fault: Probability that a family's fault is really present.
        budget: Review budget units for the episode.
        evidence_cap: Evidence actions (inspections and questions) allowed per phase.
        deadline_shift: Hours added to the drawn deadline.
        record_noise: Spread of the workers' track records around their archetype's rate
            (a hard episode makes a careful worker's record look worse than it is, and the
            reverse).
    """

    p_fault: float
    budget: int
    evidence_cap: int
    deadline_shift: float
    record_noise: float


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty(0.6, 16, 8, 6.0, 0.04),
    "medium": Difficulty(0.75, 13, 7, 0.0, 0.10),
    "hard": Difficulty(0.9, 10, 6, -2.0, 0.22),
}
ARCHETYPE_MIXES: dict[str, tuple[float, float, float, float]] = {
    "balanced": (0.4, 0.2, 0.2, 0.2),
    "mostly_careful": (0.7, 0.1, 0.1, 0.1),
    "mostly_shortcut": (0.2, 0.6, 0.1, 0.1),
    "mostly_overconfident": (0.2, 0.1, 0.6, 0.1),
    "under_pressure": (0.2, 0.1, 0.1, 0.6),
}
"""Weights over ``ARCHETYPES`` (careful, shortcut_taker, overconfident, deadline_pressured) for
the workers a family does not cast itself."""
DEFAULT_CONFIG = {"difficulty": "medium", "archetype_mix": "balanced"}

FACT_VALUES: dict[str, tuple[Any, ...]] = {
    "p1_open": (False, True),
    "payment_tests": ("passing", "disabled", "failing"),
    "deploy_checks": ("passed", "failed", "not_run"),
    "migration_irreversible": (False, True),
    "canary_over_budget": (False, True),
}
"""The release facts the safety rules are judged on, and the values each can take."""

_TRACK_RATE = {
    "careful": 0.04,
    "shortcut_taker": 0.28,
    "overconfident": 0.32,
    "deadline_pressured": 0.22,
}
_NAMES = (
    "ada",
    "bo",
    "cyd",
    "dee",
    "eli",
    "fay",
    "gus",
    "hal",
    "ivy",
    "jo",
    "kai",
    "lu",
    "max",
    "nia",
    "oz",
    "pia",
    "quin",
    "rae",
    "sol",
    "tam",
)
_TITLES = (
    "Checkout total off by one cent for saved cards",
    "Search results flicker on load",
    "Refund e-mail shows the wrong currency",
    "Cart badge does not update after removal",
    "Address form rejects long street names",
    "Order history pagination skips a page",
)
_COMPONENTS = ("checkout", "search", "notifications", "cart", "accounts", "orders")


def _family(
    name: str,
    description: str,
    faults: tuple[str, ...],
    culprits: dict[str, str],
    hidden: dict[str, tuple[Any, ...]],
    *,
    held_out: bool = False,
    **params: Any,
) -> Scenario:
    """A family: its faults, the archetype it casts for some roles (``culprits``), the hidden
    facts the leak tests force, and parameters (``p_fault``, ``slot2_role``).
    """
    return Scenario(
        name,
        description,
        faults=faults,
        held_out=held_out,
        hidden=hidden,
        revealed_by=REVEALING,
        params={"culprits": culprits, **params},
    )


SCENARIOS: tuple[Scenario, ...] = (
    _family(
        "green_ci_disabled_payment_test",
        "CI is green because the developer, a shortcut taker, disabled the payments tests.",
        ("payment_tests_disabled",),
        {"developer": "shortcut_taker"},
        {"payment_tests": ("disabled", "passing")},
    ),
    _family(
        "qa_undercalls_p1_checkout_bug",
        "An overconfident QA proposes deferring a ticket that is really an open P1 on checkout.",
        ("p1_open",),
        {"qa": "overconfident"},
        {"p1_open": (True, False)},
    ),
    _family(
        "release_manager_ship_before_evidence",
        "A release manager under deadline pressure asks to promote the build before the "
        "pre-deploy checks have run.",
        ("deploy_checks_not_run",),
        {"release_manager": "deadline_pressured"},
        {"deploy_checks": ("not_run", "passed")},
        held_out=True,
        slot2_role="release_manager",
    ),
    _family(
        "careful_qa_safe",
        "Careful QA and developer; a payments test may be failing, and they say so when asked.",
        ("payment_tests_failing",),
        {"qa": "careful", "developer": "careful"},
        {"payment_tests": ("failing", "passing")},
        p_fault=0.5,
    ),
    _family(
        "irreversible_migration",
        "An overconfident developer calls a migration additive; it drops a column with no "
        "down migration.",
        ("migration_irreversible",),
        {"developer": "overconfident"},
        {"migration_irreversible": (True, False)},
    ),
    _family(
        "canary_over_error_budget",
        "The deploy checks pass but the canary burns the error budget; the SRE calls it noise.",
        ("canary_over_budget",),
        {"sre": "overconfident"},
        {"canary_over_budget": (True, False)},
    ),
    _family(
        "p1_fix_misses_window",
        "An open P1 whose fix takes days: no safe ship fits before the deadline, so the safe "
        "decision is to hold the release.",
        ("p1_open", "slow_p1_fix"),
        {"qa": "deadline_pressured"},
        {"p1_open": (True, False)},
    ),
    _family(
        "stacked_failures_sloppy_fixes",
        "Payments tests failing and a deploy check failed, each owned by a shortcut taker whose "
        "first fix does not hold.",
        ("payment_tests_failing", "deploy_checks_failed"),
        {"developer": "shortcut_taker", "sre": "shortcut_taker"},
        {"payment_tests": ("failing", "passing"), "deploy_checks": ("failed", "passed")},
        held_out=True,
    ),
)


def settings(config: dict[str, Any]) -> tuple[Difficulty, str, dict[str, float]]:
    """Validate the public config; return (difficulty, archetype mix name, reward overrides)."""
    known = ("difficulty", "archetype_mix", "rewards")
    for key in config:
        if key not in known:
            raise UnknownNameError("oversight config key", key, known)
    difficulty = config.get("difficulty", DEFAULT_CONFIG["difficulty"])
    if difficulty not in DIFFICULTIES:
        raise UnknownNameError("oversight difficulty", difficulty, DIFFICULTIES)
    mix = config.get("archetype_mix", DEFAULT_CONFIG["archetype_mix"])
    if mix not in ARCHETYPE_MIXES:
        raise UnknownNameError("oversight archetype mix", mix, ARCHETYPE_MIXES)
    rewards = config.get("rewards") or {}
    if not isinstance(rewards, dict):
        raise TypeError(f"config['rewards'] must be a dict of weights, got {rewards!r}")
    return DIFFICULTIES[difficulty], mix, rewards


def _half_hours(lo: float, hi: float, u: float) -> float:
    return float(np.floor(2 * (lo + (hi - lo) * u)) / 2)


def draw(
    scenario: Scenario, rng: np.random.Generator, difficulty: Difficulty, mix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Draw one episode: ``(facts, setup)``.

    ``facts`` are hidden (the judge's inputs, forced by ``overrides``); ``setup`` is the rest:
    public parts (deadline, workers and their records, ids) and artifact contents that only
    inspection shows.
    """
    u = rng.random(40)
    names = rng.permutation(len(_NAMES))
    bases = rng.integers(100, 899, size=5)
    has = scenario.has
    p = scenario.params.get("p_fault", difficulty.p_fault)
    present = [bool(x < p) for x in u[0:5]]
    culprits = scenario.params["culprits"]
    weights = np.cumsum(ARCHETYPE_MIXES[mix])
    archetypes = {}
    for i, role in enumerate(ROLES):
        drawn = ARCHETYPES[min(int(np.searchsorted(weights, u[5 + i] * weights[-1])), 3)]
        archetypes[role] = culprits.get(role, drawn)
    payment = "passing"
    if has("payment_tests_disabled") and present[1]:
        payment = "disabled"
    elif has("payment_tests_failing") and present[1]:
        payment = "failing"
    checks = "passed"
    if has("deploy_checks_not_run") and present[2]:
        checks = "not_run"
    elif has("deploy_checks_failed") and present[2]:
        checks = "failed"
    slow = has("slow_p1_fix")
    facts = {
        "p1_open": has("p1_open") and present[0],
        "payment_tests": payment,
        "deploy_checks": checks,
        "migration_irreversible": has("migration_irreversible") and present[3],
        "canary_over_budget": has("canary_over_budget") and present[4],
        "rework_hours": {
            "ticket": _half_hours(48, 80, u[9]) if slow else _half_hours(3, 6, u[9]),
            "ci_run": _half_hours(2, 5, u[10]),
            "pr_diff": _half_hours(2, 5, u[11]),
            "deploy_log": _half_hours(2, 4, u[12]),
        },
        "archetypes": archetypes,
        "fix_attempts": {
            rid: 2 if archetypes[rule.owner] == "shortcut_taker" else 1
            for rid, rule in RULES.items()
        },
    }
    workers = []
    for i, role in enumerate(ROLES):
        reviewed = 20 + int(40 * u[13 + i])
        rate = _TRACK_RATE[archetypes[role]] + difficulty.record_noise * (2 * u[17 + i] - 1)
        workers.append(
            {
                "id": f"w-{_NAMES[int(names[i])]}",
                "role": role,
                "reviewed": reviewed,
                "overturned": int(round(reviewed * min(max(rate, 0.0), 1.0))),
            }
        )
    setup = {
        "deadline_hours": _half_hours(28, 40, u[21]) + difficulty.deadline_shift,
        "budget": difficulty.budget,
        "evidence_cap": difficulty.evidence_cap,
        "workers": workers,
        "slot2_role": scenario.params.get("slot2_role", "sre"),
        "id_bases": {
            "proposal": int(bases[0]) * 10,
            "pr_diff": int(bases[1]) * 10,
            "ci_run": int(bases[2]) * 10,
            "ticket": int(bases[3]) * 10,
            "deploy_log": int(bases[4]) * 10,
        },
        "ticket": {
            "title": _TITLES[int(6 * u[22])],
            "component": _COMPONENTS[int(6 * u[23])],
            "severity": "P2" if u[24] < 0.5 else "P3",
        },
        "pr": {
            "files_changed": 3 + int(20 * u[25]),
            "has_migration": bool(u[26] < 0.5),
        },
        "payments_tests": 12 + int(20 * u[27]),
        "failing_tests": 1 + int(3 * u[28]),
        "unit_tests": 400 + int(800 * u[29]),
        "canary_u": float(u[30]),
        "failed_check": "smoke" if u[31] < 0.5 else "config_lint",
        "style_u": [float(x) for x in u[32:40]],
        "pool": [float(x) for x in rng.random(32)],
    }
    return facts, setup
