"""Scripted reference policies for the release world. They read observations only."""

from __future__ import annotations

from typing import Any

from opsgym.envs.release.world import ERROR_RATE_ALARM

Call = tuple[str, dict[str, Any]]


class Naive:
    """Trusts every report: follows the happy path, retries whatever reports a failure, and
    completes when the script runs out. It never inspects and never reads a timestamp.
    """

    name = "naive"
    _SCRIPT = ("stage", "deploy", "migrate", "shift_traffic", "health_check", "verify")

    def reset(self, seed: int | None = None) -> None:
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


def _fresh(obs: dict[str, Any], target: str) -> dict[str, Any] | None:
    report = obs["health"][target]
    if (
        report
        and report["status"] != "unknown"
        and report["checked_at"] >= obs["last_change"][target]
    ):
        return report
    return None


def _bad(report: dict[str, Any]) -> bool:
    return (
        report["status"] != "healthy"
        or report["restarts"] > 0
        or report["error_rate"] > ERROR_RATE_ALARM
    )


class Oracle:
    """A careful operator: resolves every ambiguity by inspection, waits for fresh health
    evidence, reads restarts and error rates, canaries at 10% before full traffic, confirms the
    router's real split, verifies, and rolls back at the first bad sign. Uses reports only.
    """

    name = "oracle"

    def reset(self, seed: int | None = None) -> None:
        """Start over."""
        self._aborting = False

    def act(self, obs: dict[str, Any], legal: list[Call] | None = None) -> Call:
        """Next call."""
        if obs["unresolved"]:
            return "inspect", {"target": "deploy" if "deploy" in obs["unresolved"] else "migration"}
        if obs["retryable"]:
            return "retry", {}
        if not obs["staged"]:
            return "stage", {}
        if obs["deploy"] in ("none", "absent"):
            return "deploy", {}
        if self._aborting or obs["rolled_back"]:
            return self._finish_rollback(obs)
        if obs["schema"] != 2:
            return "migrate", {}
        green = _fresh(obs, "green")
        if green is None:
            return "health_check", {"target": "green"}
        if _bad(green):
            self._aborting = True
            return "rollback", {}
        requested, observed = obs["requested_green_percent"], obs["observed_green_percent"]
        if requested > 0 and observed is None:
            return "inspect", {"target": "router"}
        if observed is not None and observed != requested:
            return "shift_traffic", {"percent": requested}
        if requested < 100:
            return "shift_traffic", {"percent": 10 if requested < 10 else 100}
        verify = obs["verify"]
        if verify is None or verify["checked_at"] < obs["traffic_changed_at"]:
            return "verify", {}
        if not verify["passed"] or verify["green_percent"] != 100:
            self._aborting = True
            return "rollback", {}
        return "complete", {}

    def _finish_rollback(self, obs: dict[str, Any]) -> Call:
        if not obs["rolled_back"]:
            return "rollback", {}
        if _fresh(obs, "blue") is None:
            return "health_check", {"target": "blue"}
        verify = obs["verify"]
        if verify is None or verify["checked_at"] < obs["traffic_changed_at"]:
            return "verify", {}
        return "complete", {}


POLICIES = {"naive": Naive, "oracle": Oracle}
