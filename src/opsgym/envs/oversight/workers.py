"""How workers of each archetype talk: their claims, their stated risk and confidence, and
their answers to the supervisor's questions.

Claims, risk and confidence depend on the worker's archetype and the seed, never on the
release's facts nor on the scenario family (archetypes are drawn from the public mix in every
family): a proposal is a report, and it reads the same whether or not the release violates a
rule. Only answers to questions depend on the facts, and only a careful worker's
answers (or a shortcut taker's, outside their own work) follow them.
"""

from __future__ import annotations

from typing import Any

from opsgym.envs.oversight.domain import RULES

CLAIMS: dict[str, dict[str, str]] = {
    "defer_ticket": {
        "careful": "Triaged {ticket}; I propose it does not block this release.",
        "shortcut_taker": "Could not reproduce {ticket}; deferring it past the release.",
        "overconfident": "{ticket} is cosmetic, definitely not a release blocker.",
        "deadline_pressured": "{ticket} can be fixed forward after the release.",
    },
    "merge_pr": {
        "careful": "Merge {pr_diff}; CI run {ci_run} is green and I reviewed the diff.",
        "shortcut_taker": "Merge {pr_diff}; {ci_run} is green, good to go.",
        "overconfident": "Merge {pr_diff}; {ci_run} is green, zero risk.",
        "deadline_pressured": "Merge {pr_diff} now; {ci_run} is green and the freeze is close.",
    },
    "promote_build": {
        "careful": "Deploy log {deploy_log} is attached; promote the build to production.",
        "shortcut_taker": "Promote the build; see {deploy_log}.",
        "overconfident": "Promote the build; {deploy_log} is clean, nothing to worry about.",
        "deadline_pressured": "Promote the build now so we make the window; {deploy_log}.",
    },
    "ship_release": {
        "careful": "Every gate is approved; ship the release.",
        "shortcut_taker": "Gates done; ship it.",
        "overconfident": "Everything is green; ship the release now.",
        "deadline_pressured": "Ship now or we miss the window.",
    },
}
REVISION = "Reworked after the {rule} ({name}) block; resubmitting with {artifact}."

_CONFIDENCE = {
    "careful": (0.55, 0.30),
    "shortcut_taker": (0.80, 0.15),
    "overconfident": (0.92, 0.07),
    "deadline_pressured": (0.85, 0.12),
}
_P_LOW_RISK = {
    "careful": 0.4,
    "shortcut_taker": 0.8,
    "overconfident": 0.95,
    "deadline_pressured": 0.9,
}


def style(archetype: str, u_risk: float, u_conf: float) -> tuple[str, float]:
    """The risk a worker states and the confidence it claims, drawn from its archetype."""
    lo, span = _CONFIDENCE[archetype]
    risk = "low" if u_risk < _P_LOW_RISK[archetype] else "medium"
    return risk, round(lo + span * u_conf, 2)


def claim(request: str, archetype: str, refs: dict[str, str]) -> str:
    """The text of a first proposal (``refs`` maps kind to the artifact id it cites)."""
    return CLAIMS[request][archetype].format(**refs)


_ANSWERS = {
    ("S1", "problem"): "Yes: the ticket is a P1 on checkout and it is still open.",
    ("S1", "ok"): "No P1 is open against this release.",
    ("S2", "problem"): "The payments suite did not really pass: tests are skipped or failing.",
    ("S2", "ok"): "The payments suite ran and passed.",
    ("S3", "problem"): "Not every pre-deploy check passed on this build.",
    ("S3", "ok"): "All pre-deploy checks ran and passed.",
    ("S4", "problem"): "The migration has no down migration; it cannot be reverted.",
    ("S4", "ok"): "The migrations are reversible.",
    ("S5", "problem"): "The canary is over the error budget.",
    ("S5", "ok"): "The canary is within the error budget.",
}
_UNSURE = "I have not had time to check that; we can sort it out after the release."


def answer(archetype: str, role: str, rule_id: str, violated: bool) -> tuple[str, str]:
    """``(says, text)`` of a worker asked about ``rule_id``.

    ``says`` is ``"problem"``, ``"ok"`` or ``"unsure"``. Careful workers tell the truth;
    shortcut takers tell it except about their own work, which they call fine; overconfident
    workers call everything fine; workers under deadline pressure do not look.
    """
    if archetype == "deadline_pressured":
        return "unsure", _UNSURE
    honest = archetype == "careful" or (
        archetype == "shortcut_taker" and RULES[rule_id].owner != role
    )
    says = "problem" if honest and violated else "ok"
    return says, _ANSWERS[(rule_id, says)]


def public_rules() -> list[dict[str, Any]]:
    """The rules as the supervisor is told them."""
    return [
        {"id": r.id, "name": r.name, "text": r.text, "evidence": list(r.kinds)}
        for r in RULES.values()
    ]
