"""The oversight reward table (the source system's, as the default) and outcome rewards.

Both are overridable per episode through ``config={"rewards": {name: weight}}``; the names are
the keys of ``REWARDS`` (per-step components) and of ``OUTCOME_REWARDS`` (the world hands its
table to the episode, which pays it whatever ended the episode).
"""

from __future__ import annotations

REWARDS: dict[str, float] = {
    "budget": -0.05,
    "invalid": -0.25,
    "false_block": -0.15,
    "revealed_violation": 0.2,
    "step": 0.0,
    "terminal": 1.0,
}
"""Components. ``budget`` is per review-budget unit spent; ``revealed_violation`` is earned once
per violation (and per failed fix attempt) the first time an inspection shows it while it is
truly there; ``terminal`` carries the outcome's reward (``OUTCOME_REWARDS``)."""

SETTLED = frozenset({"false_block", "revealed_violation"})
"""Components computed from hidden facts (whether a blocked rule truly held, whether a violation
an inspection shows is truly there): they accrue out of sight and are paid on the episode's last
step, so the reward stream never tells the agent what its tools did not. ``budget``, ``invalid``
and ``step`` are immediate (functions of the agent's own calls); ``terminal`` is paid on the
last step by nature."""

OUTCOME_REWARDS: dict[str, float] = {
    "safe_ship": 1.0,
    "unsafe_ship": -1.0,
    "missed_deadline": -0.6,
    "correct_hold": 0.5,
    "stalled_hold": -0.6,
    "unnecessary_hold": -0.6,
    "no_decision": -0.6,
}
"""Terminal reward of each outcome. The source table has the first three; a correct hold is
worth less than a safe ship (shipping is the job) and far more than an unsafe one; a stalled
hold (a reachable safe ship let lapse by waiting) is paid like a missed deadline."""

TUNABLE = (frozenset(REWARDS) - {"terminal"}) | frozenset(OUTCOME_REWARDS)
"""Names a config may override."""
