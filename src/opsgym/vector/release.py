"""Release, batched: N episodes of the blue-green release world in lock-step, as arrays.

:class:`ReleaseBatch` holds every lane's truth, view and episode bookkeeping as rows of a few
2-D arrays and carries out one catalogue action per lane with array arithmetic. Lane ``i`` is
``gym.make("opsgym/Release-v4", scenario=..., split=..., overrides=..., max_steps=...)``: the
same episode seeds from the same Gym seed, the same observation vector, action mask, reward,
terminated and truncated at every step, the same outcome and return at the end, bit for bit.
It reads the constants of :mod:`opsgym.envs.release.world` and refuses a catalogue it was not
written for; the scalar world stays the reference (and the only source of records).

Where the scalar world keeps objects, the batch keeps what its observation, masks, rewards and
judge read: a health report is (status, checked_at, restarts > 0, error rate above the alarm),
a verify report (checked_at, passed), the judge's trajectory the few facts its invariants read
(the latest healthy report without restarts per pool, an ambiguous operation not inspected
since, the steps of the last traffic change and of the last passing verify). Lies are not
tracked (they are truth for the record, never seen by the agent). Python's own arithmetic is
reproduced where it differs from NumPy's: ``round(x, n)`` of the drawn facts through tables of
the exact points where Python's rounding steps, and the reward of a step summed component by
component in the order the scalar ledger holds them (``sum`` changed in Python 3.12).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.rewards import check_reward_timing
from opsgym.core.scenarios import check_split, families
from opsgym.envs.release.scenarios import BASE
from opsgym.envs.release.world import (
    CANARY_SHARE,
    ERROR_RATE_ALARM,
    LADDER,
    RESTART_WINDOW,
    STORM_RESTART_EVERY,
    Release,
)
from opsgym.registry import catalogue, spec
from opsgym.vector._streams import GeneratorStreams, PCGStreams, fresh_seeds

ACTIONS = (
    "inspect",
    "stage",
    "deploy",
    "health_check",
    "shift_traffic",
    "migrate",
    "verify",
    "retry",
    "rollback",
    "complete",
)
"""The catalogue this batch implements, in action order, each with its default arguments."""
OUTCOMES = ("deployed_verified", "rolled_back_verified", "unsafe", "incomplete")
"""Outcome codes (``ReleaseBatch.outcome``: -1 while the episode runs)."""
RETURN_ORDER = (
    "step",
    "invalid",
    "retry",
    "unsafe",
    "progress",
    "premature",
    "downtime",
    "terminal",
)
"""The ledger's components in its table's order (the episode's return sums them so)."""

# view.deploy, view.migration, view.retryable as small integers
D_NONE, D_OK, D_TIMEOUT, D_COMMITTED, D_ABSENT = range(5)
M_NONE, M_OK, M_NO_ACK, M_APPLIED, M_ABSENT = range(5)
R_NONE, R_DEPLOY, R_MIGRATION = range(3)
_DEPLOYED, _ROLLED_BACK, _UNSAFE, _INCOMPLETE = range(4)

_F64 = {  # float rows and their value at reset
    "clock": 0.0,
    "storm_until": 0.0,
    "storm_first": np.inf,  # green's first and last restart of a storm (at most one a episode)
    "storm_last": -np.inf,
    "t_changed_g": 0.0,
    "t_changed_b": 0.0,
    "share": 0.0,
    "full_since": np.nan,  # None
    "v_changed_g": 0.0,
    "v_changed_b": 0.0,
    "traffic_at": np.nan,  # the view's traffic_changed_at; None
    "hg_at": np.nan,  # checked_at of the view's last green report; no report
    "hb_at": np.nan,
    "ver_at": np.nan,
    "cg_at": 0.0,  # the health endpoints' cache
    "cb_at": 0.0,
    "ok_g_at": -np.inf,  # judge: latest checked_at of a healthy report without restarts
    "ok_b_at": -np.inf,
    "held_unsafe": 0.0,
    "held_down": 0.0,
    **{f"tot_{name}": 0.0 for name in RETURN_ORDER},
    "flap_healthy": 0.0,  # facts
    "shift_fraction": 0.0,
    "stale_minutes": 0.0,
    "degrade_after": 0.0,
    "deploy_minutes": 0.0,
    "migrate_minutes": 0.0,
    "storm_minutes": 0.0,
    "broken_error_rate": 0.0,
}
_BOOL = (
    "deployed",
    "schema2",
    "corrupted",
    "ended",
    "deployed_once",
    "migrated_once",
    "shifted_once",
    "staged",
    "v_schema2",
    "rolled",
    "hg_restarts",
    "hg_alarm",
    "cg_restarts",
    "cg_alarm",
    "ver_passed",
    "last_rejected",
    "last_refused",
    "pending",  # judge: an ambiguous operation not inspected since
    "done",
    "ms_staged",
    "ms_deployed",
    "ms_migrated",
    "ms_healthy",
    "ms_verified",
    "down_has",
    "unsafe_has",
    "unsafe_first",
    "sound",  # neither broken nor crash-looping
    "deploy_times_out",  # facts
    "deploy_committed",
    "v2_broken",
    "migration_ack_lost",
    "migration_written",
    "v2_flapping",
    "v2_degrades",
)
_INT = {
    "steps": 0,
    "deploy": D_NONE,
    "migration": M_NONE,
    "req": 0,
    "seen": -1,  # the view's observed_green; None
    "retry": R_NONE,
    "blind": 0,
    "hg_status": 0,  # -1 unhealthy, 0 unknown or none, 1 healthy
    "hb_status": 0,
    "cg_status": 1,
    "writes": 0,
    "traffic_step": 0,
    "pass_step": 0,
    "outcome": -1,
    "family": 0,
}
_FACTS = (
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
_RATES = tuple(BASE)
_MINUTES = np.array([1.0, 3.0, 0.0, 1.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 0.0])  # [-1]: no call
_TERMINAL = np.array([10.0, 5.0, -10.0, -3.0])
_NEUMAIER = sys.version_info >= (3, 12)  # sum() of floats compensates from 3.12 on
_ALL = slice(None)
_OBS = 24
assert STORM_RESTART_EVERY < RESTART_WINDOW  # a storm shows restarts until its last is old


class ReleaseBatchError(OpsgymError, ValueError):
    """A batch was asked for something the scalar Gym face would refuse, or cannot mirror."""


def python_round_steps(low: float, high: float, ndigits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(edges, values)`` such that ``values[searchsorted(edges, x, "right")]`` is Python's
    ``round(x, ndigits)`` for every float ``x`` in ``[low, high]``.

    ``np.round`` scales by a power of ten first and so differs from Python's correctly rounded
    ``round`` near halves; each edge here is found with Python's ``round`` itself.
    """
    scale = 10**ndigits
    first, last = int(np.floor(low * scale)) - 1, int(np.ceil(high * scale)) + 1
    values = np.array([k / scale for k in range(first, last + 1)])
    edges = []
    for k in range(first, last):
        upper = (k + 1) / scale
        x = (k + 0.5) / scale
        while round(x, ndigits) == upper:
            x = float(np.nextafter(x, -np.inf))
        while round(x, ndigits) != upper:
            x = float(np.nextafter(x, np.inf))
        edges.append(x)
    return np.array(edges), values


_FLAP = python_round_steps(0.4, 0.8, 3)
_FRACTION = python_round_steps(0.3, 0.8, 2)
_ERROR_RATE = python_round_steps(0.4, 0.9, 3)
_ALARM_AT = python_round_steps(ERROR_RATE_ALARM, ERROR_RATE_ALARM, 3)[0][1]
"""The least error rate (before rounding to 3 places) a report shows above the alarm level."""


def _round(table: tuple[np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    edges, values = table
    return values[np.searchsorted(edges, x, side="right")]


def _check_catalogue() -> None:
    """Refuse to run against a catalogue or world this batch was not written for."""
    found = [(tool.name, args.model_dump()) for tool, args in catalogue("release")]
    expected = [
        ("inspect", {"target": "all"}),
        ("stage", {}),
        ("deploy", {}),
        ("health_check", {"target": "auto"}),
        ("shift_traffic", {"percent": None}),
        ("migrate", {}),
        ("verify", {}),
        ("retry", {}),
        ("rollback", {}),
        ("complete", {}),
    ]
    minutes = [Release.tools[name].minutes for name in ACTIONS]
    world = spec("release")
    rewards = dict(zip(RETURN_ORDER, (-0.1, -1.0, -1.0, -3.0, 0.5, -2.0, -0.5, 1.0), strict=True))
    if (
        found != expected
        or minutes != _MINUTES[:-1].tolist()
        or Release.deadline != 150.0
        or world.rewards != rewards
        or world.outcome_rewards != dict(zip(OUTCOMES, _TERMINAL.tolist(), strict=True))
        or world.settled != {"unsafe", "downtime"}
        or LADDER != (10, 50, 100)
    ):
        raise ReleaseBatchError(
            f"the release world changed (catalogue {found}, minutes {minutes}, rewards "
            f"{world.rewards}); opsgym.vector.release mirrors the one it was written for "
            "(Release-v4): update it with the world"
        )


class ReleaseBatch:
    """``num`` lanes of the release world, stepped together.

    Args:
        num: Number of lanes.
        scenario: One scenario for every lane, or one per lane; ``None`` for the world's first,
            as ``OpsEnv`` (``mixed`` draws each episode's family from the seed).
        split: Where episode seeds (and ``mixed`` families) come from, as in ``OpsEnv``.
        overrides: Hidden facts forced in every episode (``family`` too, for ``mixed``).
        max_steps: The step budget (``None``: the registered 60), as ``OpsEnv(max_steps=...)``.
        max_episode_steps: The ``TimeLimit`` of ``gym.make`` (``None``: the registered 60): at
            it a lane says ``truncated`` whatever else happened, and one whose budget is longer
            stops there without a verdict.
        reward_timing: Only ``"end"``: the batch pays settled components on the last step.
        rng: ``"pcg"`` (lanes' PCG64 streams as arrays, episode starts computed ahead in
            bulk) or ``"generator"`` (one NumPy ``Generator`` per lane and stream, the
            reference): the same numbers either way.

    After :meth:`reset` and each :meth:`step`, the arrays ``obs`` (``(num, 24)`` float32),
    ``mask`` (``(num, 10)`` bool), ``reward``, ``terminated``, ``truncated``, ``done``,
    ``outcome`` and ``returns`` hold the lanes' results; ``seeds`` their episode seeds.
    """

    def __init__(
        self,
        num: int,
        scenario: str | Sequence[str] | None = None,
        *,
        split: str = "train",
        overrides: dict[str, Any] | None = None,
        max_steps: int | None = None,
        max_episode_steps: int | None = None,
        reward_timing: str = "end",
        rng: str = "pcg",
    ):
        _check_catalogue()
        if num < 1:
            raise ReleaseBatchError(f"num must be >= 1, got {num}")
        if check_reward_timing(reward_timing) != "end":
            raise ReleaseBatchError(
                "the batched release world pays settled rewards on the last step only "
                f"(reward_timing='end'), got {reward_timing!r}; use the scalar Gym face for dense"
            )
        self.num = n = int(num)
        self.split = check_split(split)
        world = spec("release")
        self.max_steps = world.max_steps if max_steps is None else int(max_steps)
        self.time_limit = world.max_steps if max_episode_steps is None else int(max_episode_steps)
        if min(self.max_steps, self.time_limit) < 1:
            raise ReleaseBatchError(
                "max_steps and max_episode_steps must be >= 1, got "
                f"{self.max_steps} and {self.time_limit}"
            )
        if scenario is None or isinstance(scenario, str):
            scenario = [world.scenario(scenario).name] * n
        names = list(scenario)
        if len(names) != n:
            raise ReleaseBatchError(f"{len(names)} scenarios for {n} lanes")
        for name in set(names):
            if world.scenario(name).held_out and self.split == "train":
                raise ReleaseBatchError(
                    f"Scenario {name!r} of 'release' is a held-out family: it is never in the "
                    "train split. Pass split='dev' or split='test' to evaluate on it."
                )
        self.scenarios = names
        self._families = world.families()
        self._family_names = [f.name for f in self._families]
        self._mixed = np.array([world.scenario(s).mixture for s in names])
        self._named = np.array([self._index(s) for s in names], np.int32)
        in_split = set(families(world.scenarios, self.split))
        pool = [i for i, f in enumerate(self._families) if f.name in in_split]
        weights = np.array([self._families[i].weight for i in pool], dtype=float)
        self._cdf = (weights / weights.sum()).cumsum()  # as rng.choice(len(pool), p=...)
        self._cdf /= self._cdf[-1]
        self._pool = np.array(pool)
        self._rates = np.array([[f.params[r] for r in _RATES] for f in self._families]).T
        self._overrides = self._check_overrides(dict(overrides or {}))
        if rng == "pcg":
            most = 2 * min(self.max_steps, self.time_limit)  # two draws a step at most
            self._streams: PCGStreams | GeneratorStreams = PCGStreams(n, self.split, most)
            self._queue: _StartQueue | None = _StartQueue(self)
        elif rng == "generator":
            self._streams, self._queue = GeneratorStreams(n, self.split), None
        else:
            raise UnknownNameError("rng backend", rng, ["pcg", "generator"])

        self._f = np.empty((len(_F64), n))
        self._f_init = np.array(list(_F64.values()))
        self._b = np.zeros((len(_BOOL), n), bool)
        self._i = np.empty((len(_INT), n), np.int32)
        self._i_init = np.array(list(_INT.values()), np.int32)
        for block, rows in ((self._f, _F64), (self._b, _BOOL), (self._i, _INT)):
            for row, name in enumerate(rows):
                setattr(self, name, block[row])
        self._f[:] = self._f_init[:, None]
        self._i[:] = self._i_init[:, None]
        self.done[:] = True  # no episode yet: reset() first
        self.seeds = np.zeros(n, np.int64)
        """Each lane's current episode seed."""
        self.obs = np.zeros((n, _OBS), np.float32)
        self.mask = np.ones((n, len(ACTIONS)), bool)
        self.reward = np.zeros(n)
        self.terminated = np.zeros(n, bool)
        self.truncated = np.zeros(n, bool)
        self.returns = np.zeros(n)
        """Each lane's return once its episode is over (the scalar ``Episode.total_reward``)."""
        self._lanes = np.arange(n)
        self._flat = self._lanes * len(ACTIONS)
        self._progress = np.zeros(n, np.int8)

    def _index(self, name: str) -> int:
        return self._family_names.index(name) if name in self._family_names else 0

    def _check_overrides(self, overrides: dict[str, Any]) -> dict[str, Any]:
        for key in overrides:
            if key == "family" and self._mixed.all():
                if overrides[key] not in self._family_names:
                    raise UnknownNameError("family", overrides[key], self._family_names)
            elif key not in _FACTS:
                raise UnknownNameError("release override", key, _FACTS)
        return overrides

    # -- resets --------------------------------------------------------------------------

    def seed(self, seeds: Sequence[int] | np.ndarray, lanes: np.ndarray | None = None) -> None:
        """Seed the lanes' seed streams, as ``env.reset(seed=s)`` seeds a scalar env's."""
        lanes = self._lanes if lanes is None else np.asarray(lanes)
        seeds = list(seeds)
        if len(seeds) != lanes.size:
            raise ReleaseBatchError(f"{len(seeds)} seeds for {lanes.size} lanes")
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0:
                raise ReleaseBatchError(f"Seed must be a python integer >= 0, got {s!r}")
        self._streams.seed(lanes, [int(s) for s in seeds])
        if self._queue is not None:
            self._queue.count[lanes] = 0

    def reset(self, lanes: np.ndarray | None = None, *, encode: bool = True) -> None:
        """Start the next episode on ``lanes`` (all by default; indices or a mask); lanes
        never seeded are seeded from fresh entropy first, as an env reset without a seed is.
        """
        lanes = self._lanes if lanes is None else np.asarray(lanes)
        if lanes.dtype == bool:
            lanes = np.flatnonzero(lanes)
        if lanes.size:
            unseeded = lanes[~self._streams.seeded(lanes)]
            if unseeded.size:
                self.seed(fresh_seeds(unseeded.size), unseeded)
            if self._queue is not None:
                seeds, family, facts = self._queue.pop(lanes)
            else:
                seeds, family, facts = self._start(lanes)
            self.seeds[lanes] = seeds
            self._f[:, lanes] = self._f_init[:, None]
            self._b[:, lanes] = False
            self._i[:, lanes] = self._i_init[:, None]
            for key, value in facts.items():
                getattr(self, key)[lanes] = value
            self.family[lanes] = family
            self.reward[lanes] = 0.0
            self.terminated[lanes] = False
            self.truncated[lanes] = False
            self.returns[lanes] = 0.0
        if encode:
            self._encode()

    def _start(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Start the next episode of each of ``lanes`` on its own Generator (the reference)."""
        streams = self._streams
        seeds = streams.episode_seeds(lanes)
        streams.start(lanes, seeds)
        mixed = self._mixed[lanes]
        draws = streams.first(lanes, np.where(mixed, 18, 17), 18)
        return (seeds, *self.facts(draws, mixed, self._named[lanes]))

    def facts(
        self, draws: np.ndarray, mixed: np.ndarray, named: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``(family, facts)`` of episodes from their first 18 doubles (``(18, episodes)``):
        ``draw_family`` first for a ``mixed`` episode, then ``scenarios.draw``, then the
        overrides, as ``Episode`` and ``Release`` do.
        """
        family = named
        if mixed.any():
            drawn = self._pool[np.searchsorted(self._cdf, draws[0], side="right")]
            if "family" in self._overrides:
                drawn[:] = self._index(self._overrides["family"])
            family = np.where(mixed, drawn, named)
        u = np.where(mixed, draws[1:18], draws[0:17])
        p = dict(zip(_RATES, self._rates[:, family], strict=True))
        partial, stale = u[9] < p["p_partial"], u[11] < p["p_stale"]
        facts = {
            "deploy_times_out": u[0] < p["p_timeout"],
            "deploy_committed": u[1] < p["p_committed"],
            "v2_broken": u[2] < p["p_broken"],
            "broken_error_rate": _round(_ERROR_RATE, 0.4 + 0.5 * u[3]),
            "migration_ack_lost": u[4] < p["p_ack_lost"],
            "migration_written": u[5] < p["p_written"],
            "v2_flapping": u[6] < p["p_flapping"],
            "flap_healthy": _round(_FLAP, 0.4 + 0.4 * u[7]),
            "v2_degrades": u[8] < p["p_degrades"],
            "shift_fraction": np.where(partial, _round(_FRACTION, 0.3 + 0.5 * u[10]), 1.0),
            "stale_minutes": np.where(stale, 2.0 + np.floor(4 * u[12]), 0.0),
            "degrade_after": 3.0 + np.floor(4 * u[13]),
            "deploy_minutes": 4.0 + np.floor(3 * u[14]),
            "migrate_minutes": 3.0 + np.floor(3 * u[15]),
            "storm_minutes": 6.0 + np.floor(7 * u[16]),
        }
        for key, value in self._overrides.items():
            if key != "family":
                facts[key] = np.full(family.shape, value)
        facts["sound"] = ~(facts["v2_broken"] | facts["v2_flapping"])
        return family, facts

    # -- the world's truth, vectorised ---------------------------------------------------

    def _green_ok(self, lanes: np.ndarray | slice = _ALL) -> np.ndarray:
        """``Release._green_ok()`` of ``lanes`` now."""
        return (
            self.deployed[lanes]
            & self.sound[lanes]
            & self.schema2[lanes]
            & (self.clock[lanes] >= self.storm_until[lanes])
            & ~(self.v2_degrades[lanes] & (self.share[lanes] > CANARY_SHARE))
        )

    def _advance(self, minutes: np.ndarray, lanes: np.ndarray | slice = _ALL) -> np.ndarray:
        """``Release.advance``: traffic on a failing green is downtime; the lanes it cost."""
        cost = -0.5 * ((self.share[lanes] * ~self._green_ok(lanes)) * minutes)
        self.held_down[lanes] += cost
        self.clock[lanes] += minutes
        return cost != 0.0

    def _milestone(self, name: str, lanes: np.ndarray) -> None:
        """``Release._progress``: each milestone pays once an episode."""
        flag = getattr(self, name)
        new = lanes[~flag[lanes]]
        flag[new] = True
        self._progress[new] += 1

    def _commit(self, lanes: np.ndarray) -> None:
        """``Release._commit_deploy``: a rollout over a running v2 sets off a restart storm
        (at most one an episode: only a retry of a committed deploy rolls out again).
        """
        storm = lanes[self.deployed[lanes]]
        if storm.size:
            clock, minutes = self.clock[storm], self.storm_minutes[storm]
            restarts = np.floor(minutes / STORM_RESTART_EVERY)
            self.storm_until[storm] = clock + minutes
            some = restarts >= 1
            self.storm_first[storm[some]] = clock[some]
            last = clock + (restarts - 1) * STORM_RESTART_EVERY
            self.storm_last[storm[some]] = last[some]
        self.deployed[lanes] = True
        self.t_changed_g[lanes] = self.v_changed_g[lanes] = self.clock[lanes]

    def _write_schema(self, lanes: np.ndarray) -> np.ndarray:
        """``Release._write_schema``; returns the lanes it corrupted (written twice)."""
        self.writes[lanes] += 1
        corrupt = lanes[self.writes[lanes] > 1]
        self.corrupted[corrupt] = self.ended[corrupt] = True
        self.schema2[lanes] = True
        return corrupt

    # -- stepping ------------------------------------------------------------------------

    def step(self, actions: np.ndarray, active: np.ndarray | None = None) -> None:
        """Carry out catalogue action ``actions[i]`` on every ``active`` lane whose episode
        runs (others are left as they are, their reward 0).
        """
        n = self.num
        a = np.asarray(actions)
        if a.shape != (n,):
            raise ReleaseBatchError(f"actions must have shape ({n},), got {a.shape}")
        act = ~self.done if active is None else (np.asarray(active, bool) & ~self.done)
        inside = (a >= 0) & (a < len(ACTIONS))
        if not inside[act].all():
            bad = a[act & ~inside][0].item()
            raise ReleaseBatchError(f"action must be in [0, {len(ACTIONS)}), got {bad!r}")
        valid = self.mask.ravel()[self._flat + np.where(inside, a, 0)]
        rejected = act & ~valid
        calls = np.where(act & valid, a, -1).astype(np.int8)
        ends = np.bincount(calls + 1, minlength=len(ACTIONS) + 1).cumsum()
        order = np.argsort(calls, kind="stable")
        ins, stg, dep, hc, sh, mig, ver, rt, rb, cp = (
            order[ends[k] : ends[k + 1]] for k in range(len(ACTIONS))
        )
        self.steps += act
        self._progress[:] = 0

        # -- what the handlers read before anything changes ------------------------------
        retry = self.retry[rt]
        rt_dep, rt_mig = rt[retry == R_DEPLOY], rt[retry == R_MIGRATION]
        blind = np.concatenate(
            (rt_dep[self.deploy[rt_dep] == D_TIMEOUT], rt_mig[self.migration[rt_mig] == M_NO_ACK])
        )
        first = ~self.deployed_once[dep] & self.deploy_times_out[dep]
        timeout, dep_ok = dep[first], dep[~first]
        first = ~self.migrated_once[mig] & self.migration_ack_lost[mig]
        lost, mig_ok = mig[first], mig[~first]

        # -- time passes first; traffic on a target that fails is downtime --------------
        minutes = _MINUTES[calls]
        for lanes, row in ((dep, self.deploy_minutes), (rt_dep, self.deploy_minutes)):
            minutes[lanes] = row[lanes]
        for lanes in (mig, rt_mig):
            minutes[lanes] = self.migrate_minutes[lanes]
        down = self._advance(minutes)
        if timeout.size:
            down[timeout] |= self._advance(np.full(timeout.size, 10.0), timeout)

        # -- the handlers, each on its own lanes -----------------------------------------
        self._inspect(ins)
        self.staged[stg] = True
        self._milestone("ms_staged", stg)
        self.deployed_once[dep] = True
        self.migrated_once[mig] = True
        self._commit(np.concatenate((timeout[self.deploy_committed[timeout]], dep_ok, rt_dep)))
        self.deploy[timeout] = D_TIMEOUT
        self.retry[timeout] = R_DEPLOY
        self.v_changed_g[timeout] = self.clock[timeout]
        deployed = np.concatenate((dep_ok, rt_dep))
        self.deploy[deployed] = D_OK
        self._milestone("ms_deployed", deployed)
        written = np.concatenate((lost[self.migration_written[lost]], mig_ok, rt_mig))
        corrupt = self._write_schema(written)
        self.migration[lost] = M_NO_ACK
        self.retry[lost] = R_MIGRATION
        migrated = np.concatenate((mig_ok, rt_mig))
        self.migration[migrated] = M_OK
        self.v_schema2[migrated] = True
        self.retry[deployed] = self.retry[migrated] = R_NONE
        self._milestone("ms_migrated", mig_ok)
        self.blind[blind] += 1
        # a probe draws two numbers and a verify one, whatever the truth: spent now, computed
        # only for the lanes whose reports depend on them
        at = self._streams.consume(
            np.concatenate((hc, ver)), np.repeat(np.int64([2, 1]), (hc.size, ver.size))
        )
        evidence_g, evidence_b = self._health(hc, at[: hc.size])
        unsafe = self._traffic(sh, rb)
        passed = self._verify(ver, at[hc.size :])

        # -- settled components accrue out of sight --------------------------------------
        harmed = np.concatenate((unsafe, corrupt))
        if harmed.size:
            new = harmed[~self.unsafe_has[harmed]]
            self.unsafe_first[new] = ~(self.down_has[new] | down[new])
            self.unsafe_has[harmed] = True
            self.held_unsafe[unsafe] += -3.0 * self.share[unsafe]
            self.held_unsafe[corrupt] += -3.0
        self.down_has |= down

        # -- the judge reads the truth after the call and the trajectory before it -------
        safe, ok, green = self._judge(cp)
        accepted, refused = cp[ok], cp[~ok]
        self.outcome[accepted] = np.where(green[ok], _DEPLOYED, _ROLLED_BACK)
        self.done[accepted] = True
        over = self.ended | (self.clock >= Release.deadline)
        ending = np.flatnonzero(act & ~self.done & (over | (self.steps >= self.max_steps)))
        safe, _, _ = self._judge(ending)
        self.outcome[ending] = np.where(safe, _INCOMPLETE, _UNSAFE)
        self.done[ending] = True
        final = np.concatenate((accepted, ending))
        terminated, truncated = self.terminated, self.truncated
        terminated[:] = truncated[:] = False
        terminated[accepted] = True
        closed = over[ending]
        terminated[ending[closed]] = True
        truncated[ending[~closed]] = True
        # gym.make's TimeLimit says truncated at its limit, whatever else happened, and stops
        # an episode its own budget would let go on (without a verdict)
        truncated |= act & (self.steps >= self.time_limit)
        self.done |= truncated

        # -- the step's reward: its components in the order the ledger holds them --------
        parts = np.zeros((8, n))
        parts[0][act] = -0.1
        parts[1][rejected] = -1.0
        parts[2][blind] = -1.0
        parts[3] = 0.5 * self._progress
        parts[4][refused] = -2.0
        parts[5][final] = _TERMINAL[self.outcome[final]]
        first = self.unsafe_first[final]
        held_u, held_d = self.held_unsafe[final], self.held_down[final]
        parts[6][final] = np.where(first, held_u, held_d)
        parts[7][final] = np.where(first, held_d, held_u)
        self.reward[:] = _python_sum(parts)
        self.tot_step += parts[0]
        self.tot_invalid += parts[1]
        self.tot_retry += parts[2]
        self.tot_progress += parts[3]
        self.tot_premature += parts[4]
        self.tot_terminal += parts[5]
        self.tot_unsafe[final] += held_u
        self.tot_downtime[final] += held_d
        over = np.flatnonzero(terminated | truncated)
        if over.size:
            self.returns[over] = _python_sum(self._f[self._totals][:, over])

        # -- the trajectory the judge reads next time ------------------------------------
        self.pending[ins] = False
        self.pending[timeout] = self.pending[lost] = True
        self.traffic_step[sh] = self.steps[sh]
        self.traffic_step[rb] = self.steps[rb]
        self.pass_step[passed] = self.steps[passed]
        self.ok_g_at[evidence_g] = np.maximum(self.ok_g_at[evidence_g], self.cg_at[evidence_g])
        self.ok_b_at[evidence_b] = np.maximum(self.ok_b_at[evidence_b], self.cb_at[evidence_b])
        self.last_rejected[:] = rejected | (self.last_rejected & ~act)
        self.last_refused &= ~act
        self.last_refused[refused] = True
        self._encode()

    def _inspect(self, lanes: np.ndarray) -> None:
        """``inspect(target="all")``: resolves an ambiguous deploy or migration, reads the
        router's split.
        """
        if not lanes.size:
            return
        timed_out = lanes[self.deploy[lanes] == D_TIMEOUT]
        deployed = self.deployed[timed_out]
        self.deploy[timed_out] = np.where(deployed, D_COMMITTED, D_ABSENT)
        retry = self.retry[timed_out]
        after = np.where(retry == R_DEPLOY, R_NONE, retry)
        self.retry[timed_out] = np.where(deployed, after, R_DEPLOY)
        self._milestone("ms_deployed", lanes[self.deploy[lanes] == D_COMMITTED])
        no_ack = lanes[self.migration[lanes] == M_NO_ACK]
        written = self.schema2[no_ack]
        self.migration[no_ack] = np.where(written, M_APPLIED, M_ABSENT)
        retry = self.retry[no_ack]
        after = np.where(retry == R_MIGRATION, R_NONE, retry)
        self.retry[no_ack] = np.where(written, after, R_MIGRATION)
        schema2 = self.schema2[lanes]
        self.v_schema2[lanes] = schema2
        self._milestone("ms_migrated", lanes[schema2])
        self.seen[lanes] = np.rint(100 * self.share[lanes])

    def _health(self, lanes: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``health_check(target="auto")``, its two draws spent at ``at``; returns the lanes
        whose green and blue reports the judge may later count as fresh evidence.
        """
        deploy = self.deploy[lanes]
        green = ~(self.rolled[lanes] | (deploy == D_NONE))
        confirmed = (deploy == D_OK) | (deploy == D_COMMITTED)
        unknown, known = lanes[green & ~confirmed], green & confirmed
        pool, blue, at = lanes[known], lanes[~green], at[known]
        clock = self.clock[pool]
        fresh = clock >= self.t_changed_g[pool] + self.stale_minutes[pool]
        probe, at, now = pool[fresh], at[fresh], clock[fresh]
        if probe.size:
            broken, flapping = self.v2_broken[probe], self.v2_flapping[probe]
            other, looping = ~broken & ~flapping, flapping & ~broken
            caught = np.zeros(probe.size, bool)  # a crash-looping pool caught healthy
            if looping.any():
                u0 = self._streams.value(probe[looping], at[looping], 0)
                caught[looping] = u0 < self.flap_healthy[probe[looping]]
            storm = now < self.storm_until[probe]
            loaded = self.v2_degrades[probe] & (self.share[probe] > 0)
            overloaded = (now - self.full_since[probe]) >= self.degrade_after[probe]
            unhealthy = broken | (looping & ~caught) | (other & (storm | (loaded & overloaded)))
            self.cg_status[probe] = np.where(unhealthy, -1, 1)
            self.cg_at[probe] = now
            window = (self.storm_first[probe] <= now) & (
                self.storm_last[probe] > now - RESTART_WINDOW
            )
            self.cg_restarts[probe] = looping | window
            self.cg_alarm[probe] = (broken & self._broken_alarm(probe, at)) | (
                other & (storm | loaded)
            )
        status, at = self.cg_status[pool], self.cg_at[pool]
        restarts = self.cg_restarts[pool]
        self.hg_status[pool], self.hg_at[pool] = status, at
        self.hg_restarts[pool], self.hg_alarm[pool] = restarts, self.cg_alarm[pool]
        self.hg_status[unknown], self.hg_at[unknown] = 0, self.clock[unknown]
        self.hg_restarts[unknown] = self.hg_alarm[unknown] = False
        healthy = status == 1
        self._milestone("ms_healthy", pool[healthy & (at >= self.v_changed_g[pool])])
        clock = self.clock[blue]
        fresh = clock >= self.t_changed_b[blue] + self.stale_minutes[blue]
        self.cb_at[blue[fresh]] = clock[fresh]
        at = self.cb_at[blue]
        self.hb_status[blue], self.hb_at[blue] = 1, at
        self._milestone("ms_healthy", blue[self.rolled[blue] & (at >= self.v_changed_b[blue])])
        return pool[healthy & ~restarts], blue

    def _broken_alarm(self, lanes: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Whether a probe of a broken green reports an error rate above the alarm level: its
        rate is ``round(min(broken_error_rate * (0.9 + 0.2 * u), 1), 3)``, above it for any
        ``u`` unless the rate was forced near it (then ``u`` decides).
        """
        rate = self.broken_error_rate[lanes]
        alarm = np.minimum(rate * 0.9, 1) >= _ALARM_AT
        unsure = ~alarm & (np.minimum(rate * (0.9 + 0.2), 1) >= _ALARM_AT)
        if unsure.any():
            u1 = self._streams.value(lanes[unsure], at[unsure], 1)
            alarm[unsure] = np.minimum(rate[unsure] * (0.9 + 0.2 * u1), 1) >= _ALARM_AT
        return alarm

    def _traffic(self, shift: np.ndarray, rollback: np.ndarray) -> np.ndarray:
        """``shift_traffic()`` and ``rollback``; returns the lanes whose shift is unsafe."""
        req, seen, share = self.req[shift], self.seen[shift], self.share[shift]
        ladder = np.where(req < LADDER[0], LADDER[0], np.where(req < LADDER[1], LADDER[1], 100))
        percent = np.where((seen >= 0) & (seen < req), req, ladder)
        fraction = np.where(self.shifted_once[shift], 1.0, self.shift_fraction[shift])
        self.shifted_once[shift] = True
        applied = np.where(percent <= share * 100, percent, np.rint(percent * fraction))
        self.share[shift] = applied / 100
        self.req[shift] = percent
        self.share[rollback] = self.req[rollback] = 0
        lanes = np.concatenate((shift, rollback))
        clock = self.clock[lanes]
        full = self.share[lanes] > CANARY_SHARE
        since = self.full_since[lanes]
        self.full_since[lanes] = np.where(full, np.where(np.isnan(since), clock, since), np.nan)
        self.seen[lanes] = -1
        self.rolled[shift], self.rolled[rollback] = False, True
        for row in (self.t_changed_g, self.t_changed_b, self.v_changed_g, self.v_changed_b):
            row[lanes] = clock
        self.traffic_at[lanes] = clock
        return shift[(self.share[shift] > 0) & ~self._green_ok(shift)]

    def _verify(self, lanes: np.ndarray, at: np.ndarray) -> np.ndarray:
        """``verify``, its draw spent at ``at``; returns the lanes whose verify passed."""
        clock, share = self.clock[lanes], self.share[lanes]
        settled = self.deployed[lanes] & self.schema2[lanes] & (clock >= self.storm_until[lanes])
        since = self.full_since[lanes]
        overloaded = (clock - since) >= self.degrade_after[lanes]
        only_load = settled & self.sound[lanes] & ~np.isnan(since)
        failing = ~self._green_ok(lanes) & ~(only_load & ~overloaded)
        crash_loop = settled & self.v2_flapping[lanes] & ~self.v2_broken[lanes]
        down = failing
        if crash_loop.any():  # caught between two crashes, or not
            u = self._streams.value(lanes[crash_loop], at[crash_loop], 0)
            down[crash_loop] = u >= self.flap_healthy[lanes[crash_loop]]
        passed = ~(down & (np.rint(20 * share) != 0))
        percent = np.rint(100 * share)
        self.ver_at[lanes], self.ver_passed[lanes], self.seen[lanes] = clock, passed, percent
        self._milestone("ms_verified", lanes[passed & ((percent == 100) | self.rolled[lanes])])
        return lanes[passed]

    def _judge(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The release judge's six invariants on ``lanes``: (the safety ones hold, all hold,
        all traffic is on green).
        """
        share = self.share[lanes]
        green, blue = share == 1.0, share == 0.0
        safe = (
            ~((share > 0) & ~self.schema2[lanes])
            & (blue | (green & self._green_ok(lanes)))
            & ~self.corrupted[lanes]
        )
        fresh = (green & (self.ok_g_at[lanes] >= self.t_changed_g[lanes])) | (
            blue & (self.ok_b_at[lanes] >= self.t_changed_b[lanes])
        )
        traffic = self.traffic_step[lanes]
        verified = (traffic > 0) & (self.pass_step[lanes] > traffic)
        return safe, safe & fresh & ~self.pending[lanes] & verified, green

    # -- views ---------------------------------------------------------------------------

    def _encode(self) -> None:
        """``ReleaseEncoder.encode`` and ``action_masks`` of every lane, into ``obs``, ``mask``."""
        o, deploy, migration = self.obs, self.deploy, self.migration
        confirmed = (deploy == D_OK) | (deploy == D_COMMITTED)
        verified = self.ver_at >= self.traffic_at
        o[:, 0] = np.minimum(self.clock / Release.deadline, 1.0)
        o[:, 1] = self.steps / self.max_steps
        o[:, 2] = self.staged
        o[:, 3] = confirmed
        o[:, 4] = deploy == D_TIMEOUT
        o[:, 5] = deploy == D_ABSENT
        o[:, 6] = self.v_schema2
        o[:, 7] = migration == M_NO_ACK
        o[:, 8] = migration == M_ABSENT
        o[:, 9] = self.req / 100
        o[:, 10] = np.where(self.seen < 0, -1.0, self.seen / 100)
        o[:, 11] = self.seen == self.req
        o[:, 12] = self.hg_status
        o[:, 13] = self.hg_at >= self.v_changed_g
        o[:, 14] = self.hg_restarts
        o[:, 15] = self.hg_alarm
        o[:, 16] = self.hb_status
        o[:, 17] = self.hb_at >= self.v_changed_b
        o[:, 18] = verified & self.ver_passed
        o[:, 19] = self.rolled
        o[:, 20] = np.minimum(self.blind, 3) / 3
        o[:, 21] = self.last_rejected
        o[:, 22] = verified & ~self.ver_passed
        o[:, 23] = self.last_refused
        m = self.mask  # columns 0, 3, 6 and 9 are always True
        m[:, 1] = ~self.staged
        m[:, 2] = self.staged & ((deploy == D_NONE) | (deploy == D_ABSENT))
        m[:, 4] = confirmed
        m[:, 5] = (migration != M_NO_ACK) & ~self.v_schema2
        m[:, 7] = self.retry != R_NONE
        m[:, 8] = deploy != D_NONE

    _totals = [list(_F64).index(f"tot_{name}") for name in RETURN_ORDER]

    def outcomes(self, lanes: np.ndarray | None = None) -> list[str | None]:
        """The outcome of each lane's episode (``None`` while it runs, or if the time limit
        stopped it first).
        """
        codes = self.outcome if lanes is None else self.outcome[lanes]
        return [OUTCOMES[c] if c >= 0 else None for c in codes.tolist()]


class _StartQueue:
    """Each lane's next episode starts, computed ahead for many lanes and episodes at once.

    A lane's episodes are known before they are played: its seed stream and each episode's
    first draws do not depend on the actions. Computing them for one lane at a time costs a
    few hundred small array operations per reset; computing ``batch`` of them for every lane
    that has room costs the same operations on arrays thousands of times longer, once every
    few hundred steps. Each lane's queue is a ring of ``capacity`` starts, refilled (for every
    lane with room for a batch) when a lane runs out.
    """

    def __init__(self, world: ReleaseBatch, capacity: int = 16, batch: int = 8):
        n = world.num
        self.world, self.capacity, self.batch = world, capacity, batch
        self.head = np.zeros(n, np.int64)
        self.count = np.zeros(n, np.int64)
        self.seeds = np.zeros((capacity, n), np.int64)
        self.family = np.zeros((capacity, n), np.int32)
        self.facts: dict[str, np.ndarray] = {}
        self.states = np.zeros((4, capacity, n), np.uint64)

    def pop(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Take the next start of each of ``lanes``; resume their episode streams there."""
        if not self.count[lanes].all():
            self._refill()
        at = self.head[lanes]
        self.head[lanes] = (at + 1) % self.capacity
        self.count[lanes] -= 1
        self.world._streams.resume(lanes, self.states[:, at, lanes])
        facts = {key: value[at, lanes] for key, value in self.facts.items()}
        return self.seeds[at, lanes], self.family[at, lanes], facts

    def _refill(self) -> None:
        world, k = self.world, self.batch
        lanes = np.flatnonzero(self.count <= self.capacity - k)
        seeds, draws, states = world._streams.starts(lanes, k, 18)
        mixed = np.tile(world._mixed[lanes], k)
        family, facts = world.facts(draws.reshape(18, -1), mixed, np.tile(world._named[lanes], k))
        at = (self.head[lanes] + self.count[lanes] + np.arange(k)[:, None]) % self.capacity
        self.seeds[at, lanes] = seeds
        self.family[at, lanes] = family.reshape(k, -1)
        for key, value in facts.items():
            if key not in self.facts:
                self.facts[key] = np.zeros((self.capacity, world.num), value.dtype)
            self.facts[key][at, lanes] = value.reshape(k, -1)
        # a named scenario's episode drew 17 numbers at reset, a mixed one 18
        after = np.where(mixed, states[:, 1].reshape(4, -1), states[:, 0].reshape(4, -1))
        self.states[:, at, lanes] = after.reshape(4, k, -1)
        self.count[lanes] += k


def _python_sum(columns: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    """``sum([c0, c1, ...])`` of Python floats, lane by lane (absent components are zeros,
    which leave Python's sum unchanged): left to right before 3.12, compensated after.
    """
    total = columns[0].copy()
    if not _NEUMAIER:
        for column in columns[1:]:
            total += column
        return total
    comp = np.zeros_like(total)
    for x in columns[1:]:
        t = total + x
        comp += np.where(np.abs(total) >= np.abs(x), (total - t) + x, (x - t) + total)
        total = t
    return np.where((comp != 0) & np.isfinite(comp), total + comp, total)
