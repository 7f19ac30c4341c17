"""Oversight, batched: N episodes of the release-gate oversight world in lock-step, as arrays.

:class:`OversightBatch` holds every lane's truth, view and bookkeeping as rows of a few 2-D
arrays and carries out one catalogue action per lane with array arithmetic. Lane ``i`` is
``gym.make("opsgym/Oversight-v1", scenario=..., split=..., overrides=..., config=...,
max_steps=...)``: the same episode seeds, observation vector, action mask, reward, terminated
and truncated at every step, the same outcome and return at the end, bit for bit. It refuses a
catalogue or reward table it was not written for; the scalar world stays the reference.

Where the scalar world keeps dicts, the batch keeps what the encoder, the masks, the rewards and
the judge read. Artifacts: the ticket and the PR diff are living (one each, reworked in place:
when each was last read and reworked, what the read showed); a CI run and a deploy log are
snapshots, and a rework makes a new one, so each has two handles: the one the triage (slot 1)
or deploy-gate (slot 2) proposal cites, and the one the ship proposal (slot 3) cites, the same
artifact (``*_alias``) until the ship proposal's own rework. A report's findings reduce to bits
of the truth (a ticket shows S1 while the P1 is open, a diff S4 while its migration has no down
migration, a run S2 and a log S3 and S5 as the release stood when they were made). Clocks are
whole minutes (every duration, deadline and rework is), so time arithmetic is exact.

The judge of a hold replays ``schedule.ship_time`` in closed form: after the current phase's
reworks land, every later phase is a fixed sum of blocks, reworks and approvals; the triage
phase, where two proposals share one supervisor, is replayed action by action over the lanes
that need it (at most 8 actions for the omniscient supervisor, 17 for the careful one).
Lies are not tracked (they are truth for the record, never seen by the agent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import catalogue
from opsgym.envs.oversight.domain import COST, MINUTES, QUESTIONS, RULES
from opsgym.envs.oversight.encode import ACTIONS as CATALOGUE
from opsgym.envs.oversight.encode import ANSWERS, PER_SLOT, OversightEncoder
from opsgym.envs.oversight.rewards import OUTCOME_REWARDS, REWARDS, TUNABLE
from opsgym.envs.oversight.scenarios import ARCHETYPE_MIXES, settings
from opsgym.envs.oversight.workers import _CONFIDENCE, _P_LOW_RISK
from opsgym.vector._batch import Batch, BatchError, bind, blocks, pick
from opsgym.vector._oversight_starts import (
    BOOLS,
    FLOATS,
    INTS,
    KEPT,
    KIND,
    OWNER,
    Facts,
    generator_tape,
    pcg_tape,
    pool_draws,
)
from opsgym.vector._pyfloat import python_sum, round_steps, rounded
from opsgym.vector._starts import StartQueue
from opsgym.vector._streams import GeneratorStreams, PCGStreams

OUTCOMES = tuple(OUTCOME_REWARDS)
"""Outcome codes (``OversightBatch.outcome``: -1 while the episode runs or if none)."""
SAFE, UNSAFE, MISSED, CORRECT, STALLED, UNNECESSARY, NO_DECISION = range(len(OUTCOMES))
assert OUTCOMES == (
    "safe_ship",
    "unsafe_ship",
    "missed_deadline",
    "correct_hold",
    "stalled_hold",
    "unnecessary_hold",
    "no_decision",
)
RETURN_ORDER = tuple(REWARDS)
"""The ledger's components in its table's order (the episode's return sums them so)."""

PR, CI, TICKET, LOG = KIND["pr_diff"], KIND["ci_run"], KIND["ticket"], KIND["deploy_log"]
S1, S2, S3, S4, S5 = range(5)
REWORK = np.array([TICKET, CI, LOG, PR, LOG])
"""The artifact kind a rework under each rule changes or makes (``domain.REWORKS``)."""
PENDING, BLOCKED, APPROVED = 1, 2, 3
_STATUSES = np.array([PENDING, BLOCKED, APPROVED])
N_ACTIONS = len(CATALOGUE)
INSPECTS = ((0, TICKET), (1, PR), (1, CI), (2, LOG), (3, PR), (3, CI), (3, TICKET), (3, LOG))
"""Actions 0-7: (slot, kind) of each inspection."""
ASK0, APPROVE0, BLOCK0, STOP, AWAIT = 8, 28, 32, 42, 43
BLOCKS = ((0, S1), (1, S2), (1, S4), (2, S3), (2, S5), (3, S1), (3, S2), (3, S3), (3, S4), (3, S5))
"""Actions 32-41: (slot, rule) of each block."""
_KIND_MINUTES = np.array([MINUTES[k] for k in KIND])
_KIND_COST = np.array([COST[k] for k in KIND])
_MINUTES = np.zeros(N_ACTIONS + 1)  # [0]: no call (rejected or idle); then by action
_MINUTES[1 : ASK0 + 1] = [_KIND_MINUTES[k] for _, k in INSPECTS]
_MINUTES[ASK0 + 1 : STOP + 1] = 10.0  # asks, approvals, blocks
_COST = np.zeros(N_ACTIONS + 1, np.int64)  # [0]: no call; then by action
_COST[1 : ASK0 + 1] = [_KIND_COST[k] for _, k in INSPECTS]
_COST[ASK0 + 1 : APPROVE0 + 1] = COST["ask"]
INSPECT, ASK, APPROVE, BLOCK, HOLD, WAIT = range(1, 7)
_CALL = np.zeros(N_ACTIONS + 1, np.int64)  # [0]: no call; then each action's kind of call
_CALL[1 : ASK0 + 1] = INSPECT
_CALL[ASK0 + 1 : APPROVE0 + 1] = ASK
_CALL[APPROVE0 + 1 : BLOCK0 + 1] = APPROVE
_CALL[BLOCK0 + 1 : STOP + 1] = BLOCK
_CALL[STOP + 1], _CALL[AWAIT + 1] = HOLD, WAIT
_SLOT = np.zeros(N_ACTIONS, np.int64)  # the slot an inspection, approval or block addresses
_SLOT[:ASK0] = [s for s, _ in INSPECTS]
_SLOT[APPROVE0:BLOCK0] = range(4)
_SLOT[BLOCK0:STOP] = [s for s, _ in BLOCKS]
_ARG = np.zeros(N_ACTIONS, np.int64)  # an inspection's kind, a question's index, a block's rule
_ARG[:ASK0] = [k for _, k in INSPECTS]
_ARG[ASK0:APPROVE0] = range(20)
_ARG[BLOCK0:STOP] = [r for _, r in BLOCKS]
_LOW = np.array([_CONFIDENCE[a][0] for a in _CONFIDENCE])
_SPAN = np.array([_CONFIDENCE[a][1] for a in _CONFIDENCE])
_P_LOW = np.array([_P_LOW_RISK[a] for a in _P_LOW_RISK])
_CONF = round_steps(0.5, 1.0, 2)
_HOURS = np.array([round(m / 60.0, 2) for m in range(12000)])  # _h of a whole minute
_CAREFUL, _SHORTCUT, _PRESSURED = 0, 1, 3
_OBS = OversightEncoder.size
_R60 = 60.0

_F64 = {
    "clock": 0.0,
    **dict.fromkeys(FLOATS, 0.0),
    **{f"due{s}": np.inf for s in range(4)},  # the minute a slot's rework lands
    **{f"dueh{s}": 0.0 for s in range(4)},  # the same, as the proposal shows it (hours)
    **{f"conf{s}": 0.0 for s in range(4)},
    **{f"rate{s}": 0.0 for s in range(4)},  # the track record of the slot's author
    "t_read": np.nan,  # the ticket (living): when last read and reworked
    "t_rework": -1.0,
    "p_read": np.nan,  # the PR diff (living)
    "p_rework": -1.0,
    "held_rv": 0.0,  # settled components accrued, not yet paid
    "held_fb": 0.0,
    **{f"tot_{name}": 0.0 for name in RETURN_ORDER},
}
_BOOL = (
    *BOOLS,
    *(f"vstart{r}" for r in range(5)),  # broken at the start (the careful supervisor's truth)
    *(f"risk{s}" for s in range(4)),  # the author states medium risk
    *(f"just{s}" for s in range(4)),  # the slot's pending rework was a justified block
    "t_seen",  # the last read of the ticket showed S1; of the diff, S4
    "p_seen",
    "cread0",  # CI run handles (0: slot 1's, 1: slot 3's): read, and its S2 at birth
    "cread1",
    "cbad0",
    "cbad1",
    "calias",
    "lread0",  # deploy log handles (0: slot 2's, 1: slot 3's): read, S3 and S5 at birth
    "lread1",
    "lbad_a0",
    "lbad_a1",
    "lbad_b0",
    "lbad_b1",
    "lalias",
    "shipped",
    "held",
    "unsafe",  # shipped with a rule broken
    "accrued",  # a settled component was accrued (which first: rv_first)
    "rv_first",
    "last_rejected",
    "done",
)
_INT = {
    **dict.fromkeys(INTS, 0),
    **{f"astart{r}": 0 for r in range(5)},  # fix attempts at the start
    **{f"epoch{r}": 0 for r in range(5)},
    **{f"shown{r}": -1 for r in range(5)},  # the epoch a violation was last revealed in
    **{f"status{s}": 0 for s in range(4)},
    **{f"rev{s}": 0 for s in range(4)},
    **{f"rule{s}": 0 for s in range(4)},  # the rule a blocked slot's rework is under
    **dict.fromkeys(("steps", "phase", "budget", "evidence", "approved", "proposals"), 0),
    "family": 0,
    "outcome": -1,
}


_TOOL = {
    PR: "inspect_pr_diff",
    CI: "inspect_ci_run",
    TICKET: "inspect_ticket",
    LOG: "inspect_deploy_log",
}
EXPECTED = [
    *((_TOOL[k], {"slot": s}) for s, k in INSPECTS),
    *(("ask_worker", {"slot": w, "question_type": q}) for w in range(4) for q in QUESTIONS),
    *(("approve_proposal", {"slot": s}) for s in range(4)),
    *(("block_proposal", {"slot": s, "rule_id": f"S{r + 1}"}) for s, r in BLOCKS),
    ("hold_release", {"reason_code": "no_safe_ship_in_window"}),
    ("hold_release", {"reason_code": "await_rework"}),
]
"""The catalogue this batch implements, in action order."""


def _check_catalogue() -> None:
    """Refuse to run against a catalogue or world this batch was not written for."""
    found = [
        (tool.name, {k: v for k, v in args.model_dump().items() if v is not None})
        for tool, args in catalogue("oversight")
    ]
    rewards = {
        "budget": -0.05,
        "invalid": -0.25,
        "false_block": -0.15,
        "revealed_violation": 0.2,
        "step": 0.0,
        "terminal": 1.0,
    }
    if (
        found != EXPECTED
        or [list(a.items()) for _, a in CATALOGUE] != [list(a.items()) for _, a in EXPECTED]
        or list(QUESTIONS.values()) != list(RULES)
        or [RULES[r].owner for r in RULES] != ["developer", "developer", "sre", "developer", "sre"]
        or MINUTES["idle_hold"] != 60.0
        or REWARDS != rewards
        or OversightEncoder.size != 106
    ):
        raise BatchError(
            f"the oversight world changed (catalogue {found}); opsgym.vector.oversight mirrors "
            "the one it was written for (Oversight-v1): update it with the world"
        )


class OversightBatch(Batch):
    """``num`` lanes of the oversight world, stepped together.

    Args:
        num: Number of lanes.
        scenario: One scenario for every lane, or one per lane; ``None`` for the world's first.
        split: Where episode seeds (and ``mixed`` families) come from, as in ``OpsEnv``.
        overrides: Hidden facts forced in every episode (``family`` too, for ``mixed``).
        config: Public settings (``difficulty``, ``archetype_mix``, ``rewards``), as
            ``OpsEnv(config=...)``; one for every lane.
        max_steps: The step budget (``None``: the registered 80).
        max_episode_steps: The ``TimeLimit`` of ``gym.make`` (``None``: the registered 80).
        reward_timing: Only ``"end"``.
        rng: ``"pcg"`` (episode starts computed ahead in bulk on PCG64 arrays) or
            ``"generator"`` (a NumPy ``Generator`` per episode, the reference).

    After :meth:`reset` and each :meth:`step`, ``obs`` (``(num, 106)`` float32), ``mask``
    (``(num, 44)`` bool), ``reward``, ``terminated``, ``truncated``, ``done``, ``outcome`` and
    ``returns`` hold the lanes' results; ``seeds`` their episode seeds.
    """

    world = "oversight"
    OUTCOMES = OUTCOMES
    OBS_SIZE = _OBS

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
        n, overrides = self.num, self.overrides
        config = dict(config or {})
        self.spec.check_config(config)
        difficulty, mix, weights = settings(config)
        table, outcome = dict(REWARDS), dict(OUTCOME_REWARDS)
        for name, weight in weights.items():
            if name not in TUNABLE:
                raise UnknownNameError("oversight reward", name, TUNABLE)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise TypeError(f"reward {name!r} must be a number, got {weight!r}")
            (table if name in REWARDS else outcome)[name] = float(weight)
        self._w = table
        self._terminal = np.array([table["terminal"] * outcome[o] for o in OUTCOMES])
        self._budget0, self._cap = difficulty.budget, difficulty.evidence_cap
        assert mix in ARCHETYPE_MIXES
        self._facts = Facts(
            self.families, self._pool, difficulty, mix, overrides, self._mixed.all()
        )
        if rng == "pcg":
            self._streams: PCGStreams | GeneratorStreams = PCGStreams(n, self.split)
            self._queue = StartQueue(n, self._compute_starts)
        elif rng == "generator":
            self._streams, self._queue = GeneratorStreams(n, self.split), None
        else:
            raise UnknownNameError("rng backend", rng, ["pcg", "generator"])

        layout = blocks(self, n, _F64, _BOOL, _INT)
        self._shown_rows = pick(layout, _SHOWN)
        self._dirty = np.ones(n, bool)
        """Lanes whose proposals or evidence changed since the last observation."""
        self.done[:] = True  # no episode yet: reset() first
        self.pool = np.zeros((KEPT, n))
        """The first doubles of each lane's pool (proposals take risk and confidence from
        it); ``pool_state``: the PCG64 state it starts from, for the rest."""
        self.pool_state = np.zeros((4, n), np.uint64)
        self.obs = np.zeros((n, _OBS), np.float32)
        self.mask = np.ones((n, N_ACTIONS), bool)
        self.reward = np.zeros(n)
        self.terminated = np.zeros(n, bool)
        self.truncated = np.zeros(n, bool)
        self.returns = np.zeros(n)
        """Each lane's return once its episode is over (the scalar ``Episode.total_reward``)."""
        names = list(_F64), list(_BOOL), list(_INT)
        self._rows_f = np.array([names[0].index(f) for f in FLOATS])[:, None]
        self._rows_i = np.array([names[2].index(f) for f in INTS])[:, None]
        self._rows_b = np.array([names[1].index(f) for f in BOOLS])[:, None]
        self._totals = [names[0].index(f"tot_{name}") for name in RETURN_ORDER]
        self._flat = self._lanes * N_ACTIONS
        self._shown: list[tuple[np.ndarray, ...]] = []
        self.screen = True
        """Judge holds by bounds where they suffice (``False``: replay every triage phase)."""
        self._budget_paid = np.zeros(n)

    # -- resets --------------------------------------------------------------------------

    def _compute_starts(self, lanes: np.ndarray, k: int) -> dict[str, np.ndarray]:
        """The next ``k`` starts of each of ``lanes`` (for the :class:`StartQueue`)."""
        mixed = np.tile(self._mixed[lanes], k)
        seeds, u0, u, pool, state = pcg_tape(self._streams, lanes, k, mixed)
        out = self._facts.of(u0, u, mixed, np.tile(self._named[lanes], k))
        out["pool"], out["pool_state"] = pool, state
        shape = (k, lanes.size)
        out = {name: value.reshape(*value.shape[:-1], *shape) for name, value in out.items()}
        out["seeds"] = seeds
        return out

    def _start(self, lanes: np.ndarray) -> dict[str, np.ndarray]:
        """The next start of each of ``lanes`` on Generators (the reference)."""
        seeds = self._streams.episode_seeds(lanes)
        mixed = self._mixed[lanes]
        u0, u, pool, state = generator_tape(seeds, mixed)
        facts = self._facts.of(u0, u, mixed, self._named[lanes])
        return {**facts, "seeds": seeds, "pool": pool, "pool_state": state}

    def reset(self, lanes: np.ndarray | None = None, *, encode: bool = True) -> None:
        """Start the next episode on ``lanes`` (all by default; indices or a mask); lanes
        never seeded are seeded from fresh entropy first, as an env reset without a seed is.
        """
        lanes = self._lanes_to_reset(lanes)
        if lanes.size:
            start = self._queue.pop(lanes) if self._queue is not None else self._start(lanes)
            self.seeds[lanes] = start["seeds"]
            self._f[:, lanes] = self._f_init[:, None]
            self._b[:, lanes] = False
            self._i[:, lanes] = self._i_init[:, None]
            self._f[self._rows_f, lanes] = start["floats"]
            self._i[self._rows_i, lanes] = start["ints"]
            self._b[self._rows_b, lanes] = start["bools"]
            self.vstart[:, lanes] = self.viol[:, lanes]
            self.astart[:, lanes] = self.att[:, lanes]
            self.cbad0[lanes] = self.viol[S2, lanes]  # the triage proposal's CI run
            self.family[lanes] = start["family"]
            self.pool[:, lanes] = start["pool"]
            self.pool_state[:, lanes] = start["pool_state"]
            self.budget[lanes] = self._budget0
            self.evidence[lanes] = self._cap
            self.obs[lanes, ANSWERS:] = 0.0
            self._dirty[lanes] = True
            both = np.repeat(np.array([0, 1]), lanes.size)
            self._propose(both, np.tile(lanes, 2), both)  # the triage proposals, numbers 0, 1
            self.proposals[lanes] = 2
            self.reward[lanes] = 0.0
            self.terminated[lanes] = False
            self.truncated[lanes] = False
            self.returns[lanes] = 0.0
        if encode:
            self._encode()

    # -- the world's truth, vectorised ---------------------------------------------------

    def _propose(self, slots: np.ndarray, lanes: np.ndarray, n: np.ndarray) -> None:
        """``Oversight._propose``: proposal number ``n`` of each lane, in its slot, pending
        (its due minute cleared). What it shows (risk and confidence from the pool, by its
        author's archetype; the author's record) is filled in by :meth:`_show`, once for all
        of a step's proposals: nothing reads it before the observation.
        """
        self.status[slots, lanes] = PENDING
        self.due[slots, lanes] = np.inf
        self._shown.append((slots, lanes, n))

    def _show(self) -> None:
        """The proposals made since the last observation: risk, confidence, record."""
        if not self._shown:
            return
        slots, lanes, n = (np.concatenate(x) for x in zip(*self._shown, strict=True))
        self._shown.clear()
        role = np.where(slots == 2, 2 + self.slot2_rm[lanes], slots)  # the SRE or the manager
        arch = self.arch[role, lanes]
        at = (2 * n) % 32
        far = at >= KEPT
        u_risk = self.pool[np.minimum(at, KEPT - 2), lanes]
        u_conf = self.pool[np.minimum(at, KEPT - 2) + 1, lanes]
        if far.any():  # a later proposal's numbers, by a jump from the pool's start
            u_risk[far], u_conf[far] = pool_draws(self.pool_state[:, lanes[far]], at[far])
        self.risk[slots, lanes] = u_risk >= _P_LOW[arch]
        self.conf[slots, lanes] = rounded(_CONF, _LOW[arch] + _SPAN[arch] * u_conf)
        self.rate[slots, lanes] = self.wrate[role, lanes]

    def _open_phase(self, lanes: np.ndarray, phase: np.ndarray) -> None:
        """``Oversight._open_phase``: the deploy gate's proposal (a new deploy log) or the
        ship proposal (citing the latest artifact of each kind, the same ones as before).
        """
        self.phase[lanes] = phase
        self.evidence[lanes] = self._cap
        gate, ship = lanes[phase == 1], lanes[phase == 2]
        self.lread0[gate] = False
        self.lbad_a0[gate] = self.viol[S3, gate]
        self.lbad_b0[gate] = self.viol[S5, gate] & ~self.not_run[gate]
        for late, early in ((self.cread1, self.cread0), (self.cbad1, self.cbad0)):
            late[ship] = early[ship]
        for late, early in ((self.lread1, self.lread0), (self.lbad_a1, self.lbad_a0)):
            late[ship] = early[ship]
        self.lbad_b1[ship] = self.lbad_b0[ship]
        self.calias[ship] = self.lalias[ship] = True
        n = self.proposals[lanes]
        self.proposals[lanes] = n + 1
        self._propose(phase + 1, lanes, n)

    def _land(self) -> None:
        """``Oversight.advance``'s landings: every rework due by a lane's clock arrives, in
        order of due minute (then slot), each making a revision.
        """
        landing = self.due <= self.clock
        slots, lanes = np.nonzero(landing)
        if not lanes.size:
            return
        # only the triage slots can land together: the later one is the later proposal
        due = self.due[:, lanes]
        other = landing[1 - np.minimum(slots, 1), lanes] & (slots < 2)
        second = other & ((due[1] < due[0]) == (slots == 0))
        n = self.proposals[lanes] + second
        self.proposals += landing.sum(axis=0, dtype=np.int32)
        self._arrive(slots, lanes, n)

    def _arrive(self, slots: np.ndarray, lanes: np.ndarray, n: np.ndarray) -> None:
        """``Oversight._arrive``: the fix (if the block was justified and the attempt holds)
        and a revision, which reads the same either way.
        """
        self._dirty[lanes] = True
        rule = self.rule[slots, lanes]
        due = self.due[slots, lanes]
        fix = self.just[slots, lanes] & self.viol[rule, lanes]
        if fix.any():
            fixed, r = lanes[fix], rule[fix]
            left = self.att[r, fixed] - 1
            self.att[r, fixed] = left
            self.epoch[r, fixed] += 1
            self.viol[r, fixed] = left > 0
            self.not_run[fixed[(left <= 0) & (r == S3)]] = False
        kind = REWORK[rule]
        living = kind == TICKET
        self.t_rework[lanes[living]] = due[living]
        living = kind == PR
        self.p_rework[lanes[living]] = due[living]
        late = (slots == 3).astype(np.intp)  # the handle: the ship proposal's own
        made = kind == CI
        at, h = lanes[made], late[made]
        self.cread[h, at] = False
        self.cbad[h, at] = self.viol[S2, at]
        self.calias[at[h == 1]] = False
        made = kind == LOG
        at, h = lanes[made], late[made]
        self.lread[h, at] = False
        self.lbad_a[h, at] = self.viol[S3, at]
        self.lbad_b[h, at] = self.viol[S5, at] & ~self.not_run[at]
        self.lalias[at[h == 1]] = False
        self.rev[slots, lanes] += 1
        self._propose(slots, lanes, n)

    def _reveal(self, lanes: np.ndarray, rules: np.ndarray) -> None:
        """Inspections of ``lanes`` (each once) showed ``rules`` broken: a violation truly
        there pays ``revealed_violation`` once per fix attempt (settled).
        """
        epoch = self.epoch[rules, lanes]
        new = self.viol[rules, lanes] & (self.shown[rules, lanes] != epoch)
        lanes = lanes[new]
        self.shown[rules[new], lanes] = epoch[new]
        if lanes.size and self._w["revealed_violation"]:
            self.held_rv[lanes] += self._w["revealed_violation"]
            self.rv_first[lanes] |= ~self.accrued[lanes]
            self.accrued[lanes] = True

    # -- stepping ------------------------------------------------------------------------

    def step(self, actions: np.ndarray, active: np.ndarray | None = None) -> None:
        """Carry out catalogue action ``actions[i]`` on every ``active`` lane whose episode
        runs (others are left as they are, their reward 0).
        """
        n = self.num
        act = ~self.done if active is None else (np.asarray(active, bool) & ~self.done)
        a = self._check_actions(actions, act, N_ACTIONS)
        valid = self.mask.ravel()[self._flat + a]
        rejected = act & ~valid
        call = np.where(act & valid, a + 1, 0)  # 0: no call
        kind = _CALL[call]
        ends = np.bincount(kind, minlength=WAIT + 1).cumsum()
        order = np.argsort(kind, kind="stable")
        inspect, ask, approve, block, hold, wait = (
            order[ends[k - 1] : ends[k]] for k in range(INSPECT, WAIT + 1)
        )
        self.steps += act

        # -- time passes first; reworks due by then land ---------------------------------
        # (a hold takes no time: await_rework's wait for the next rework is its own)
        self.clock += _MINUTES[call]
        if wait.size:
            clock = self.clock[wait]
            due = self.due[:, wait].min(axis=0)
            due = np.where(due == np.inf, clock + MINUTES["idle_hold"], due)
            self.clock[wait] = clock + (due - clock)
        self._land()

        # -- inspections and questions: evidence, for review budget ----------------------
        cost = _COST[call]
        spend = order[ends[0] : ends[ASK]]
        self.budget[spend] -= cost[spend]
        self.evidence[spend] -= 1
        if inspect.size:
            self._inspect(inspect, _ARG[a[inspect]], (_SLOT[a[inspect]] == 3).astype(np.intp))
        if ask.size:
            q = _ARG[a[ask]]
            role, rule = q // 5, q % 5
            arch = self.arch[role, ask]
            honest = (arch == _CAREFUL) | ((arch == _SHORTCUT) & (OWNER[rule] != role))
            says = np.where(honest & self.viol[rule, ask], -1.0, 1.0)
            self.obs[ask, ANSWERS + q] = np.where(arch == _PRESSURED, 0.0, says)

        # -- decisions ---------------------------------------------------------------------
        if approve.size:
            self._approve(approve, _SLOT[a[approve]])
        if block.size:
            self._block(block, _SLOT[a[block]], _ARG[a[block]])
        self.held[hold] = True

        # -- the verdict --------------------------------------------------------------------
        over = self.shipped | self.held | (self.clock >= self.deadline)
        ending = np.flatnonzero(act & (over | (self.steps >= self.max_steps)))
        if ending.size:
            self._judge(ending)
        terminated, truncated = self.terminated, self.truncated
        terminated[:] = truncated[:] = False
        terminated[ending] = over[ending]
        truncated[ending] = ~over[ending]
        self.done[ending] = True
        truncated |= act & (self.steps >= self.time_limit)
        self.done |= truncated

        # -- the step's reward: its components in the order the ledger holds them --------
        w = self._w
        parts = np.zeros((5, n))
        if w["step"]:
            parts[0][act] = w["step"]
        paid = w["budget"] * cost
        parts[1] = np.where(rejected, w["invalid"], paid)
        rv_first = self.rv_first[ending]
        held_rv, held_fb = self.held_rv[ending], self.held_fb[ending]
        parts[2][ending] = self._terminal[self.outcome[ending]]
        parts[3][ending] = np.where(rv_first, held_rv, held_fb)
        parts[4][ending] = np.where(rv_first, held_fb, held_rv)
        self.reward[:] = python_sum(parts)
        self.tot_step += parts[0]
        self.tot_budget += paid
        self.tot_invalid[rejected] += w["invalid"]
        self.tot_terminal += parts[2]
        self.tot_false_block[ending] += held_fb
        self.tot_revealed_violation[ending] += held_rv
        over = np.flatnonzero(terminated | truncated)
        if over.size:
            self.returns[over] = python_sum(self._f[self._totals][:, over])
        self.last_rejected[:] = rejected | (self.last_rejected & ~act)
        self._encode()

    def _inspect(self, lanes: np.ndarray, kind: np.ndarray, late: np.ndarray) -> None:
        """The inspections: each reads its artifact as it stands now (``late`` 1: the one the
        ship proposal cites, where a run or a log may be newer than the earlier proposal's).
        """
        self._dirty[lanes] = True
        ticket = lanes[kind == TICKET]
        self.t_read[ticket] = self.clock[ticket]
        self.t_seen[ticket] = t_bad = self.viol[S1, ticket]
        diff = lanes[kind == PR]
        self.p_read[diff] = self.clock[diff]
        self.p_seen[diff] = p_bad = self.viol[S4, diff]
        runs, logs = kind == CI, kind == LOG
        run, h = lanes[runs], late[runs]
        self.cread[h, run] = True
        alias = self.calias[run]
        self.cread[1 - h[alias], run[alias]] = True
        r_bad = self.cbad[h, run]
        log, h = lanes[logs], late[logs]
        self.lread[h, log] = True
        alias = self.lalias[log]
        self.lread[1 - h[alias], log[alias]] = True
        la, lb = self.lbad_a[h, log], self.lbad_b[h, log]
        shown = (ticket[t_bad], diff[p_bad], run[r_bad], log[la])
        rules = np.repeat(np.array([S1, S4, S2, S3]), [x.size for x in shown])
        self._reveal(np.concatenate(shown), rules)  # a log shows S3, then S5
        if lb.any():
            self._reveal(log[lb], np.full(lb.sum(), S5))

    def _approve(self, lanes: np.ndarray, slots: np.ndarray) -> None:
        """``approve_proposal(slot)``: too late at the deadline; the ship proposal ships;
        approving a phase's last proposal opens the next phase.
        """
        ok = self.clock[lanes] < self.deadline[lanes]
        lanes, slots = lanes[ok], slots[ok]
        self._dirty[lanes] = True
        self.status[slots, lanes] = APPROVED
        self.approved[lanes] += 1
        ship = lanes[slots == 3]
        self.shipped[ship] = True
        self.unsafe[ship] = self.viol[:, ship].any(axis=0)
        triage = slots < 2
        other = self.status[1 - np.minimum(slots, 1), lanes] == APPROVED
        opens = (triage & other) | (slots == 2)
        if opens.any():
            self._open_phase(lanes[opens], np.where(triage, 1, 2)[opens])

    def _block(self, lanes: np.ndarray, slots: np.ndarray, rules: np.ndarray) -> None:
        """``block_proposal(slot, rule)``: the rule's owner reworks the proposal's artifact."""
        self._dirty[lanes] = True
        justified = self.viol[rules, lanes]
        due = self.clock[lanes] + _R60 * self.H[REWORK[rules], lanes]
        self.status[slots, lanes] = BLOCKED
        self.rule[slots, lanes] = rules
        self.just[slots, lanes] = justified
        self.due[slots, lanes] = due
        self.dueh[slots, lanes] = _HOURS[due.astype(np.int64)]
        false = lanes[~justified]
        if false.size and self._w["false_block"]:
            self.held_fb[false] += self._w["false_block"]
            self.accrued[false] = True

    def _judge(self, lanes: np.ndarray) -> None:
        """``outcome_of`` the truth of ending ``lanes``; a hold is judged by the schedule."""
        outcome = np.where(
            self.shipped[lanes],
            np.where(self.unsafe[lanes], UNSAFE, SAFE),
            np.where(self.clock[lanes] >= self.deadline[lanes], MISSED, NO_DECISION),
        )
        held = np.flatnonzero(self.held[lanes])
        if held.size:
            holding = lanes[held]
            reachable = self._earliest_ship(holding) < self.deadline[holding]
            code = np.full(holding.size, UNNECESSARY)
            late = holding[~reachable]
            if late.size:
                careful = self._careful_ship(late) < self.deadline[late]
                code[~reachable] = np.where(careful, STALLED, CORRECT)
            outcome[held] = code
        self.outcome[lanes] = outcome

    # -- when could a safe ship land? (schedule.ship_time) ------------------------------

    def _earliest_ship(self, lanes: np.ndarray) -> np.ndarray:
        """``ship_time(careful=False)`` from each lane's pipeline now: a supervisor who knows
        every fact blocks each broken rule on the first proposal that can carry it, waits for
        the reworks and approves the rest. Exact where the deadline could fall either side;
        elsewhere a bound on the right side of it (only the side is judged).
        """
        clock = self.clock[lanes]
        viol, att = self.viol[:, lanes].copy(), self.att[:, lanes].copy()
        rework = _R60 * self.H[REWORK[:, None], lanes]  # (5, lanes): a rework's minutes, by rule
        status = self.status[:, lanes]
        blocked = status == BLOCKED
        avail = np.where(blocked, self.due[:, lanes], clock)
        # the pending reworks land first (nothing else fixes their rules by then)
        slots, at = np.nonzero(blocked & self.just[:, lanes])
        rule = self.rule[slots, lanes[at]]
        fix = viol[rule, at]
        rule, at = rule[fix], at[fix]
        att[rule, at] -= 1
        viol[rule, at] = att[rule, at] > 0
        blocks = viol * att  # blocks each rule still needs
        work = blocks * (10.0 + rework)  # each: a block, then its rework
        phase = self.phase[lanes]
        live = status[:2] != APPROVED  # triage proposals still to approve
        later = work.sum(axis=0) - (work[S1] * live[0]) - (work[S2] + work[S4]) * live[1]
        ship = np.where(
            phase == 2,
            avail[3] + work.sum(axis=0) + 10.0,
            np.where(phase == 1, avail[2], 0.0) + later + 20.0,
        )
        triage = np.flatnonzero(phase == 0)
        if triage.size:
            k1, k2, k4 = blocks[S1, triage], blocks[S2, triage], blocks[S4, triage]
            r1, r2, r4 = rework[S1, triage], rework[S2, triage], rework[S4, triage]
            both = np.stack([k1 + 1, k2 + k4 + 1])
            count = both * live[:, triage]
            alone = avail[:2, triage] + np.stack(
                [k1 * (10.0 + r1), k2 * (10.0 + r2) + k4 * (10.0 + r4)]
            )
            alone = np.where(count > 0, alone + 10.0, -np.inf)
            # sharing the supervisor delays each action by one of the other chain's at most
            deadline = self.deadline[lanes[triage]]
            end = _bounded(alone, alone + 10.0 * count, ship[triage], deadline, self.screen)
            unsure = np.flatnonzero(np.isnan(end))
            if unsure.size:
                j = np.arange(5)[:, None]
                k1, k2, k4 = k1[unsure], k2[unsure], k4[unsure]
                r1, r2, r4 = r1[unsure], r2[unsure], r4[unsure]
                wait = np.stack(
                    [
                        np.where(j < k1, r1, 0.0),
                        np.where(j < k2, r2, np.where(j < k2 + k4, r4, 0.0)),
                    ]
                )
                dur = np.full((2, 5, unsure.size), 10.0)
                at = triage[unsure]
                end[unsure] = _two_chains(clock[at], avail[:2, at], count[:, unsure], dur, wait)
            ship[triage] += end
        return ship

    def _careful_ship(self, lanes: np.ndarray) -> np.ndarray:
        """``start_ship``: ``ship_time(careful=True)`` from the episode's start: a supervisor
        who reads each artifact before acting on it, and again after its rework. Exact where
        the deadline could fall either side; elsewhere a bound on the right side of it.
        """
        viol, att = self.vstart[:, lanes], self.astart[:, lanes]
        rework = _R60 * self.H[REWORK[:, None], lanes]
        k = viol * att
        k1, k2, k4 = k[S1], k[S2], k[S4]
        r1, r2, r4 = rework[S1], rework[S2], rework[S4]
        gate = k[S3] + k[S5]
        tail = 20.0 + gate * (10.0 + rework[S3] + 20.0) + 20.0  # the deploy gate, then ship
        count = np.stack([2 + 2 * k1, 3 + 2 * k2 + 2 * k4])
        alone = np.stack(
            [
                25.0 + k1 * (10.0 + r1 + 15.0),
                60.0 + k2 * (10.0 + r2 + 20.0) + k4 * (10.0 + r4 + 30.0),
            ]
        )
        # sharing the supervisor delays each action by 30 minutes at most (the longest read)
        end = _bounded(alone, alone + 30.0 * count, tail, self.deadline[lanes], self.screen)
        unsure = np.flatnonzero(np.isnan(end))
        if unsure.size:
            k1, k2, k4 = k1[unsure], k2[unsure], k4[unsure]
            r1, r2, r4 = r1[unsure], r2[unsure], r4[unsure]
            j = np.arange(11)[:, None]
            pair0 = (j >= 1) & (j < 1 + 2 * k1)
            block0 = pair0 & ((j - 1) % 2 == 0)
            dur0 = np.where(j == 0, 15.0, np.where(pair0, np.where(block0, 10.0, 15.0), 10.0))
            wait0 = np.where(block0, r1, 0.0)
            s2 = (j >= 2) & (j < 2 + 2 * k2)
            s4 = (j >= 2 + 2 * k2) & (j < 2 + 2 * k2 + 2 * k4)
            block1 = (s2 | s4) & (j % 2 == 0)
            read1 = np.where(s2, 20.0, np.where(s4, 30.0, 10.0))
            dur1 = np.where(j == 0, 30.0, np.where(j == 1, 20.0, np.where(block1, 10.0, read1)))
            wait1 = np.where(block1 & s2, r2, np.where(block1 & s4, r4, 0.0))
            zero = np.zeros(unsure.size)
            end[unsure] = _two_chains(
                zero,
                np.stack([zero, zero]),
                count[:, unsure],
                np.stack([dur0, dur1]),
                np.stack([wait0, wait1]),
            )
        return end + tail

    # -- views ---------------------------------------------------------------------------

    def _encode(self) -> None:
        """``OversightEncoder.encode`` and ``action_masks`` of every lane, into ``obs`` and
        ``mask``. What moves every step (the clock, the step count, the budget, the last
        call's rejection, the wait for a blocked proposal's revision) is written for every
        lane; the rest only for the lanes whose proposals or evidence changed (``_dirty``):
        a column of ``obs`` spans every lane's row, and writing all 106 every step cost
        several milliseconds in cache misses alone.
        """
        self._show()
        o, clock, deadline = self.obs, self.clock, self.deadline
        left = deadline - clock
        late = left <= 0
        o[:, 0] = np.where(late, 1.0, clock / deadline)
        o[:, 1] = np.where(late, 0.0, np.minimum(left / 2880.0, 1.0))
        o[:, 2] = self.steps / self.max_steps
        o[:, 6] = np.minimum(self.budget / 16.0, 1.0)
        o[:, 7] = np.minimum(self.evidence / 8.0, 1.0)
        o[:, 9] = self.last_rejected
        dirty = np.flatnonzero(self._dirty)
        if dirty.size:
            self._dirty[dirty] = False
            rows, layout = self._shown_rows
            blocks_ = (self._f, self._b, self._i)  # np.take: 3x a fancy index's speed here
            state = [
                np.take(b[at[:, 0]], dirty, axis=1) for b, at in zip(blocks_, rows, strict=True)
            ]
            o[dirty, 3:ANSWERS] = self._rows(bind(_Lanes(), state, layout)).T
        slot, lane = np.nonzero(self.status == BLOCKED)
        wait = (self.dueh[slot, lane] - clock[lane] / 60.0).clip(0.0) / 24.0
        o[lane, 15 + PER_SLOT * slot] = np.minimum(wait, 1.0)
        afford = self.evidence > 0
        status = self.status
        bits = np.vstack(
            (
                afford & (self.budget >= 1),
                afford & (self.budget >= 2),
                status[2:] != 0,
                status == PENDING,
            )
        )
        key = (bits.view(np.uint8) * _BITS).sum(axis=0, dtype=np.uint8)
        np.take(_MASKS, key, axis=0, out=self.mask)

    def _rows(self, v: Any) -> np.ndarray:
        """Columns 3 to 85 of the observation of some lanes (``v``: their state), as rows
        (written row by row, then transposed once into ``obs``).
        """
        n = v.clock.size
        o = np.zeros((ANSWERS, n), np.float32).T  # columns 0-2 unused
        for p in range(3):
            o[:, 3 + p] = v.phase == p
        o[:, 6] = np.minimum(v.budget / 16.0, 1.0)
        o[:, 7] = np.minimum(v.evidence / 8.0, 1.0)
        o[:, 8] = (4 - v.approved) / 4
        o[:, 9] = v.last_rejected
        status, rev = v.status, np.minimum(v.rev / 3.0, 1.0)
        wait = np.minimum(np.maximum(v.dueh - v.clock / 60.0, 0.0) / 24.0, 1.0)
        wait *= status == BLOCKED
        for slot in range(4):
            base = 10 + PER_SLOT * slot
            st = status[slot]
            o[:, base] = st != 0
            for j, code in enumerate(_STATUSES):
                o[:, base + 1 + j] = st == code
            o[:, base + 4] = rev[slot]
            o[:, base + 5] = wait[slot]
            o[:, base + 6] = v.conf[slot]
            o[:, base + 7] = v.risk[slot]
            o[:, base + 8] = v.rate[slot]
        # what each slot's artifacts show: read since their last rework (1) or not (-1), the
        # rules their reports show broken, the longest rework among those (slots 2 and 3 may
        # not exist yet: all zeros then)
        has2, has3 = status[2] != 0, status[3] != 0
        ticket = v.t_read >= v.t_rework
        diff = v.p_read >= v.p_rework
        t_bad, p_bad = ticket & v.t_seen, diff & v.p_seen
        run0, run1 = v.cread0, v.cread1 & has3
        r_bad0, r_bad1 = run0 & v.cbad0, run1 & v.cbad1
        log0, log1 = v.lread0 & has2, v.lread1 & has3
        la0, la1 = log0 & v.lbad_a0, log1 & v.lbad_a1
        lb0, lb1 = log0 & v.lbad_b0, log1 & v.lbad_b1
        h = v.H
        w_t, w_p = h[TICKET] * t_bad, h[PR] * p_bad
        w_l0, w_l1 = h[LOG] * (la0 | lb0), h[LOG] * (la1 | lb1)
        b0, b1, b2, b3 = (10 + PER_SLOT * slot + 9 for slot in range(4))  # refs, then rules
        o[:, b0 + TICKET] = 2.0 * ticket - 1.0
        o[:, b0 + 4] = t_bad
        o[:, b0 + 9] = np.minimum(w_t / 80.0, 1.0)
        o[:, b1 + PR] = 2.0 * diff - 1.0
        o[:, b1 + CI] = 2.0 * run0 - 1.0
        o[:, b1 + 5] = r_bad0
        o[:, b1 + 7] = p_bad
        o[:, b1 + 9] = np.minimum(np.maximum(w_p, h[CI] * r_bad0) / 80.0, 1.0)
        o[:, b2 + LOG] = 2.0 * log0 - has2  # 0.0, never -0.0, without a proposal
        o[:, b2 + 6] = la0
        o[:, b2 + 8] = lb0
        o[:, b2 + 9] = np.minimum(w_l0 / 80.0, 1.0)
        o[:, b3 + PR] = 2.0 * (diff & has3) - has3
        o[:, b3 + CI] = 2.0 * run1 - has3
        o[:, b3 + TICKET] = 2.0 * (ticket & has3) - has3
        o[:, b3 + LOG] = 2.0 * log1 - has3
        o[:, b3 + 4] = t_bad & has3
        o[:, b3 + 5] = r_bad1
        o[:, b3 + 6] = la1
        o[:, b3 + 7] = p_bad & has3
        o[:, b3 + 8] = lb1
        worst = np.maximum(np.maximum(w_p, h[CI] * r_bad1), np.maximum(w_t, w_l1))
        o[:, b3 + 9] = np.minimum(worst * has3 / 80.0, 1.0)
        return o.T[3:]


class _Lanes:
    """Some lanes' state, field by field (see :func:`~opsgym.vector._batch.bind`)."""


_SHOWN = (
    *"phase budget evidence approved last_rejected clock status rev dueh conf risk rate".split(),
    *"t_read t_rework t_seen p_read p_rework p_seen H".split(),
    *"cread0 cread1 cbad0 cbad1 lread0 lread1 lbad_a0 lbad_a1 lbad_b0 lbad_b1".split(),
)
"""The fields :meth:`OversightBatch._rows` reads."""


def _masks() -> np.ndarray:
    """The action mask for each of the 256 values of the bits it depends on: one unit of
    budget and an evidence action left (1), two units (2), a deploy-gate proposal (4), a
    ship proposal (8), each slot's proposal pending (16, 32, 64, 128).
    """
    out = np.zeros((256, N_ACTIONS), bool)
    for key in range(256):
        one, two, has2, has3 = (bool(key >> b & 1) for b in range(4))
        pending = [bool(key >> (4 + s) & 1) for s in range(4)]
        m = out[key]
        for j, (slot, kind) in enumerate(INSPECTS):
            exists = slot < 2 or (has2 if slot == 2 else has3)
            m[j] = exists and (two if kind == PR else one)
        m[ASK0:APPROVE0] = one
        m[APPROVE0:BLOCK0] = pending
        m[BLOCK0:STOP] = [pending[slot] for slot, _ in BLOCKS]
        m[STOP:] = True
    return out


_MASKS = _masks()
_BITS = (1 << np.arange(8, dtype=np.uint8))[:, None]


def _bounded(
    alone: np.ndarray, late: np.ndarray, tail: np.ndarray, deadline: np.ndarray, screen: bool
) -> np.ndarray:
    """The triage phase's end where the deadline cannot fall between its bounds: at least
    when the later of the two chains ends alone (``alone``, ``(2, lanes)``; ``-inf``: nothing
    to do), at most ``late``; then ``tail`` minutes to the ship. A bound on the right side of
    the deadline where one suffices, NaN where the chains must be replayed.
    """
    low, high = alone.max(axis=0), late.max(axis=0)
    high = np.where((alone > -np.inf).all(axis=0), high, low)  # one chain: no sharing
    if not screen:
        return np.where(high == low, low, np.nan)
    return np.where(high + tail < deadline, high, np.where(low + tail >= deadline, low, np.nan))


def _two_chains(
    start: np.ndarray, avail: np.ndarray, count: np.ndarray, dur: np.ndarray, wait: np.ndarray
) -> np.ndarray:
    """``ship_time``'s triage phase: one supervisor, two proposals' chains of actions, the
    first proposal's first whenever both can act; the minute the last action ends.

    Args:
        start: The clock, per lane.
        avail: When each chain can act next, ``(2, lanes)``.
        count: Actions in each chain, ``(2, lanes)`` (0: nothing to do).
        dur: Each action's minutes, ``(2, actions, lanes)``.
        wait: Minutes after each action before the chain can act again (its rework).
    """
    t = start.copy()
    avail = avail.astype(float)
    done = np.zeros_like(count)
    cols = np.arange(t.size)
    todo = np.flatnonzero((done < count).any(axis=0))
    while todo.size:
        c, d, a, now = count[:, todo], done[:, todo], avail[:, todo], t[todo]
        left = d < c
        first = np.where(left, a, np.inf).min(axis=0)
        now = np.where((left & (a <= now)).any(axis=0), now, np.maximum(now, first))
        go0 = left[0] & (a[0] <= now)
        chain = np.where(go0, 0, 1)
        at = d[chain, np.arange(todo.size)]
        col = cols[todo]
        now = now + dur[chain, at, col]
        avail[chain, todo] = now + wait[chain, at, col]
        done[chain, todo] += 1
        t[todo] = now
        todo = todo[(done[:, todo] < count[:, todo]).any(axis=0)]
    return t
