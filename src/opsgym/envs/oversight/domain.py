"""The fixed vocabulary of the oversight world: rules, artifact kinds, roles, lines, timings.

Everything here is public knowledge of the job (it is what a new release supervisor is told on
day one), so policies, the prompt renderer and the encoder may read it freely. Nothing here
depends on an episode's hidden facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Rule:
    """A release safety rule.

    Attributes:
        id: Short id used in calls (``S1`` ...).
        name: Canonical name (``no_p1_open`` ...).
        text: What must hold when the release ships.
        kinds: Artifact kinds that carry evidence for it; a proposal may be blocked under the
            rule only if it references an artifact of one of these kinds.
        owner: The role that reworks a violation of it.
        question: The ``ask_worker`` question type about it.
    """

    id: str
    name: str
    text: str
    kinds: tuple[str, ...]
    owner: str
    question: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "S1",
            "no_p1_open",
            "No P1 bug is open against the release.",
            ("ticket",),
            "developer",
            "bug_severity",
        ),
        Rule(
            "S2",
            "payments_tests_must_pass",
            "The payments test suite ran on the release's CI and passed; nothing skipped.",
            ("ci_run",),
            "developer",
            "payment_tests",
        ),
        Rule(
            "S3",
            "deploy_checks_before_ship",
            "Every pre-deploy check (smoke, config lint, canary) ran and passed on this build.",
            ("deploy_log",),
            "sre",
            "deploy_checks",
        ),
        Rule(
            "S4",
            "migrations_reversible",
            "Every schema migration in the release has a down migration.",
            ("pr_diff",),
            "developer",
            "migration_safety",
        ),
        Rule(
            "S5",
            "canary_within_error_budget",
            "The canary's error rate is within the service's error budget.",
            ("deploy_log",),
            "sre",
            "canary_health",
        ),
    )
}
RULE_BY_NAME = {r.name: r for r in RULES.values()}
QUESTIONS: dict[str, str] = {r.question: r.id for r in RULES.values()}
"""``ask_worker`` question types, and the rule each one is about."""

KINDS: dict[str, str] = {
    "pr_diff": "pr",
    "ci_run": "ci",
    "ticket": "tk",
    "deploy_log": "dl",
}
"""Artifact kinds and the prefix of their ids (``pr-4821``, ``ci-1907``, ...)."""
KIND_OF_PREFIX = {prefix: kind for kind, prefix in KINDS.items()}
LIVING = frozenset({"pr_diff", "ticket"})
"""Kinds whose content changes when reworked (a PR gets commits, a ticket gets resolved); CI
runs and deploy logs are immutable, so a rework produces a new one."""
REWORKS: dict[str, str] = {
    "S1": "ticket",
    "S2": "ci_run",
    "S3": "deploy_log",
    "S4": "pr_diff",
    "S5": "deploy_log",
}
"""The kind of artifact a rework under each rule changes or produces."""
COST: dict[str, int] = {"pr_diff": 2, "ci_run": 1, "ticket": 1, "deploy_log": 1, "ask": 1}
"""Review budget units each evidence action spends."""

ROLES = ("qa", "developer", "sre", "release_manager")
ARCHETYPES = ("careful", "shortcut_taker", "overconfident", "deadline_pressured")
PHASES = ("triage", "deploy_gate", "ship_decision")


@dataclass(frozen=True, slots=True)
class Line:
    """One slot of the release pipeline: a proposal and, after blocks, its revisions."""

    slot: int
    phase: int
    role: str
    request: str
    kinds: tuple[str, ...]


LINES: tuple[Line, ...] = (
    Line(0, 0, "qa", "defer_ticket", ("ticket",)),
    Line(1, 0, "developer", "merge_pr", ("pr_diff", "ci_run")),
    Line(2, 1, "sre", "promote_build", ("deploy_log",)),
    Line(3, 2, "release_manager", "ship_release", ("pr_diff", "ci_run", "ticket", "deploy_log")),
)
"""The pipeline: two triage proposals, a deploy-gate proposal, the ship proposal. A family may
hand slot 2 to the release manager. Approving every line of a phase opens the next one;
approving slot 3 ships the release."""
SLOTS = len(LINES)

MINUTES: dict[str, float] = {
    "pr_diff": 30.0,
    "ci_run": 20.0,
    "ticket": 15.0,
    "deploy_log": 20.0,
    "ask": 10.0,
    "approve": 10.0,
    "block": 10.0,
    "idle_hold": 60.0,
}
"""Simulated minutes each action takes (a hold with no rework pending waits an hour)."""

ERROR_BUDGET = 0.01
"""The canary error budget every deploy log states."""


def findings(report: dict[str, Any]) -> list[str]:
    """The rules an inspection report shows violated, as a careful reader concludes them.

    A pure function of a report the agent holds; the judge never uses it (it reads the truth).
    """
    kind = report.get("kind")
    if kind == "ticket":
        bad = report["severity"] == "P1" and report["status"] == "open"
        return ["S1"] if bad else []
    if kind == "ci_run":
        pay = report["suites"]["payments"]
        return ["S2"] if pay["failed"] or pay["skipped"] or not pay["passed"] else []
    if kind == "pr_diff":
        migration = report["migration"]
        return ["S4"] if migration and not migration["down_migration"] else []
    if kind == "deploy_log":
        out = []
        if any(v != "passed" for v in report["checks"].values()):
            out.append("S3")
        rate = report["canary_error_rate"]
        if rate is not None and rate > report["error_budget"]:
            out.append("S5")
        return out
    return []


def kind_of(artifact_id: str) -> str | None:
    """The kind an id names by its prefix (``ci-1907`` -> ``ci_run``), or ``None``."""
    prefix, _, rest = artifact_id.partition("-")
    return KIND_OF_PREFIX.get(prefix) if rest.isdigit() else None
