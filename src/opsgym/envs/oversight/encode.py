"""The oversight world as a vector, for the Gymnasium face. Built from the supervisor's view only.

Observation (``Box(-1, 1, (106,), float32)``):

| idx      | meaning                                                                | values    |
|----------|------------------------------------------------------------------------|-----------|
| 0        | share of the window used (clock / deadline)                            | 0..1      |
| 1        | hours to the deadline / 48                                             | 0..1      |
| 2        | share of the step budget used                                          | 0..1      |
| 3-5      | phase one-hot: triage, deploy_gate, ship_decision                      | 0/1       |
| 6        | review budget left / 16                                                | 0..1      |
| 7        | evidence actions left in this phase / 8                                | 0..1      |
| 8        | approvals remaining / 4                                                | 0..1      |
| 9        | the last call was rejected                                             | 0/1       |
| 10+19k.. | slot k = 0..3 (19 each, from 10 + 19k):                                |           |
|   +0     | a proposal is in the slot                                              | 0/1       |
|   +1..3  | its status: pending, blocked (awaiting its revision), approved         | 0/1       |
|   +4     | revision number / 3                                                    | 0..1      |
|   +5     | hours until the revision is due / 24                                   | 0..1      |
|   +6     | confidence the worker claims                                           | 0..1      |
|   +7     | the worker states medium risk (else low)                               | 0/1       |
|   +8     | the author's track record: overturned / reviewed                       | 0..1      |
|   +9..12 | per kind (PR diff, CI run, ticket, deploy log): -1 referenced without  | -1/0/1    |
|          | a current report, 1 referenced and inspected since its last rework,    |           |
|          | 0 not referenced                                                       |           |
|   +13..17| rule S1..S5 shown violated by a current report of one of its refs      | 0/1       |
|   +18    | largest rework estimate among those reports / 80 hours                 | 0..1      |
| 86+5w+q  | the last answer of worker w = 0..3 to question q (bug_severity,        | -1/0/1    |
|          | payment_tests, deploy_checks, migration_safety, canary_health):        |           |
|          | -1 says problem, 1 says ok, 0 unsure or not asked                      |           |

Actions (``Discrete(44)``), every call the pipeline can make legal, by slot:
0-7 inspect the referenced artifact of slot k (``inspect_ticket`` slot 0, ``inspect_pr_diff`` and
``inspect_ci_run`` slot 1, ``inspect_deploy_log`` slot 2, all four for slot 3); 8-27
``ask_worker(slot=w, question_type=q)`` for w = 0..3 and the five questions; 28-31
``approve_proposal(slot=k)``; 32-41 ``block_proposal(slot=k, rule_id=r)`` for each rule judged on
a kind slot k references (S1 on 0; S2, S4 on 1; S3, S5 on 2; S1-S5 on 3);
42 ``hold_release(no_safe_ship_in_window)``; 43 ``hold_release(await_rework)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from opsgym.envs.oversight.domain import LINES, QUESTIONS, RULES, SLOTS

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

INSPECT = {
    "pr_diff": "inspect_pr_diff",
    "ci_run": "inspect_ci_run",
    "ticket": "inspect_ticket",
    "deploy_log": "inspect_deploy_log",
}
_KIND_INDEX = {"pr_diff": 0, "ci_run": 1, "ticket": 2, "deploy_log": 3}
_RULE_INDEX = {r: i for i, r in enumerate(RULES)}
_QUESTION_INDEX = {q: i for i, q in enumerate(QUESTIONS)}
_SAYS = {"problem": -1.0, "ok": 1.0, "unsure": 0.0}
_STATUS = {"pending": 1, "blocked": 2, "approved": 3}
PER_SLOT = 19
ANSWERS = 10 + PER_SLOT * SLOTS


def _catalogue() -> list[tuple[str, dict[str, Any]]]:
    actions: list[tuple[str, dict[str, Any]]] = []
    for line in LINES:
        actions += [(INSPECT[kind], {"slot": line.slot}) for kind in line.kinds]
    actions += [
        ("ask_worker", {"slot": w, "question_type": q}) for w in range(4) for q in QUESTIONS
    ]
    actions += [("approve_proposal", {"slot": line.slot}) for line in LINES]
    for line in LINES:
        actions += [
            ("block_proposal", {"slot": line.slot, "rule_id": r.id})
            for r in RULES.values()
            if set(r.kinds) & set(line.kinds)
        ]
    actions += [
        ("hold_release", {"reason_code": "no_safe_ship_in_window"}),
        ("hold_release", {"reason_code": "await_rework"}),
    ]
    return actions


ACTIONS = _catalogue()


class OversightEncoder:
    """Encodes an episode of the oversight world as 106 floats in [-1, 1]."""

    size = ANSWERS + 4 * len(QUESTIONS)
    low, high = -1.0, 1.0
    actions = ACTIONS

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        world = episode.world
        v = world.view
        clock, deadline = world.clock, v.deadline
        out = [0.0] * self.size
        left = deadline - clock
        out[0] = 1.0 if left <= 0 else clock / deadline
        out[1] = 0.0 if left <= 0 else (1.0 if left >= 2880.0 else left / 2880.0)
        out[2] = episode.steps / episode.max_steps if episode.max_steps else 0.0
        out[3 + v.phase] = 1.0
        out[6] = min(v.budget / 16.0, 1.0)
        out[7] = min(v.evidence_left / 8.0, 1.0)
        out[8] = (SLOTS - v.approved) / SLOTS
        events = episode.events
        out[9] = 1.0 if events and events[-1]["rejected"] is not None else 0.0
        known, evidence, seen, inspected, reworked = (
            v.known,
            v.evidence,
            v.seen,
            v.inspected,
            v.reworked,
        )
        for prop in v.current:
            if prop is None:
                continue
            base = 10 + PER_SLOT * prop["slot"]
            out[base] = 1.0
            out[base + _STATUS[prop["status"]]] = 1.0
            out[base + 4] = min(prop["revision"] / 3.0, 1.0)
            if prop["status"] == "blocked":
                out[base + 5] = min(max(prop["due"] - clock / 60.0, 0.0) / 24.0, 1.0)
            out[base + 6] = prop["confidence"]
            out[base + 7] = 0.0 if prop["risk"] == "low" else 1.0
            out[base + 8] = v.rates[prop["worker"]]
            worst = 0.0
            for ref in prop["refs"]:
                at = inspected.get(ref)
                fresh = at is not None and at >= reworked.get(ref, -1.0)
                out[base + 9 + _KIND_INDEX[known[ref]]] = 1.0 if fresh else -1.0
                if fresh and seen[ref]:
                    for rule in seen[ref]:
                        out[base + 13 + _RULE_INDEX[rule]] = 1.0
                    worst = max(worst, evidence[ref]["rework_estimate_hours"])
            out[base + 18] = min(worst / 80.0, 1.0)
        index = v.index
        for a in v.answers:
            out[ANSWERS + 5 * index[a["worker"]] + _QUESTION_INDEX[a["question"]]] = _SAYS[
                a["says"]
            ]
        return np.array(out, dtype=np.float32)
