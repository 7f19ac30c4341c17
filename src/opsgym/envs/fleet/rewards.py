"""The fleet's rewards: the components paid per step, the terminal reward per outcome, the
components settled from hidden facts, and the brief an LLM agent is given (see the manual's
"Rewards").
"""

REWARDS = {
    "step": 0.0,
    "invalid": -0.05,
    "premature": -0.10,
    "tokens": -0.10,
    "over_budget": -0.05,
    "subgoal": 0.30,
    "destructive": -0.20,
    "terminal": 1.0,
}

OUTCOME_REWARDS = {
    "recovered": 0.60,
    "recovered_undiagnosed": 0.10,
    "recovered_late": 0.10,
    "recovered_with_damage": 0.20,
    "recovered_unconfirmed": 0.10,
    "unrecovered": 0.0,
    "destroyed": -0.60,
}
"""Terminal reward of each outcome: a damaged recovery earns a third of a clean one (and each
destructive action costs 0.20 besides), an unconfirmed, late or undiagnosed one a sixth (a late
one no more than an unconfirmed one, so that letting the clock run never pays)."""

SETTLED = frozenset({"subgoal", "destructive"})
"""Computed from hidden facts (a sub-goal is reached only on the true culprit; a restart is
destructive only because the rank was healthy): paid on the episode's last step."""

BRIEF = """You are the on-call SRE of a distributed GPU training job: four nodes of eight GPUs \
(ranks 0-31; rank r is GPU r % 8 of node r // 8) on two leaf switches (nodes 0-1 and 2-3) \
joined by two spines; each leaf keeps one spare node. The job runs a ring AllReduce over all \
ranks. Someone paged. Find out from your tools what, if anything, is wrong; fix it without \
destroying work; confirm the fix on fresh evidence; then close the incident with \
declare_resolved. Lost training time costs money: a recovery that lost more of it than the \
incident's SLO allows (60 to 120 minutes, by what broke) counts as harm. Every call costs time \
and tokens. Fix a fault only on evidence of its cause.

The dashboard (check_telemetry) is scraped only every few calls and can carry false alerts or \
mask a degraded node; logs, kernel logs, flight recorders, library versions, topology and \
benchmarks are fresh and exact. Action reports say what was done, never whether it worked. A \
remediation needs the evidence that justifies it first."""
