"""How a release episode starts: its family and hidden facts from its first draws.

:class:`Facts` is ``Episode._draw_family`` (for ``mixed``), ``scenarios.draw`` and the
overrides, over arrays of episodes: the same facts from the same 18 doubles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.scenarios import Scenario
from opsgym.envs.release.scenarios import BASE
from opsgym.envs.release.state import ERROR_RATE_ALARM
from opsgym.vector._pyfloat import round_steps, rounded
from opsgym.vector._starts import FamilyDraw

FACTS = (
    "deploy_times_out",
    "deploy_committed",
    "v2_broken",
    "broken_error_rate",
    "migration_ack_lost",
    "migration_written",
    "v2_flapping",
    "flap_healthy",
    "v2_degrades",
    "shift_fraction",
    "stale_minutes",
    "degrade_after",
    "deploy_minutes",
    "migrate_minutes",
    "storm_minutes",
)
"""The hidden facts ``scenarios.draw`` gives a release episode (the overridable ones)."""
FLOATS = (
    "broken_error_rate",
    "flap_healthy",
    "shift_fraction",
    "stale_minutes",
    "degrade_after",
    "deploy_minutes",
    "migrate_minutes",
    "storm_minutes",
)
BOOLS = (
    *(f for f in FACTS if f not in FLOATS),
    "sound",  # neither broken nor crash-looping
    "looping",  # crash-looping and not broken: its probes and verifies read their draws
    "alarm_unsure",  # broken, its error rate forced so near the alarm that a draw decides
)
"""The facts as :meth:`Facts.of` returns them: float rows, then bool rows (with three the
batch derives from them)."""
DRAWS = 18
"""Numbers an episode draws at reset: the ``mixed`` family, then 17 for the facts."""

_RATES = tuple(BASE)
_FLAP = round_steps(0.4, 0.8, 3)
_FRACTION = round_steps(0.3, 0.8, 2)
_ERROR_RATE = round_steps(0.4, 0.9, 3)
ALARM_AT = round_steps(ERROR_RATE_ALARM, ERROR_RATE_ALARM, 3)[0][1]
"""The least error rate (before rounding to 3 places) a report shows above the alarm level."""


class Facts:
    """The facts of episodes of ``families`` drawn in ``split``, with ``overrides`` forced.

    Args:
        families: The world's named families, in order (a lane's family is an index).
        pool: The indices of the families a ``mixed`` episode draws from (its split's).
        overrides: Facts forced in every episode, ``family`` too if every lane is ``mixed``.
        all_mixed: Whether every lane plays ``mixed`` (``family`` may be forced only then).
    """

    def __init__(
        self,
        families: tuple[Scenario, ...],
        pool: list[int],
        overrides: dict[str, Any],
        all_mixed: bool,
    ):
        for key in overrides:
            if key not in FACTS and not (key == "family" and all_mixed):
                raise UnknownNameError("release override", key, FACTS)
        self.overrides = overrides
        self.family = FamilyDraw(families, pool, overrides.get("family") if all_mixed else None)
        self._rates = np.array([[f.params[r] for r in _RATES] for f in families]).T

    def of(
        self, draws: np.ndarray, mixed: np.ndarray, named: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(family, float facts, bool facts)`` of episodes from their first draws
        (``(18, episodes)``); facts are rows in the order of ``FLOATS`` and ``BOOLS``.
        """
        family = self.family.of(draws[0], mixed, named)
        u = np.where(mixed, draws[1:DRAWS], draws[0 : DRAWS - 1])
        p = dict(zip(_RATES, self._rates[:, family], strict=True))
        partial, stale = u[9] < p["p_partial"], u[11] < p["p_stale"]
        facts = {
            "deploy_times_out": u[0] < p["p_timeout"],
            "deploy_committed": u[1] < p["p_committed"],
            "v2_broken": u[2] < p["p_broken"],
            "broken_error_rate": rounded(_ERROR_RATE, 0.4 + 0.5 * u[3]),
            "migration_ack_lost": u[4] < p["p_ack_lost"],
            "migration_written": u[5] < p["p_written"],
            "v2_flapping": u[6] < p["p_flapping"],
            "flap_healthy": rounded(_FLAP, 0.4 + 0.4 * u[7]),
            "v2_degrades": u[8] < p["p_degrades"],
            "shift_fraction": np.where(partial, rounded(_FRACTION, 0.3 + 0.5 * u[10]), 1.0),
            "stale_minutes": np.where(stale, 2.0 + np.floor(4 * u[12]), 0.0),
            "degrade_after": 3.0 + np.floor(4 * u[13]),
            "deploy_minutes": 4.0 + np.floor(3 * u[14]),
            "migrate_minutes": 3.0 + np.floor(3 * u[15]),
            "storm_minutes": 6.0 + np.floor(7 * u[16]),
        }
        for key, value in self.overrides.items():
            if key != "family":
                facts[key] = np.full(family.shape, value)
        broken, flapping = facts["v2_broken"], facts["v2_flapping"]
        rate = facts["broken_error_rate"]
        facts["sound"] = ~(broken | flapping)
        facts["looping"] = flapping & ~broken
        facts["alarm_unsure"] = (  # 0.9 + 0.2 * u spreads a probe's rate over [0.9, 1.1)
            broken
            & (np.minimum(rate * 0.9, 1) < ALARM_AT)
            & (np.minimum(rate * (0.9 + 0.2), 1) >= ALARM_AT)
        )
        floats = np.stack([np.broadcast_to(facts[k], family.shape) for k in FLOATS])
        bools = np.stack([np.broadcast_to(facts[k], family.shape) for k in BOOLS])
        return family, floats, bools
