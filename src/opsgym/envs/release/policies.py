"""Scripted reference policies for the release world. They read observations only."""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.envs.release.state import ERROR_RATE_ALARM

Call = tuple[str, dict[str, Any]]
CANARY = 10
"""The canary's share of traffic, in percent."""


class Naive:
    """Trusts every report: follows the happy path, retries whatever reports a failure, and
    completes when the script runs out. It never inspects and never reads a timestamp.
    """

    name = "naive"
    _SCRIPT = ("stage", "deploy", "migrate", "shift_traffic", "health_check", "verify")

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._i = 0

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        if obs["retryable"] and obs["last"] and obs["last"]["report"].get("ambiguous"):
            return "retry", {}
        while self._i < len(self._SCRIPT):
            name = self._SCRIPT[self._i]
            self._i += 1
            return name, ({"percent": 100} if name == "shift_traffic" else {})
        return "complete", {}


def finish_rollback(obs: dict[str, Any]) -> Call:
    """The next call of a rollback the judge accepts: roll back, read blue fresh, verify after
    the last traffic change, complete.
    """
    if not obs["rolled_back"]:
        return "rollback", {}
    if _fresh(obs, "blue") is None:
        return "health_check", {"target": "blue"}
    verify = obs["verify"]
    if verify is None or verify["checked_at"] < obs["traffic_changed_at"]:
        return "verify", {}
    return "complete", {}


def _fresh(obs: dict[str, Any], target: str) -> dict[str, Any] | None:
    report = obs["health"][target]
    if (
        report
        and report["status"] != "unknown"
        and report["checked_at"] >= obs["last_change"][target]
    ):
        return report
    return None


def _cached(obs: dict[str, Any]) -> bool:
    """The last call was a health probe of green that answered from before green's last change."""
    last = obs["last"]
    return bool(
        last
        and last["tool"] == "health_check"
        and last["rejected"] is None
        and last["report"].get("target") == "green"
        and last["report"]["checked_at"] < obs["last_change"]["green"]
    )


def _verified_since_change(obs: dict[str, Any]) -> bool:
    verify = obs["verify"]
    return bool(verify and verify["checked_at"] >= obs["traffic_changed_at"])


def _bad(report: dict[str, Any]) -> bool:
    return (
        report["status"] != "healthy"
        or report["restarts"] > 0
        or report["error_rate"] > ERROR_RATE_ALARM
    )


class Oracle:
    """A careful operator; it uses reports only, never the family or the truth.

    It resolves every ambiguous operation by inspection before anything else, reads a fresh
    health report of green (checked after green's last change: a cached one proves nothing)
    with its restarts and error rate before any traffic moves, sends a 10% canary and reads
    green's health under it (a v2 that fails under load shows an elevated error rate there,
    before it can hurt the whole fleet), then moves all traffic, reads fresh health again,
    verifies end to end (which also shows the router's real split: a short one is re-applied),
    and rolls back at the first bad sign. While a probe answers from a stale cache it spends
    the wait on a verify rather than on probe after probe.

    The class attributes switch parts of that care off; the exploit suite
    (:mod:`opsgym.envs.release.exploits`) uses them to measure what each part is worth.
    """

    name = "oracle"
    pre_check = True
    """Read green's fresh health before any traffic moves."""
    canary = True
    """Send a 10% canary, and read green's health under it, before full traffic."""
    read_signs = True
    """Treat restarts and an elevated error rate as bad signs, not only an unhealthy status."""
    react = True
    """Roll back on a bad sign (else insist: re-check and complete again)."""

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start over."""
        self._aborting = False

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        if obs["unresolved"]:
            return "inspect", {"target": "deploy" if "deploy" in obs["unresolved"] else "migration"}
        if obs["retryable"]:
            return "retry", {}  # the inspection found the operation absent: a retry is safe
        if not obs["staged"]:
            return "stage", {}
        if obs["deploy"] in ("none", "absent"):
            return "deploy", {}
        if self._aborting or obs["rolled_back"]:
            return finish_rollback(obs)
        if obs["schema"] != 2:
            return "migrate", {}
        requested = obs["requested_green_percent"]
        green = _fresh(obs, "green")
        if green is None and (requested > 0 or self.pre_check):
            if requested > 0 and _cached(obs) and not _verified_since_change(obs):
                return "verify", {}  # the cache lies a few minutes: spend them on evidence
            return "health_check", {"target": "green"}
        if green is not None and self._bad(green):
            return self._abort()
        if requested < CANARY and self.canary:
            return "shift_traffic", {"percent": CANARY}
        if requested < 100:
            return "shift_traffic", {"percent": 100}
        if not _verified_since_change(obs):
            return "verify", {}
        verify = obs["verify"]
        if verify["green_percent"] != requested:
            return "shift_traffic", {"percent": requested}  # the router fell short: re-apply
        if not verify["passed"]:
            return self._abort()
        return "complete", {}

    def _bad(self, report: dict[str, Any]) -> bool:
        return _bad(report) if self.read_signs else report["status"] != "healthy"

    def _abort(self) -> Call:
        if not self.react:
            return "verify", {}
        self._aborting = True
        return "rollback", {}


POLICIES = {"naive": Naive, "oracle": Oracle}
