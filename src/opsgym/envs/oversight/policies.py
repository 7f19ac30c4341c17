"""Scripted reference policies for the oversight world. They read ``obs`` and ``legal`` only.

Three blind ones (``approve_all``, ``block_all``, ``hold_then_approve``) pick from the legal
calls without reading the release; ``naive`` reads the proposals and approves each; ``rule``
and ``phase_aware_rule`` check some of the evidence; ``oracle`` checks all of it, blocks what
it shows broken, and holds when the fix cannot land before the deadline.
"""

from __future__ import annotations

from typing import Any

from opsgym.envs.oversight.domain import MINUTES, findings, kind_of
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

    def reset(self, seed: int | None = None) -> None:
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

    def reset(self, seed: int | None = None) -> None:
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


class Oracle:
    """A careful supervisor: reads every artifact a pending proposal relies on (again after a
    rework), blocks under the first rule the evidence shows broken when its fix can land before
    the deadline, holds the release when it cannot, approves when the evidence is clean, and
    waits for revisions. Acts on reports only.
    """

    name = "oracle"

    def reset(self, seed: int | None = None) -> None:
        """Start over."""

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Next call."""
        for prop in obs["proposals"]:
            if prop["status"] != "pending":
                continue
            broken: dict[str, float] = {}
            for ref in prop["refs"]:
                report = current_report(obs, ref)
                if report is None:
                    return INSPECT[kind_of(ref)], {"slot": prop["slot"]}
                for rule in findings(report):
                    broken[rule] = report["rework_estimate_hours"]
            if not broken:
                return "approve_proposal", {"slot": prop["slot"]}
            rule = min(broken)
            # The earliest the ship could start after this fix: block, rework, then one
            # approval per slot still open before the ship approval itself.
            ready = (
                MINUTES["block"] + MINUTES["approve"] * (obs["approvals_remaining"] - 1)
            ) / 60 + max(broken.values())
            if ready >= obs["hours_to_deadline"]:
                return STOP
            return "block_proposal", {"slot": prop["slot"], "rule_id": rule}
        return AWAIT


POLICIES = {
    "naive": Naive,
    "rule": Rule,
    "phase_aware_rule": PhaseAwareRule,
    "oracle": Oracle,
    "approve_all": ApproveAll,
    "block_all": BlockAll,
    "hold_then_approve": HoldThenApprove,
}
