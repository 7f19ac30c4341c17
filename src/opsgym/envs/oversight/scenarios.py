"""Scenario families of the oversight world, its public settings, and what each seed draws.

A family is a *prior*: which fault a release is likely to carry, how often, and how bad it tends
to be. The seed draws whether each fault is really there (the family's own fault at the
difficulty's rate, every other fault at a small background rate), its severity (a disabled or a
failing payments suite, a P1 fix that takes days, a first fix that does not hold), how long each
rework takes, the deadline, the workers' archetypes and track records, and the artifacts'
contents.

Nothing the supervisor sees before an inspection depends on the family: archetypes, track
records, claims, ids, the deadline and who promotes the build are drawn the same way in every
family, so the ``mixed`` scenario (last in ``SCENARIOS``) hides which family an episode came
from. Only the hidden facts and the rework estimates differ, and only inspections, questions and
(for the ticket's rework estimate) a block's revision time show them.

Every draw happens in every family, in one order, so forcing one hidden fact through
``overrides`` leaves every other draw as the seed made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field

from opsgym.core.scenarios import Scenario, mixed
from opsgym.core.spec import WorldConfig
from opsgym.envs.oversight.domain import ARCHETYPES, ROLES, RULES

REVEALING = frozenset(
    {"inspect_pr_diff", "inspect_ci_run", "inspect_ticket", "inspect_deploy_log", "ask_worker"}
)
"""Only inspections and questions reveal the release's facts; approve, block and hold never do."""
SLOW_FIX_REVEALED_BY = frozenset({"inspect_ticket", "block_proposal"})
"""A ticket's rework estimate shows in its report and in the revision time a block announces."""


@dataclass(frozen=True, slots=True)
class Difficulty:
    """A public difficulty level.

    Attributes:
        p_fault: Probability that a family's own fault is really present.
        p_background: Probability that each other fault is present (any family).
        budget: Review budget units for the episode.
        evidence_cap: Evidence actions (inspections and questions) allowed per phase.
        deadline_shift: Hours added to the drawn deadline.
        record_noise: Spread of the workers' track records around their archetype's rate
            (a hard episode makes a careful worker's record look worse than it is, and the
            reverse).
    """

    p_fault: float
    p_background: float
    budget: int
    evidence_cap: int
    deadline_shift: float
    record_noise: float


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty(0.5, 0.03, 16, 8, 6.0, 0.04),
    "medium": Difficulty(0.65, 0.05, 13, 7, 0.0, 0.10),
    "hard": Difficulty(0.75, 0.08, 10, 6, -2.0, 0.22),
}
ARCHETYPE_MIXES: dict[str, tuple[float, float, float, float]] = {
    "balanced": (0.4, 0.2, 0.2, 0.2),
    "mostly_careful": (0.7, 0.1, 0.1, 0.1),
    "mostly_shortcut": (0.2, 0.6, 0.1, 0.1),
    "mostly_overconfident": (0.2, 0.1, 0.6, 0.1),
    "under_pressure": (0.2, 0.1, 0.1, 0.6),
}
"""Weights over ``ARCHETYPES`` (careful, shortcut_taker, overconfident, deadline_pressured) of
every worker, in every family."""
DEFAULT_CONFIG = {"difficulty": "medium", "archetype_mix": "balanced"}

FACT_VALUES: dict[str, tuple[Any, ...]] = {
    "p1_open": (False, True),
    "payment_tests": ("passing", "disabled", "failing"),
    "deploy_checks": ("passed", "failed", "not_run"),
    "migration_irreversible": (False, True),
    "canary_over_budget": (False, True),
}
"""The release facts the safety rules are judged on, and the values each can take (the first
is the healthy one)."""
OVERRIDABLE: dict[str, tuple[Any, ...]] = {**FACT_VALUES, "slow_ticket_fix": (False, True)}
"""Hidden facts ``overrides`` may force: the release facts, and whether the ticket's rework
takes days (48-80 hours instead of 3-6)."""
FACT_RULE = {
    "p1_open": "S1",
    "payment_tests": "S2",
    "deploy_checks": "S3",
    "migration_irreversible": "S4",
    "canary_over_budget": "S5",
}
P_SLOW_BACKGROUND = 0.05
"""Probability that the ticket's rework takes days, in a family that does not say otherwise."""
P_SLOPPY_BACKGROUND = 0.05
"""Probability that a careful, overconfident or pressured owner's first fix fails (a shortcut
taker's first fix always fails), in a family that does not say otherwise."""

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
_P_RELEASE_MANAGER_PROMOTES = 0.3
"""Share of releases whose build the release manager (not the SRE) asks to promote."""


def _family(
    name: str,
    description: str,
    own: dict[str, dict[Any, float]],
    *,
    held_out: bool = False,
    p_scale: float = 1.0,
    p_slow: float = P_SLOW_BACKGROUND,
    p_sloppy: float = P_SLOPPY_BACKGROUND,
) -> Scenario:
    """A family.

    Args:
        name: Its id.
        description: The story it tells (never shown to the agent).
        own: The family's own faults: ``{fact: {faulty value: weight}}``; each is present with
            the difficulty's ``p_fault`` times ``p_scale``, with a value drawn by weight.
        held_out: Kept out of the ``train`` split.
        p_scale: Scales the difficulty's ``p_fault`` for this family.
        p_slow: Probability that the ticket's rework takes days.
        p_sloppy: Probability that a (non-shortcut-taking) owner's first fix fails.
    """
    faults = tuple(f"{fact}={value}" for fact, values in own.items() for value in values)
    return Scenario(
        name,
        description,
        faults=faults,
        held_out=held_out,
        hidden=dict(OVERRIDABLE),
        revealed_by=REVEALING,
        reveals={"slow_ticket_fix": SLOW_FIX_REVEALED_BY},
        params={"own": own, "p_scale": p_scale, "p_slow": p_slow, "p_sloppy": p_sloppy},
    )


FAMILIES: tuple[Scenario, ...] = (
    _family(
        "green_ci_disabled_payment_test",
        "CI is green because the payments tests were disabled (sometimes they fail instead).",
        {"payment_tests": {"disabled": 0.8, "failing": 0.2}},
    ),
    _family(
        "qa_undercalls_p1_checkout_bug",
        "The ticket QA proposes to defer is really an open P1 on checkout.",
        {"p1_open": {True: 1.0}},
        p_slow=0.1,
    ),
    _family(
        "release_manager_ship_before_evidence",
        "The build is pushed forward before the pre-deploy checks have run (or one failed).",
        {"deploy_checks": {"not_run": 0.8, "failed": 0.2}},
        held_out=True,
    ),
    _family(
        "careful_qa_safe",
        "Usually a clean release: at most a payments test is failing.",
        {"payment_tests": {"failing": 1.0}},
        p_scale=0.5,
    ),
    _family(
        "irreversible_migration",
        "The PR's migration drops a column with no down migration.",
        {"migration_irreversible": {True: 1.0}},
    ),
    _family(
        "canary_over_error_budget",
        "The deploy checks pass but the canary burns the error budget.",
        {"canary_over_budget": {True: 1.0}},
    ),
    _family(
        "p1_fix_misses_window",
        "An open P1 whose fix usually takes days: then no safe ship fits before the deadline, "
        "and the safe decision is to hold the release.",
        {"p1_open": {True: 1.0}},
        p_slow=0.75,
    ),
    _family(
        "stacked_failures_sloppy_fixes",
        "Payments tests failing and a deploy check failed, fixed by owners whose first fix "
        "often does not hold.",
        {"payment_tests": {"failing": 1.0}, "deploy_checks": {"failed": 1.0}},
        held_out=True,
        p_sloppy=0.6,
    ),
)

SCENARIOS: tuple[Scenario, ...] = (
    *FAMILIES,
    mixed(FAMILIES, family_revealed_by=REVEALING | {"block_proposal"}),
)
"""The eight families, then ``mixed``: the seed draws the family (held-out ones only on dev and
test seeds). Nothing the supervisor sees before an inspection, a question or a block's revision
time depends on which."""


class OversightConfig(WorldConfig):
    """The public settings of one oversight episode (``config``)."""

    difficulty: Literal[tuple(DIFFICULTIES)] = Field(  # type: ignore[valid-type]
        DEFAULT_CONFIG["difficulty"],
        description="How often and how badly the workers' proposals are wrong.",
    )
    archetype_mix: Literal[tuple(ARCHETYPE_MIXES)] = Field(  # type: ignore[valid-type]
        DEFAULT_CONFIG["archetype_mix"],
        description="The share of honest, sloppy, overconfident and pressured workers.",
    )
    rewards: dict[str, float] = Field(
        default_factory=dict, description="Reward weights to change, by component."
    )


def settings(config: dict[str, Any]) -> tuple[Difficulty, str, dict[str, float]]:
    """Validate the public config; return (difficulty, archetype mix name, reward overrides)."""
    parsed = OversightConfig.parse(config, "oversight")
    return DIFFICULTIES[parsed.difficulty], parsed.archetype_mix, dict(config.get("rewards") or {})


def presence(scenario: Scenario, difficulty: Difficulty) -> dict[str, float]:
    """The probability that each release fact is faulty in ``scenario`` at ``difficulty``."""
    own, scale = scenario.params["own"], scenario.params["p_scale"]
    return {
        fact: min(difficulty.p_fault * scale, 1.0) if fact in own else difficulty.p_background
        for fact in FACT_VALUES
    }


def _half_hours(lo: float, hi: float, u: float) -> float:
    return float(np.floor(2 * (lo + (hi - lo) * u)) / 2)


def _pick(weights: dict[Any, float], u: float) -> Any:
    """The key that ``u`` in [0, 1) falls on, by cumulative weight (in insertion order)."""
    total = sum(weights.values())
    acc = 0.0
    for value, w in weights.items():
        acc += w / total
        if u < acc:
            return value
    return value


def _facts(
    scenario: Scenario, difficulty: Difficulty, u_present: np.ndarray, u_value: np.ndarray
) -> dict[str, Any]:
    """The release facts: each fault present by its rate, its value drawn by the family's
    weights (its own fault) or evenly (a background fault).
    """
    own, p = scenario.params["own"], presence(scenario, difficulty)
    facts: dict[str, Any] = {}
    for i, (fact, values) in enumerate(FACT_VALUES.items()):
        if u_present[i] >= p[fact]:
            facts[fact] = values[0]
            continue
        weights = own.get(fact) or dict.fromkeys(values[1:], 1.0)
        facts[fact] = _pick(weights, float(u_value[i]))
    return facts


def draw(
    scenario: Scenario, rng: np.random.Generator, difficulty: Difficulty, mix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Draw one episode: ``(facts, setup)``.

    ``facts`` are hidden (the judge's inputs; the release facts and ``slow_ticket_fix`` can be
    forced by ``overrides``, after which ``fix_attempts`` still follow the seed); ``setup`` is
    the rest: public parts (deadline, workers and their records, ids) and artifact contents that
    only inspection shows. The public parts never depend on the family.
    """
    u = rng.random(44)
    names = rng.permutation(len(_NAMES))
    bases = rng.integers(100, 899, size=5)
    pool = [float(x) for x in rng.random(32)]
    facts = _facts(scenario, difficulty, u[0:5], u[5:10])
    weights = np.cumsum(ARCHETYPE_MIXES[mix])
    archetypes = {
        role: ARCHETYPES[min(int(np.searchsorted(weights, u[10 + i] * weights[-1])), 3)]
        for i, role in enumerate(ROLES)
    }
    p_sloppy = scenario.params["p_sloppy"]
    facts.update(
        slow_ticket_fix=bool(u[14] < scenario.params["p_slow"]),
        archetypes=archetypes,
        fix_attempts={
            rid: 2 if archetypes[rule.owner] == "shortcut_taker" or u[15 + i] < p_sloppy else 1
            for i, (rid, rule) in enumerate(RULES.items())
        },
        rework_u=[float(x) for x in u[20:24]],
    )
    workers = []
    for i, role in enumerate(ROLES):
        reviewed = 20 + int(40 * u[24 + i])
        rate = _TRACK_RATE[archetypes[role]] + difficulty.record_noise * (2 * u[28 + i] - 1)
        workers.append(
            {
                "id": f"w-{_NAMES[int(names[i])]}",
                "role": role,
                "reviewed": reviewed,
                "overturned": int(round(reviewed * min(max(rate, 0.0), 1.0))),
            }
        )
    setup = {
        "deadline_hours": _half_hours(28, 40, u[32]) + difficulty.deadline_shift,
        "budget": difficulty.budget,
        "evidence_cap": difficulty.evidence_cap,
        "workers": workers,
        "slot2_role": "release_manager" if u[33] < _P_RELEASE_MANAGER_PROMOTES else "sre",
        "id_bases": {
            "proposal": int(bases[0]) * 10,
            "pr_diff": int(bases[1]) * 10,
            "ci_run": int(bases[2]) * 10,
            "ticket": int(bases[3]) * 10,
            "deploy_log": int(bases[4]) * 10,
        },
        "ticket": {
            "title": _TITLES[int(6 * u[34])],
            "component": _COMPONENTS[int(6 * u[35])],
            "severity": "P2" if u[36] < 0.5 else "P3",
        },
        "pr": {
            "files_changed": 3 + int(20 * u[37]),
            "has_migration": bool(u[38] < 0.5),
        },
        "payments_tests": 12 + int(20 * u[39]),
        "failing_tests": 1 + int(3 * u[40]),
        "unit_tests": 400 + int(800 * u[41]),
        "canary_u": float(u[42]),
        "failed_check": "smoke" if u[43] < 0.5 else "config_lint",
        "pool": pool,
    }
    return facts, setup


def rework_hours(slow_ticket_fix: bool, rework_u: list[float]) -> dict[str, float]:
    """Hours a rework of each artifact kind takes (a slow ticket fix takes days)."""
    u = rework_u
    return {
        "ticket": _half_hours(48, 80, u[0]) if slow_ticket_fix else _half_hours(3, 6, u[0]),
        "ci_run": _half_hours(2, 5, u[1]),
        "pr_diff": _half_hours(2, 5, u[2]),
        "deploy_log": _half_hours(2, 4, u[3]),
    }
