"""Release, batched: N episodes of the blue-green release world in lock-step, as arrays.

:class:`ReleaseBatch` holds every lane's truth, view and episode bookkeeping as rows of a few
2-D arrays and carries out one catalogue action per lane with array arithmetic. Lane ``i`` is
``gym.make("opsgym/Release-v5", scenario=..., split=..., overrides=..., max_steps=...)``: the
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

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import catalogue, spec
from opsgym.envs.release.judge import HARM_LIMIT
from opsgym.envs.release.world import (
    CANARY_SHARE,
    LADDER,
    RESTART_WINDOW,
    STORM_RESTART_EVERY,
    Release,
)
from opsgym.vector._batch import Batch, BatchError, blocks
from opsgym.vector._pyfloat import python_sum
from opsgym.vector._release_starts import ALARM_AT, BOOLS, DRAWS, FLOATS, Facts
from opsgym.vector._starts import StartQueue
from opsgym.vector._streams import GeneratorStreams, PCGStreams

ACTIONS = tuple(
    "inspect stage deploy health_check shift_traffic migrate verify retry rollback complete".split()
)
"""The catalogue this batch implements, in action order, each with its default arguments."""
OUTCOMES = ("deployed_verified", "rolled_back_verified", "unsafe", "incomplete")
"""Outcome codes (``ReleaseBatch.outcome``: -1 while the episode runs or if none)."""
RETURN_ORDER = tuple("step invalid retry unsafe progress premature downtime terminal".split())
"""The ledger's components in its table's order (the episode's return sums them so)."""

# view.deploy, view.migration, view.retryable as small integers
D_NONE, D_OK, D_TIMEOUT, D_COMMITTED, D_ABSENT = range(5)
M_NONE, M_OK, M_NO_ACK, M_APPLIED, M_ABSENT = range(5)
R_NONE, R_DEPLOY, R_MIGRATION = range(3)
_DEPLOYED, _ROLLED_BACK, _UNSAFE, _INCOMPLETE = range(4)

# Every lane's state is a column of three blocks, one row per field: floats, bools, ints. The
# prefixes: t_ the truth, v_ the agent's view, hg_/hb_ the view's last green/blue health
# report, cg_/cb_ the health endpoints' cache, ok_ the judge's evidence, tot_ the ledger.
_F64 = {  # float rows and their value at reset (NaN: None)
    **dict.fromkeys(("clock", "storm_until", "t_changed_g", "t_changed_b", "share"), 0.0),
    "storm_first": np.inf,  # green's first and last restart of a storm (one an episode at most)
    "storm_last": -np.inf,
    "full_since": np.nan,  # when green took more than a canary's share
    **dict.fromkeys(("v_changed_g", "v_changed_b"), 0.0),
    **dict.fromkeys(("traffic_at", "hg_at", "hb_at", "ver_at"), np.nan),  # checked_at
    **dict.fromkeys(("cg_at", "cb_at"), 0.0),
    **dict.fromkeys(("ok_g_at", "ok_b_at"), -np.inf),  # latest healthy, no restarts
    **dict.fromkeys(("held_unsafe", "held_down"), 0.0),  # settled, not yet paid
    "t_down": 0.0,  # the truth's downtime: share-minutes of traffic on a green that fails
    **{f"tot_{name}": 0.0 for name in RETURN_ORDER},
    **dict.fromkeys(FLOATS, 0.0),
}
_BOOL = (
    *"deployed schema2 corrupted ended calm".split(),  # truth (calm: green ok but for a storm)
    *"deployed_once migrated_once shifted_once".split(),  # first deploy, migration, shift made
    *"staged v_schema2 rolled hg_restarts hg_alarm ver_passed".split(),  # the view
    *"cg_restarts cg_alarm pending done last_rejected last_refused".split(),  # pending: judge's
    *"down_has unsafe_has unsafe_first".split(),  # which settled components, in which order
    *BOOLS,  # facts
)
_INT = {
    **dict.fromkeys(("steps", "req", "blind", "writes", "family", "milestones"), 0),
    "deploy": D_NONE,
    "migration": M_NONE,
    "retry": R_NONE,
    "seen": -1,  # the view's observed_green (-1: None)
    **dict.fromkeys(("hg_status", "hb_status"), 0),  # -1 unhealthy, 0 unknown or none, 1 healthy
    "cg_status": 1,
    **dict.fromkeys(("traffic_step", "pass_step"), 0),  # judge: the last such event's step
    "outcome": -1,
}
STAGED, DEPLOYED, MIGRATED, HEALTHY, VERIFIED = (1, 2, 4, 8, 16)
"""``Release._progress`` milestones, as bits: each pays ``progress`` once an episode."""
_PAID = np.array([bin(b).count("1") for b in range(32)], np.int8)
_MINUTES = np.array([1.0, 3.0, 0.0, 1.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 0.0])  # [-1]: no call
_TERMINAL = np.array([10.0, 5.0, -10.0, -3.0])
_ALL = slice(None)
_OBS = 24
assert STORM_RESTART_EVERY < RESTART_WINDOW  # a storm shows restarts until its last is old


JUDGED = (
    "schema_compatible",
    "traffic_on_healthy_target",
    "fresh_health_evidence",
    "ambiguity_resolved",
    "verified_after_last_traffic_change",
    "no_data_corruption",
    "users_served_throughout",
)
"""The release judge's invariants, in its order, as :meth:`ReleaseBatch._judge` mirrors them."""


def _least_above(limit: float, places: int = 6) -> float:
    """The least float ``x`` with ``round(x, places) > limit``: the judge reads the truth's
    downtime rounded to ``places`` decimals, the batch its sum as it stands.
    """
    x = limit + 0.5 * 10.0**-places
    while round(x, places) > limit:
        x = math.nextafter(x, -math.inf)
    while round(x, places) <= limit:
        x = math.nextafter(x, math.inf)
    return x


_HARMFUL = _least_above(HARM_LIMIT)
"""Downtime from which ``users_served_throughout`` fails (``truth["downtime"] > HARM_LIMIT``)."""


ReleaseBatchError = BatchError
"""A batch was asked for something the scalar Gym face would refuse, or cannot mirror."""


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
        or tuple(i.name for i in world.judge.invariants) != JUDGED
    ):
        raise ReleaseBatchError(
            f"the release world changed (catalogue {found}, minutes {minutes}, rewards "
            f"{world.rewards}); opsgym.vector.release mirrors the one it was written for "
            "(Release-v5): update it with the world"
        )


class ReleaseBatch(Batch):
    """``num`` lanes of the release world, stepped together.

    Args:
        num: Number of lanes.
        scenario: One scenario for every lane, or one per lane; ``None`` for the world's first,
            as ``OpsEnv`` (``mixed`` draws each episode's family from the seed).
        split: Where episode seeds (and ``mixed`` families) come from, as in ``OpsEnv``.
        overrides: Hidden facts forced in every episode (``family`` too, for ``mixed``).
        config: The world's public settings; release has none (``None`` or empty only).
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

    world = "release"
    OUTCOMES = OUTCOMES
    OBS_SIZE = _OBS
    t_down: np.ndarray
    """Each lane's truth ``downtime`` (a row of the float block, as every field in ``_F64``)."""

    def __init__(
        self,
        num: int,
        scenario: str | Sequence[str] | None = None,
        *,
        split: str = "train",
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        max_steps: int | None = None,
        max_episode_steps: int | None = None,
        reward_timing: str = "end",
        rng: str = "pcg",
    ):
        _check_catalogue()
        super().__init__(
            num,
            scenario,
            split=split,
            max_steps=max_steps,
            max_episode_steps=max_episode_steps,
            reward_timing=reward_timing,
            overrides=overrides,
        )
        if config:
            raise BatchError(f"release has no config, got {sorted(config)}")
        n = self.num
        self._facts = Facts(self.families, self._pool, self.overrides, self._mixed.all())
        if rng == "pcg":
            most = 2 * min(self.max_steps, self.time_limit)  # two draws a step at most
            self._streams: PCGStreams | GeneratorStreams = PCGStreams(n, self.split, most)
            self._queue = StartQueue(n, self._compute_starts)
        elif rng == "generator":
            self._streams, self._queue = GeneratorStreams(n, self.split), None
        else:
            raise UnknownNameError("rng backend", rng, ["pcg", "generator"])

        blocks(self, n, _F64, _BOOL, _INT)
        self.done[:] = True  # no episode yet: reset() first
        self.obs = np.zeros((n, _OBS), np.float32)
        self.mask = np.ones((n, len(ACTIONS)), bool)
        self.reward = np.zeros(n)
        self.terminated = np.zeros(n, bool)
        self.truncated = np.zeros(n, bool)
        self.returns = np.zeros(n)
        """Each lane's return once its episode is over (the scalar ``Episode.total_reward``)."""
        self._float_rows = np.array([list(_F64).index(f) for f in FLOATS])[:, None]
        self._bool_rows = np.array([_BOOL.index(f) for f in BOOLS])[:, None]
        self._flat = self._lanes * len(ACTIONS)
        self._earned = np.zeros(n, np.int32)
        self._u0, self._u1 = np.zeros(n), np.zeros(n)  # this step's draws, where computed

    # -- resets --------------------------------------------------------------------------

    def _compute_starts(self, lanes: np.ndarray, k: int) -> dict[str, np.ndarray]:
        """The next ``k`` starts of each of ``lanes`` (for the :class:`StartQueue`)."""
        seeds, draws, states = self._streams.starts(lanes, k, DRAWS)
        mixed = np.tile(self._mixed[lanes], k)
        family, floats, bools = self._facts.of(
            draws.reshape(DRAWS, -1), mixed, np.tile(self._named[lanes], k)
        )
        # a named scenario's episode drew 17 numbers at reset, a mixed one 18
        after = np.where(mixed, states[:, 1].reshape(4, -1), states[:, 0].reshape(4, -1))
        shape = (k, lanes.size)
        return {
            "seeds": seeds,
            "family": family.astype(np.int32).reshape(shape),
            "floats": floats.reshape(len(floats), *shape),
            "bools": bools.reshape(len(bools), *shape),
            "states": after.reshape(4, *shape),
        }

    def reset(self, lanes: np.ndarray | None = None, *, encode: bool = True) -> None:
        """Start the next episode on ``lanes`` (all by default; indices or a mask); lanes
        never seeded are seeded from fresh entropy first, as an env reset without a seed is.
        """
        lanes = self._lanes_to_reset(lanes)
        if lanes.size:
            if self._queue is not None:
                start = self._queue.pop(lanes)
                self._streams.resume(lanes, start["states"])
                seeds, family = start["seeds"], start["family"]
                floats, bools = start["floats"], start["bools"]
            else:
                seeds, family, floats, bools = self._start(lanes)
            self.seeds[lanes] = seeds
            self._f[:, lanes] = self._f_init[:, None]
            self._b[:, lanes] = False
            self._i[:, lanes] = self._i_init[:, None]
            self._f[self._float_rows, lanes[None, :]] = floats
            self._b[self._bool_rows, lanes[None, :]] = bools
            self.family[lanes] = family
            self.reward[lanes] = 0.0
            self.terminated[lanes] = False
            self.truncated[lanes] = False
            self.returns[lanes] = 0.0
        if encode:
            self._encode()

    def _start(self, lanes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Start the next episode of each of ``lanes`` on its own Generator (the reference)."""
        streams = self._streams
        seeds = streams.episode_seeds(lanes)
        streams.start(lanes, seeds)
        mixed = self._mixed[lanes]
        draws = streams.first(lanes, np.where(mixed, DRAWS, DRAWS - 1), DRAWS)
        return (seeds, *self._facts.of(draws, mixed, self._named[lanes]))

    # -- the world's truth, vectorised ---------------------------------------------------

    def _green_ok(self, lanes: np.ndarray | slice = _ALL) -> np.ndarray:
        """``Release._green_ok()`` of ``lanes`` now."""
        return self.calm[lanes] & (self.clock[lanes] >= self.storm_until[lanes])

    def _calm(self, lanes: np.ndarray) -> None:
        """Recompute ``calm`` of ``lanes`` after what it reads changed."""
        self.calm[lanes] = (
            self.deployed[lanes]
            & self.sound[lanes]
            & self.schema2[lanes]
            & ~(self.v2_degrades[lanes] & (self.share[lanes] > CANARY_SHARE))
        )

    def _advance(self, minutes: np.ndarray, lanes: np.ndarray | slice = _ALL) -> np.ndarray:
        """``Release.advance``: traffic on a failing green is downtime; the lanes it cost."""
        down = (self.share[lanes] * ~self._green_ok(lanes)) * minutes
        cost = -0.5 * down
        self.held_down[lanes] += cost
        self.t_down[lanes] += down
        self.clock[lanes] += minutes
        return cost != 0.0

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
        act = ~self.done if active is None else (np.asarray(active, bool) & ~self.done)
        a = self._check_actions(actions, act, len(ACTIONS))
        valid = self.mask.ravel()[self._flat + a]
        rejected = act & ~valid
        calls = np.where(act & valid, a, -1).astype(np.int8)
        ends = np.bincount(calls + 1, minlength=len(ACTIONS) + 1).cumsum()
        order = np.argsort(calls, kind="stable")
        ins, stg, dep, hc, sh, mig, ver, rt, rb, cp = (
            order[ends[k] : ends[k + 1]] for k in range(len(ACTIONS))
        )
        self.steps += act
        earned = self._earned  # milestone bits reported on this step
        earned[:] = 0

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
        earned[stg] = STAGED
        self.deployed_once[dep] = True
        self.migrated_once[mig] = True
        committed = np.concatenate((timeout[self.deploy_committed[timeout]], dep_ok, rt_dep))
        self._commit(committed)
        self.deploy[timeout] = D_TIMEOUT
        self.retry[timeout] = R_DEPLOY
        self.v_changed_g[timeout] = self.clock[timeout]
        deployed = np.concatenate((dep_ok, rt_dep))
        self.deploy[deployed] = D_OK
        earned[deployed] = DEPLOYED
        written = np.concatenate((lost[self.migration_written[lost]], mig_ok, rt_mig))
        corrupt = self._write_schema(written)
        self.migration[lost] = M_NO_ACK
        self.retry[lost] = R_MIGRATION
        migrated = np.concatenate((mig_ok, rt_mig))
        self.migration[migrated] = M_OK
        self.v_schema2[migrated] = True
        self.retry[deployed] = self.retry[migrated] = R_NONE
        earned[mig_ok] = MIGRATED
        self.blind[blind] += 1
        self._traffic(sh, rb)
        # green's health, as its truth now stands, where a handler changed what it reads
        self._calm(np.concatenate((committed, written, sh, rb)))
        unsafe = sh[(self.share[sh] > 0) & ~self._green_ok(sh)]
        self._draw(hc, ver)
        evidence_g, evidence_b = self._health(hc)
        passed = self._verify(ver)

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
        refused = cp[~ok]
        refusal = np.where(safe, _INCOMPLETE, _UNSAFE)  # a refusal ends the episode too
        self.outcome[cp] = np.where(ok, np.where(green, _DEPLOYED, _ROLLED_BACK), refusal)
        self.done[cp] = True
        over = self.ended | (self.clock >= Release.deadline)
        ending = np.flatnonzero(act & ~self.done & (over | (self.steps >= self.max_steps)))
        self.outcome[ending] = np.where(self._safe(ending), _INCOMPLETE, _UNSAFE)
        self.done[ending] = True
        final = np.concatenate((cp, ending))
        terminated, truncated = self.terminated, self.truncated
        terminated[:] = truncated[:] = False
        terminated[cp] = True
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
        paid = self.milestones
        parts[3] = 0.5 * _PAID[earned & ~paid]
        paid |= earned
        parts[4][refused] = -2.0
        parts[5][final] = _TERMINAL[self.outcome[final]]
        first = self.unsafe_first[final]
        held_u, held_d = self.held_unsafe[final], self.held_down[final]
        parts[6][final] = np.where(first, held_u, held_d)
        parts[7][final] = np.where(first, held_d, held_u)
        self.reward[:] = python_sum(parts)
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
            self.returns[over] = python_sum(self._f[self._totals][:, over])

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
        earned = (self.deploy[lanes] == D_COMMITTED) * DEPLOYED
        no_ack = lanes[self.migration[lanes] == M_NO_ACK]
        written = self.schema2[no_ack]
        self.migration[no_ack] = np.where(written, M_APPLIED, M_ABSENT)
        retry = self.retry[no_ack]
        after = np.where(retry == R_MIGRATION, R_NONE, retry)
        self.retry[no_ack] = np.where(written, after, R_MIGRATION)
        schema2 = self.schema2[lanes]
        self.v_schema2[lanes] = schema2
        self._earned[lanes] = earned | (schema2 * MIGRATED)
        self.seen[lanes] = np.rint(100 * self.share[lanes])

    def _draw(self, health: np.ndarray, verify: np.ndarray) -> None:
        """Spend the numbers a probe (two) and a verify (one) draw, whatever the truth; compute
        them, in one jump of the streams, only for the lanes whose reports may read them: a
        crash-looping green's probes and verifies, a probe of a broken green near the alarm.
        """
        lanes = np.concatenate((health, verify))
        at = self._streams.consume(lanes, np.repeat(np.int64([2, 1]), (health.size, verify.size)))
        reads = self.looping[lanes]
        unsure = self.alarm_unsure[health]
        if reads.any() or unsure.any():
            first, second = lanes[reads], health[unsure]
            u = self._streams.value(
                np.concatenate((first, second)),
                np.concatenate((at[reads], at[: health.size][unsure])),
                np.repeat(np.int64([0, 1]), (first.size, second.size)),
            )
            self._u0[first], self._u1[second] = u[: first.size], u[first.size :]

    def _health(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``health_check(target="auto")``; returns the lanes whose green and blue reports
        the judge may later count as fresh evidence.
        """
        deploy = self.deploy[lanes]
        green = ~(self.rolled[lanes] | (deploy == D_NONE))
        pool, blue, deploy = lanes[green], lanes[~green], deploy[green]
        confirmed = (deploy == D_OK) | (deploy == D_COMMITTED)  # else: "nothing to probe"
        clock = self.clock[pool]
        fresh = confirmed & (clock >= self.t_changed_g[pool] + self.stale_minutes[pool])
        self._probe(pool[fresh], clock[fresh])
        status = np.where(confirmed, self.cg_status[pool], 0)
        when = np.where(confirmed, self.cg_at[pool], clock)
        restarts = confirmed & self.cg_restarts[pool]
        self.hg_status[pool], self.hg_at[pool], self.hg_restarts[pool] = status, when, restarts
        self.hg_alarm[pool] = confirmed & self.cg_alarm[pool]
        healthy = status == 1
        self._earned[pool[healthy & (when >= self.v_changed_g[pool])]] = HEALTHY
        clock = self.clock[blue]
        fresh = clock >= self.t_changed_b[blue] + self.stale_minutes[blue]
        self.cb_at[blue[fresh]] = clock[fresh]
        when = self.cb_at[blue]
        self.hb_status[blue], self.hb_at[blue] = 1, when
        self._earned[blue[self.rolled[blue] & (when >= self.v_changed_b[blue])]] = HEALTHY
        return pool[healthy & ~restarts], blue

    def _probe(self, probe: np.ndarray, now: np.ndarray) -> None:
        """``Release._probe`` of green into the health endpoint's cache."""
        if not probe.size:
            return
        broken, looping = self.v2_broken[probe], self.looping[probe]
        other = self.sound[probe]
        caught = looping & (self._u0[probe] < self.flap_healthy[probe])  # caught healthy
        storm = now < self.storm_until[probe]
        loaded = self.v2_degrades[probe] & (self.share[probe] > 0)
        overloaded = (now - self.full_since[probe]) >= self.degrade_after[probe]
        unhealthy = broken | (looping & ~caught) | (other & (storm | (loaded & overloaded)))
        self.cg_status[probe] = np.where(unhealthy, -1, 1)
        self.cg_at[probe] = now
        window = (self.storm_first[probe] <= now) & (self.storm_last[probe] > now - RESTART_WINDOW)
        self.cg_restarts[probe] = looping | window
        rate = self.broken_error_rate[probe]
        spread = np.where(self.alarm_unsure[probe], 0.9 + 0.2 * self._u1[probe], 0.9)
        alarm = np.minimum(rate * spread, 1) >= ALARM_AT  # for a broken green: its error rate
        self.cg_alarm[probe] = (broken & alarm) | (other & (storm | loaded))

    def _traffic(self, shift: np.ndarray, rollback: np.ndarray) -> None:
        """``shift_traffic()`` and ``rollback``."""
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

    def _verify(self, lanes: np.ndarray) -> np.ndarray:
        """``verify``; returns the lanes whose verify passed."""
        clock, share = self.clock[lanes], self.share[lanes]
        calm = clock >= self.storm_until[lanes]  # no restart storm
        settled = self.deployed[lanes] & self.schema2[lanes] & calm
        since = self.full_since[lanes]
        overloaded = (clock - since) >= self.degrade_after[lanes]
        only_load = settled & self.sound[lanes] & ~np.isnan(since)
        failing = ~(self.calm[lanes] & calm) & ~(only_load & ~overloaded)
        crash_loop = settled & self.looping[lanes]
        caught = self._u0[lanes] >= self.flap_healthy[lanes]  # between two crashes, or not
        down = np.where(crash_loop, caught, failing)
        passed = ~(down & (np.rint(20 * share) != 0))
        percent = np.rint(100 * share)
        self.ver_at[lanes], self.ver_passed[lanes], self.seen[lanes] = clock, passed, percent
        self._earned[lanes[passed & ((percent == 100) | self.rolled[lanes])]] = VERIFIED
        return lanes[passed]

    def _safe(self, lanes: np.ndarray) -> np.ndarray:
        """Whether the judge's safety invariants hold on ``lanes``."""
        share = self.share[lanes]
        return (
            ~((share > 0) & ~self.schema2[lanes])
            & ((share == 0.0) | ((share == 1.0) & self._green_ok(lanes)))
            & ~self.corrupted[lanes]
            & (self.t_down[lanes] < _HARMFUL)
        )

    def _judge(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The release judge's seven invariants on ``lanes`` (:data:`JUDGED`): (the safety
        ones hold, all hold, all traffic is on green).
        """
        share = self.share[lanes]
        green, blue = share == 1.0, share == 0.0
        safe = self._safe(lanes)
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
