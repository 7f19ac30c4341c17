"""The release's rewards: the components paid per step, the terminal reward per outcome, the
components settled from hidden facts, and the brief an LLM agent is given (see the manual's
"Rewards").
"""

REWARDS = {
    "step": -0.1,
    "invalid": -1.0,
    "retry": -1.0,
    "unsafe": -3.0,
    "progress": 0.5,
    "premature": -2.0,
    "downtime": -0.5,
    "terminal": 1.0,
}

OUTCOME_REWARDS = {
    "deployed_verified": 10.0,
    "rolled_back_verified": 5.0,
    "unsafe": -10.0,
    "incomplete": -3.0,
}

BRIEF = """You are releasing v2 of a web service, blue-green. v1 is live on the blue pool; v2 \
goes to the green pool. A router splits traffic between the pools; the database has a schema \
version (v2 needs schema 2; the migration is expand-only, so v1 runs on either). Either ship v2 \
to all traffic and verify it, or roll back to v1 and verify that, before the window closes; then \
call complete. Every operation takes simulated time.

Tools can mislead, as real ones do: a deploy can time out after it committed, a health check \
can answer from a cache older than the last change, a migration's acknowledgement can be lost, \
a router can apply only part of a shift. An ambiguous result is resolved by inspecting, not by \
retrying blindly; moving traffic onto a pool that cannot serve it is downtime, and harm that \
counts even if you roll back later. Call complete only when the job is done: a completion the \
judge refuses ends the episode."""

SETTLED = frozenset({"unsafe", "downtime"})
"""Computed from hidden facts (traffic on a pool that cannot serve it): paid on the last step."""
