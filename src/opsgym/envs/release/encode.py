"""The release world as a vector, for the Gymnasium face. Built from the agent's view only.

Observation (``Box(-1, 1, (24,), float32)``):

| idx | meaning                                                        | values      |
|-----|----------------------------------------------------------------|-------------|
| 0   | share of the time window used                                  | 0..1        |
| 1   | share of the step budget used                                  | 0..1        |
| 2   | v2 staged                                                      | 0/1         |
| 3   | deploy confirmed (success report or inspected committed)       | 0/1         |
| 4   | deploy ambiguous (timed out, not inspected)                    | 0/1         |
| 5   | deploy found absent by inspect                                 | 0/1         |
| 6   | schema known to be v2                                          | 0/1         |
| 7   | migration ambiguous (no acknowledgement, not inspected)        | 0/1         |
| 8   | migration found absent by inspect                              | 0/1         |
| 9   | green share requested from the router                          | 0..1        |
| 10  | green share last observed (inspect/verify), -1 if not since    | -1, 0..1    |
| 11  | observed share equals the requested one                        | 0/1         |
| 12  | last green health status: -1 unhealthy, 0 unknown, 1 healthy   | -1/0/1      |
| 13  | that green report was gathered after green's last change       | 0/1         |
| 14  | that green report shows restarts (in its trailing 10 minutes)  | 0/1         |
| 15  | that green report shows an error rate above the alarm level    | 0/1         |
| 16  | last blue health status: -1, 0, 1                              | -1/0/1      |
| 17  | that blue report was gathered after blue's last change         | 0/1         |
| 18  | a verify passed after the last traffic change                  | 0/1         |
| 19  | traffic was rolled back to blue                                | 0/1         |
| 20  | blind retries so far (capped at 3) / 3                         | 0..1        |
| 21  | the last call was rejected                                     | 0/1         |
| 22  | a verify after the last traffic change failed                  | 0/1         |
| 23  | the judge refused the last call, a ``complete``                | 0/1         |

Actions (``Discrete(10)``), the tools in order with their default arguments:
``inspect(target="all")``, ``stage``, ``deploy``, ``health_check(target="auto")``,
``shift_traffic()`` (next canary step, or re-apply a short shift), ``migrate``, ``verify``,
``retry``, ``rollback``, ``complete``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from opsgym.envs.release.state import ERROR_RATE_ALARM, WINDOW_MINUTES, View

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

_STATUS: dict[str | None, float] = {"healthy": 1.0, "unhealthy": -1.0}


def _health(view: View, target: str) -> tuple[float, float, dict[str, Any]]:
    report = view.health[target] or {}
    status = _STATUS.get(report.get("status"), 0.0)
    fresh = float(bool(report) and report["checked_at"] >= view.changed_at[target])
    return status, fresh, report


class ReleaseEncoder:
    """Encodes an episode of the release world as 24 floats in [-1, 1]."""

    size = 24
    low, high = -1.0, 1.0
    actions: ClassVar[list[tuple[str, dict[str, Any]]]] = [
        ("inspect", {}),
        ("stage", {}),
        ("deploy", {}),
        ("health_check", {}),
        ("shift_traffic", {}),
        ("migrate", {}),
        ("verify", {}),
        ("retry", {}),
        ("rollback", {}),
        ("complete", {}),
    ]

    def encode(self, episode: Episode) -> np.ndarray:
        """The observation vector of ``episode`` now."""
        world = episode.world
        v: View = world.view
        g_status, g_fresh, g = _health(v, "green")
        b_status, b_fresh, _ = _health(v, "blue")
        observed = -1.0 if v.observed_green is None else v.observed_green / 100
        verify = v.verify or {}
        verified = bool(
            verify
            and v.traffic_changed_at is not None
            and verify["checked_at"] >= v.traffic_changed_at
        )
        last = episode.events[-1] if episode.events else None
        return np.array(
            [
                min(world.clock / WINDOW_MINUTES, 1.0),
                episode.steps / episode.max_steps if episode.max_steps else 0.0,
                v.staged,
                v.deploy_confirmed(),
                v.deploy == "timeout",
                v.deploy == "absent",
                v.schema == 2,
                v.migration == "no_ack",
                v.migration == "absent",
                v.requested_green / 100,
                observed,
                v.observed_green == v.requested_green,
                g_status,
                g_fresh,
                g.get("restarts", 0) > 0,
                g.get("error_rate", 0.0) > ERROR_RATE_ALARM,
                b_status,
                b_fresh,
                verified and verify["passed"],
                v.rolled_back,
                min(v.blind_retries, 3) / 3,
                last is not None and last["rejected"] is not None,
                verified and not verify["passed"],
                last is not None and last["report"].get("accepted") is False,
            ],
            dtype=np.float32,
        )
