"""Scripted reference policies for the oversight world. They read ``obs`` and ``legal`` only.

Three blind ones (``approve_all``, ``block_all``, ``hold_then_approve``) pick from the legal
calls without reading the release; ``naive`` reads the proposals and approves each; ``rule``
and ``phase_aware_rule`` check some of the evidence; ``oracle`` checks all of it, blocks what
it shows broken, and holds when the fix cannot land before the deadline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.envs.oversight.domain import COST, MINUTES, RULES, findings, kind_of
from opsgym.envs.oversight.encode import INSPECT

Call = tuple[str, dict[str, Any]]
AWAIT: Call = ("hold_release", {"reason_code": "await_rework"})
STOP: Call = ("hold_release", {"reason_code": "no_safe_ship_in_window"})


def current_report(obs: dict[str, Any], ident: str) -> dict[str, Any] | None:
    """The last report on ``ident`` if it was read after the artifact's last rework."""
    report = obs["evidence"].get(ident)
    if report is None:
        return None
    reworked = obs["reworked"].get(ident)
    return None if reworked is not None and report["inspected_at"] < reworked else report


def _first(legal: list[Call], tool: str) -> Call | None:
    return next((c for c in legal if c[0] == tool), None)


class _Blind:
    name = "blind"

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._held = False


class ApproveAll(_Blind):
    """Approves whatever can be approved; waits otherwise. Never reads the release."""

    name = "approve_all"

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        return _first(legal, "approve_proposal") or AWAIT


class BlockAll(_Blind):
    """Blocks whatever can be blocked, under the first rule that applies; waits otherwise."""

    name = "block_all"

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        return _first(legal, "block_proposal") or AWAIT


class HoldThenApprove(_Blind):
    """Holds, then approves whatever comes next; again and again."""

    name = "hold_then_approve"

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        if not self._held:
            self._held = True
            return AWAIT
        self._held = False
        return _first(legal, "approve_proposal") or AWAIT


class Naive(_Blind):
    """Trusts every worker: approves each pending proposal in slot order."""

    name = "naive"

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        for prop in obs["proposals"]:
            if prop["status"] == "pending":
                return "approve_proposal", {"slot": prop["slot"]}
        return AWAIT


class Rule:
    """The classic checklist: read the ticket and the CI run of each pending proposal (S1, S2)
    once, block on what they show, approve otherwise. Never reads a diff or a deploy log, never
    re-reads an artifact after a rework, never weighs the deadline.
    """

    name = "rule"
    kinds: tuple[str, ...] = ("ticket", "ci_run")
    rules: frozenset[str] = frozenset({"S1", "S2"})
    recheck = False

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""

    def _report(self, obs: dict[str, Any], ref: str) -> dict[str, Any] | None:
        return current_report(obs, ref) if self.recheck else obs["evidence"].get(ref)

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        for prop in obs["proposals"]:
            if prop["status"] != "pending":
                continue
            bad: list[str] = []
            for ref in prop["refs"]:
                kind = kind_of(ref)
                if kind not in self.kinds:
                    continue
                report = self._report(obs, ref)
                if report is None:
                    if obs["evidence_actions_remaining"] and obs["review_budget_remaining"]:
                        return INSPECT[kind], {"slot": prop["slot"]}
                    continue
                bad += [r for r in findings(report) if r in self.rules]
            if bad:
                return "block_proposal", {"slot": prop["slot"], "rule_id": bad[0]}
            return "approve_proposal", {"slot": prop["slot"]}
        return AWAIT


class PhaseAwareRule(Rule):
    """The checklist per phase: ticket and CI run in triage, the deploy checks at the deploy
    gate (S3), everything already read again at the ship decision; re-reads artifacts after a
    rework. Skips PR diffs (they cost double) and the canary budget, and never holds.
    """

    name = "phase_aware_rule"
    kinds = ("ticket", "ci_run", "deploy_log")
    rules = frozenset({"S1", "S2", "S3"})
    recheck = True


AFTER = {0: 3, 1: 3, 2: 2, 3: 1}
"""Approvals still needed once a slot's proposal is clean: its own and every later phase's."""


def affordable(obs: dict[str, Any], kind: str) -> bool:
    """Whether reading an artifact of ``kind`` fits the phase's evidence cap and the budget."""
    return obs["evidence_actions_remaining"] > 0 and obs["review_budget_remaining"] >= COST[kind]


class Oracle:
    """A careful supervisor: reads every artifact a pending proposal relies on (again after a
    rework), blocks under the first rule the evidence shows broken, approves when the evidence
    is clean, and waits for revisions. It holds the release as soon as the evidence shows that no
    fix can land before the deadline. When the budget leaves a reworked artifact unread, it
    blocks the rule a second time (a second fix always holds) rather than trust the first. Acts
    on reports only.
    """

    name = "oracle"

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._blocks: dict[str, int] = {}

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        left = 60.0 * obs["hours_to_deadline"]
        now = 60.0 * obs["hours_elapsed"]
        waiting = 0.0
        for prop in obs["proposals"]:
            slot = prop["slot"]
            if prop["status"] == "blocked":
                waiting = max(waiting, 60.0 * prop["due"] - now + MINUTES["approve"] * AFTER[slot])
                continue
            if prop["status"] != "pending":
                continue
            broken: dict[str, float] = {}
            for ref in prop["refs"]:
                kind = kind_of(ref)
                report = current_report(obs, ref)
                if report is None:
                    if affordable(obs, kind):
                        return INSPECT[kind], {"slot": slot}
                    broken.update(self._unconfirmed(obs, kind))
                    continue
                for rule in findings(report):
                    broken[rule] = report["rework_estimate_hours"]
            if not broken:
                return "approve_proposal", {"slot": slot}
            # Each broken rule needs a block and a rework on this proposal, one after another,
            # then the approvals of this slot and every later one: a lower bound on the ship.
            need = sum(MINUTES["block"] + 60.0 * h for h in broken.values())
            if need + MINUTES["approve"] * AFTER[slot] >= left:
                return STOP
            rule = min(broken)
            self._blocks[rule] = self._blocks.get(rule, 0) + 1
            return "block_proposal", {"slot": slot, "rule_id": rule}
        if waiting and waiting >= left:
            return STOP
        return AWAIT

    def _unconfirmed(self, obs: dict[str, Any], kind: str) -> dict[str, float]:
        """Rules judged on ``kind`` that were blocked once and cannot be checked again."""
        hours = next(
            (r["rework_estimate_hours"] for r in obs["evidence"].values() if r["kind"] == kind),
            0.0,
        )
        return {
            rule: hours for rule, n in self._blocks.items() if n == 1 and kind in RULES[rule].kinds
        }


POLICIES = {
    "naive": Naive,
    "rule": Rule,
    "phase_aware_rule": PhaseAwareRule,
    "oracle": Oracle,
    "approve_all": ApproveAll,
    "block_all": BlockAll,
    "hold_then_approve": HoldThenApprove,
}
