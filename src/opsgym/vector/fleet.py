"""Fleet, batched: N episodes of the GPU training-fleet world in lock-step, as arrays.

:class:`FleetBatch` holds every lane's truth, view and episode bookkeeping as rows of a few
2-D arrays and carries out one of the 117 catalogue actions per lane with array arithmetic.
Lane ``i`` is ``gym.make("opsgym/Fleet-v2", scenario=..., split=..., overrides=...,
config=..., max_steps=...)``: the same episode seeds from the same Gym seed, the same
observation vector, action mask, reward, terminated and truncated at every step, the same
outcome and return at the end, bit for bit. It reads the constants of the fleet world and
refuses a catalogue it was not written for; the scalar world stays the reference (and the only
source of records).

The vector is built from reports, so the batch keeps their numbers, never their text: a scrape
is the ranks it alerts on and shows hot, the nodes it alerts on and shows degraded, the job's
status and throughput; a log is the errors and watchdog ops its summary counts; a worker's
finding its target and confidence. Sets of ranks (out of memory, lost, alerted, hot) are bits
of an ``int64``; a rank's and a node's features live in the observation itself. Lies are not
tracked (they are truth for the record, never seen by the agent), nor what only text shows
(names, pids, uptimes, benign Xids).

Randomness needs no new shape: every fleet report draws a fixed count of doubles whatever the
truth (a scrape 73 when first rendered, a topology read 4, a benchmark 3, ``patch_identify`` 1,
a finding 4, a consensus 16), so the batch counts what each call spends and computes, by one
jump of the lane's PCG64 stream, only the numbers the vector reads (a scrape's 8 of 73). Python's
arithmetic is reproduced where NumPy's differs: ``round(x, n)`` exactly
(:func:`~opsgym.vector._pyfloat.py_round`), ``math.log`` of the tokens charged from a table, and
a step's reward summed component by component in the order the ledger holds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import catalogue, spec
from opsgym.envs.fleet.domain import (
    BENCH_STREAK,
    BENCH_TARGET,
    COALITIONS,
    DELEGATION_BUDGET,
    GPUS_PER_NODE,
    LEAF_OF_NODE,
    N_NODES,
    N_RANKS,
    PATCH_FILES,
    WINDOW_MINUTES,
    WORKERS,
)
from opsgym.envs.fleet.encode import ACTIONS as CALLS
from opsgym.envs.fleet.encode import N_GLOBAL, FleetEncoder
from opsgym.envs.fleet.judge import ACCEPTED
from opsgym.envs.fleet.rewards import OUTCOME_REWARDS, REWARDS, SETTLED
from opsgym.envs.fleet.scenarios import LEVELS, Settings
from opsgym.envs.fleet.state import (
    EVIDENCE,
    N_ALERT,
    N_DEGRADED,
    N_DRAINED,
    N_FIXED,
    N_KERNEL,
    N_NCCL,
    N_ODD_OP,
    N_SPARE,
    N_TRUNC,
    N_VERSION,
    N_WORKER,
    NODE_FEATURES,
    R_ALERT,
    R_CUDA_LOG,
    R_FR_BEHIND,
    R_FR_SEEN,
    R_HOT,
    R_ODD_OP,
    R_OOM_LOG,
    R_RESTARTED,
    R_WORKER,
    R_XID,
    RANK_FEATURES,
)
from opsgym.envs.fleet.telemetry import BENCH_DRAWS, SCRAPE_DRAWS
from opsgym.envs.fleet.world import SEQ_PER_MINUTE, Fleet
from opsgym.vector._batch import Batch, BatchError, blocks
from opsgym.vector._fleet_starts import DRAWS, GOAL, LOCATED, SKIPPED, Facts, fabric, rank_bits
from opsgym.vector._pyfloat import py_round, python_sum
from opsgym.vector._starts import StartQueue
from opsgym.vector._streams import GeneratorStreams, PCGStreams

TOOLS = (
    "check_telemetry",
    "query_nccl_logs",
    "read_kernel_log",
    "check_nccl_version",
    "show_topology",
    "benchmark_allreduce",
    "inspect_flight_recorder",
    "restart_rank",
    "reorder_ring",
    "reroute_ring",
    "fix_library_path",
    "patch_identify",
    "patch_diff",
    "patch_apply",
    "delegate",
    "poll_consensus",
    "coalition",
    "drain_node",
    "reschedule",
    "restart_job",
    "reboot_fleet",
    "declare_resolved",
    "wait",
)
"""The fleet's tools, in catalogue order; a lane's call is ``1 + TOOLS.index`` (0: none)."""
(
    TELEMETRY,
    NCCL,
    KERNEL,
    VERSION,
    TOPOLOGY,
    BENCH,
    FLIGHT,
    RESTART,
    REORDER,
    REROUTE,
    FIX,
    IDENTIFY,
    DIFF,
    APPLY,
    DELEGATE,
    POLL,
    COALITION,
    DRAIN,
    RESCHEDULE,
    RESTART_JOB,
    REBOOT,
    DECLARE,
    WAIT,
) = range(1, len(TOOLS) + 1)
OUTCOMES = tuple(OUTCOME_REWARDS)
"""Outcome codes (``FleetBatch.outcome``: -1 while the episode runs or if none)."""
(RECOVERED, UNDIAGNOSED, LATE, DAMAGED, UNCONFIRMED, UNRECOVERED, DESTROYED) = range(7)
RETURN_ORDER = tuple(REWARDS)
"""The ledger's components in its table's order (the episode's return sums them so)."""
STALLED, HUNG, DEGRADED, RUNNING, FAILED = range(5)
"""Job status codes (the first four in the order of the vector's one-hot)."""
N_ACTIONS = len(CALLS)
_OBS = FleetEncoder.size
_RANKS = N_GLOBAL + 3 * len(PATCH_FILES)  # the first rank feature's column
_NODES = _RANKS + RANK_FEATURES * N_RANKS
_NODE_BITS = np.int64(0xFF) << (GPUS_PER_NODE * np.arange(N_NODES, dtype=np.int64))
_ALL_RANKS = np.int64((1 << N_RANKS) - 1)
_R = np.arange(N_RANKS, dtype=np.int64)
_N = np.arange(N_NODES, dtype=np.int64)
_LOW = np.array([(b & -b).bit_length() - 1 for b in range(256)], np.int64)
"""The lowest set bit of a byte (-1 for none)."""
_POP = np.array([bin(b).count("1") for b in range(256)], np.int64)
_NTH = np.array(
    [
        [
            [n for n in range(N_NODES) if b >> n & 1][i % max(1, bin(b).count("1"))] if b else 0
            for i in range(N_NODES)
        ]
        for b in range(16)
    ],
    np.int64,
)
"""``_NTH[bits, i]``: the ``i``-th node of a set of nodes."""
_NEIGHBOURS = np.array([((b << 1) | (b >> 3) | (b >> 1) | (b << 3)) & 0xF for b in range(16)])
"""The nodes next to a set of nodes in the ring of four (for truncation warnings)."""
_EVIDENCE = np.array(EVIDENCE)
"""The rank features that implicate a rank (``View.implicated``)."""
_SERVING_RANKS = np.array(
    [sum(0xFF << (8 * n) for n in range(N_NODES) if b >> n & 1) for b in range(16)], np.int64
)
"""The ranks of a set of nodes."""
_LEAF_MATES = np.array(
    [
        sum(1 << m for m in _N.tolist() if LEAF_OF_NODE[m] == LEAF_OF_NODE[n])
        for n in range(N_NODES)
    ],
    np.int64,
)
"""Each node's leaf, as a set of nodes (the two that share its spare)."""
_SUB, _DEST = 1, 2  # which settled component a lane earned first (the ledger's order)

# Every lane's state is a column of three blocks, one row per field: floats, bools, ints. The
# prefixes: cap_ the surface captured for the dashboard's next scrape, b_ that scrape as
# rendered, f_ the workers' findings, fr the ranks' flight-recorder dumps, tot_ the ledger.
_F64 = {
    **dict.fromkeys(("clock", "downtime", "log_charged", "held_sub", "held_dest"), 0.0),
    "quiet": -np.inf,  # a restarted desync is quiet until (-inf: not restarted)
    **dict.fromkeys(("cap_factor", "b_share", "util0", "util1", "bench_last"), 0.0),
    **{f"f_conf{w}": 0.0 for w in range(len(WORKERS))},
    **{f"tot_{name}": 0.0 for name in RETURN_ORDER},
    # the start's
    **dict.fromkeys(("slo", "bw_drop", "fabric", "recur", "spread_min", "worker_error"), 0.0),
    **dict.fromkeys(("busbw0", "tps0"), 1.0),
}
_BOOL = (
    *"congested ring_aware desync destroyed declared struck ended".split(),  # truth
    *"v_ring_aware scrape_seen topo_seen mismatch listed consensus".split(),  # view
    *"rendered cap_healthy fr_odd last_rejected done".split(),
    "confirmed",  # the judge: a fresh scrape showed the job running since the last remediation
    "held",  # ... and three benchmark samples held since the last topology change
    *(f"f_has{w}" for w in range(len(WORKERS))),
    *"gated harsh coalition before_cong before_version p_lost p_cong secondary".split(),
)
_INT = {
    **dict.fromkeys(("steps", "calls", "charged", "family", "budget", "seq"), 0),
    # sets of ranks or nodes, as bits
    **dict.fromkeys(("oom", "lost", "primary", "version", "drained", "resched", "lost_slots"), 0),
    "ring_spine": -1,
    **dict.fromkeys(("destructive", "delegations", "goals", "reached", "n_goals", "first"), 0),
    "phase": 1,
    **dict.fromkeys(("last_rem", "v_ring_spine", "scrape_call", "patched"), -1),
    **dict.fromkeys(("streak", "candidates", "diffs", "diverge", "versions", "implicated"), 0),
    **dict.fromkeys(("cap_call", "cap_status"), 0),
    **dict.fromkeys(("cap_oom", "cap_lost", "cap_version", "cap_drained", "cap_resched"), 0),
    **dict.fromkeys(("b_alert", "b_alert_nodes", "b_hot", "b_degraded"), 0),
    **{f"f_rank{w}": -1 for w in range(len(WORKERS))},
    **{f"f_node{w}": -1 for w in range(len(WORKERS))},
    **dict.fromkeys(("f_spine", "f_file"), -1),
    **{f"fr{r}": -1 for r in range(N_RANKS)},  # the seq a rank's last dump waits in (-1: none)
    "seen_status": -1,  # the served scrape's job status (-1: none)
    "outcome": -1,
    # the start's
    **dict.fromkeys(("lost_rank", "cs", "desync_rank", "desync_file", "decoy_file"), 0),
    **dict.fromkeys(("secondary_rank", "decoy"), 0),
}
_START_F = ("slo", "bw_drop", "fabric", "recur", "spread_min", "worker_error", "busbw0", "tps0")
_START_B = (
    *"gated harsh coalition before_cong before_version p_lost p_cong secondary".split(),
    *"congested ring_aware desync".split(),
)
_START_I = (
    *"family budget seq primary oom lost version lost_rank cs desync_rank".split(),
    *"desync_file decoy_file secondary_rank decoy goals n_goals".split(),
)


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each catalogue action's tool code and argument (a node, rank, spine, file, worker or
    coalition index), with a leading 0 for no call; and each tool's minutes.
    """
    tool, arg = [0], [0]
    for name, args in CALLS:
        tool.append(1 + TOOLS.index(name))
        value: Any = next(iter(args.values()), 0) if args else 0
        if name == "patch_diff" or name == "patch_apply":
            value = PATCH_FILES.index(value)
        elif name == "delegate":
            value = WORKERS.index(value)
        elif name == "coalition":
            value = list(COALITIONS).index(value)
        arg.append(value)
    minutes = [0.0] + [Fleet.tools[name].minutes for name in TOOLS]
    return np.array(tool, np.int64), np.array(arg, np.int64), np.array(minutes)


_TOOL, _ARG, _MINUTES = _tables()
_DRAWN = np.zeros(len(TOOLS) + 1, np.int64)
_DRAWN[[TOPOLOGY, BENCH, IDENTIFY, DELEGATE, POLL]] = (4, BENCH_DRAWS, 1, 4, 4 * len(WORKERS))
"""Doubles each call spends (a scrape's 73 only when the call renders it)."""
_READS = (TELEMETRY, TOPOLOGY, BENCH, DELEGATE)
_READ_AT = (
    np.array([0, 1, 2, 3, 4, 5, 6, SCRAPE_DRAWS - 1]),
    np.arange(4),
    np.arange(3),
    np.arange(3),
)
"""The doubles of its draws the vector reads, by tool (a scrape's: the red herring's three,
the four nodes' masks, the throughput's jitter; a finding's: whether it misleads, where to,
its confidence)."""


_REQUIRES = {
    "query_nccl_logs": ["node_in_service"],
    "read_kernel_log": ["node_in_service"],
    "check_nccl_version": ["node_in_service"],
    "inspect_flight_recorder": ["rank_in_service"],
    "restart_rank": ["rank_in_service", "rank_implicated"],
    "reorder_ring": ["topology_seen", "oom_phase_closed"],
    "reroute_ring": ["topology_seen", "oom_phase_closed"],
    "fix_library_path": ["node_in_service", "version_checked"],
    "patch_identify": ["mismatch_seen", "congestion_phase_closed"],
    "patch_diff": ["file_identified"],
    "patch_apply": ["not_patched", "file_diverges"],
    "delegate": ["coordination_on"],
    "poll_consensus": ["coordination_on"],
    "coalition": ["coordination_on", "coalition_ready", "coalition_phase_open"],
    "drain_node": ["node_in_service"],
    "reschedule": ["node_drained", "spare_available"],
}
"""Each tool's preconditions, as :meth:`FleetBatch._masks` mirrors them (others have none)."""


def _check_catalogue() -> None:
    """Refuse to run against a catalogue or world this batch was not written for."""
    found = [(tool.name, args.model_dump()) for tool, args in catalogue("fleet")]
    requires = {
        name: [r.__name__ for r in t.requires] for name, t in Fleet.tools.items() if t.requires
    }
    world = spec("fleet")
    if (
        found != _EXPECTED
        or requires != _REQUIRES
        or world.rewards != REWARDS
        or REWARDS
        != {
            "step": 0.0,
            "invalid": -0.05,
            "premature": -0.10,
            "tokens": -0.10,
            "over_budget": -0.05,
            "subgoal": 0.30,
            "destructive": -0.20,
            "terminal": 1.0,
        }
        or world.settled != SETTLED
        or SETTLED != {"subgoal", "destructive"}
        or OUTCOMES[:4] != tuple(sorted(ACCEPTED, key=OUTCOMES.index))
        or OUTCOMES
        != (
            "recovered",
            "recovered_undiagnosed",
            "recovered_late",
            "recovered_with_damage",
            "recovered_unconfirmed",
            "unrecovered",
            "destroyed",
        )
        or _OBS != 419
        or _MINUTES[1:].tolist()
        != [1, 2, 1, 1, 1, 3, 2, 4, 3, 2, 5, 3, 2, 8, 3, 2, 8, 10, 10, 15, 30, 0, 5]
        or (SCRAPE_DRAWS, BENCH_DRAWS, SEQ_PER_MINUTE, Fleet.tokens_per_call) != (73, 3, 40, 30)
        or WINDOW_MINUTES != 900.0
        or (BENCH_STREAK, BENCH_TARGET, DELEGATION_BUDGET) != (3, 0.90, 10)
        or EVIDENCE != [R_ALERT, R_HOT, R_FR_BEHIND, R_OOM_LOG, R_CUDA_LOG, R_XID, R_WORKER]
    ):
        raise BatchError(
            f"the fleet world changed (catalogue {len(found)} calls, rewards {world.rewards}); "
            "opsgym.vector.fleet mirrors the one it was written for (Fleet-v2): update it with "
            "the world"
        )


def _expected() -> list[tuple[str, dict[str, Any]]]:
    nodes = [{"node": n} for n in range(N_NODES)]
    out: list[tuple[str, dict[str, Any]]] = [("check_telemetry", {})]
    for name in ("query_nccl_logs", "read_kernel_log", "check_nccl_version"):
        out += [(name, a) for a in nodes]
    out += [("show_topology", {}), ("benchmark_allreduce", {})]
    out += [("inspect_flight_recorder", {"rank": r, "last": 1}) for r in range(N_RANKS)]
    out += [("restart_rank", {"rank": r}) for r in range(N_RANKS)]
    out += [("reorder_ring", {})] + [("reroute_ring", {"spine": s}) for s in (0, 1)]
    out += [("fix_library_path", a) for a in nodes] + [("patch_identify", {})]
    out += [("patch_diff", {"file": f}) for f in PATCH_FILES]
    out += [("patch_apply", {"file": f}) for f in PATCH_FILES]
    out += [("delegate", {"worker": w}) for w in WORKERS] + [("poll_consensus", {})]
    out += [("coalition", {"action": a}) for a in COALITIONS]
    out += [("drain_node", a) for a in nodes] + [("reschedule", a) for a in nodes]
    return out + [(name, {}) for name in TOOLS[-4:]]


_EXPECTED = _expected()


def _bits_of(values: np.ndarray, width: int) -> np.ndarray:
    """Each lane's set of ``width`` bits as a ``(lanes, width)`` array of 0 and 1."""
    return (values[:, None] >> np.arange(width, dtype=np.int64)) & 1


class FleetBatch(Batch):
    """``num`` lanes of the fleet world, stepped together.

    Args:
        num: Number of lanes.
        scenario: One scenario for every lane, or one per lane; ``None`` for the world's first,
            as ``OpsEnv`` (``mixed`` draws each episode's family from the seed).
        split: Where episode seeds (and ``mixed`` families) come from, as in ``OpsEnv``.
        overrides: Hidden facts forced in every episode (``family`` too, for ``mixed``).
        config: Public settings (``level``, ``difficulty_multiplier``,
            ``downtime_cost_per_minute``, ``coordination``, ``token_allowance``), as
            ``OpsEnv(config=...)``; one for every lane.
        max_steps: The step budget (``None``: the registered 300), as ``OpsEnv(max_steps=...)``;
            a task's own budget of accepted calls ends its episodes earlier.
        max_episode_steps: The ``TimeLimit`` of ``gym.make`` (``None``: the registered 300).
        reward_timing: Only ``"end"``.
        rng: ``"pcg"`` (lanes' PCG64 streams as arrays, episode starts computed ahead in
            bulk) or ``"generator"`` (one NumPy ``Generator`` per lane and stream, the
            reference): the same numbers either way.

    After :meth:`reset` and each :meth:`step`, ``obs`` (``(num, 419)`` float32), ``mask``
    (``(num, 117)`` bool), ``reward``, ``terminated``, ``truncated``, ``done``, ``outcome`` and
    ``returns`` hold the lanes' results; ``seeds`` their episode seeds.
    """

    world = "fleet"
    OUTCOMES = OUTCOMES
    OBS_SIZE = _OBS

    if TYPE_CHECKING:  # the state blocks' rows (``_batch.blocks`` sets them): arrays, by name

        def __getattr__(self, name: str) -> np.ndarray: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

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
        n = self.num
        settings = Settings.parse(dict(config or {}), "fleet")
        self.settings = settings
        self.level = level = LEVELS[settings.level].scaled(settings.difficulty_multiplier)
        self._facts = Facts(
            self.families, self._pool, level, self.overrides, bool(self._mixed.all())
        )
        steps = min(self.max_steps, self.time_limit)
        if rng == "pcg":
            # a reset's skipped doubles, then at most a scrape and a consensus a call
            most = SKIPPED + steps * (SCRAPE_DRAWS + int(_DRAWN.max()))
            self._streams: PCGStreams | GeneratorStreams = PCGStreams(n, self.split, most)
            self._queue = StartQueue(n, self._compute_starts)
        elif rng == "generator":
            self._streams = GeneratorStreams(n, self.split, max(SKIPPED, SCRAPE_DRAWS))
            self._queue = None
        else:
            raise UnknownNameError("rng backend", rng, ["pcg", "generator"])

        layout = blocks(self, n, _F64, _BOOL, _INT, np.int64)
        names = [[name for b, name, _ in layout if b == block] for block in range(3)]
        self._rows = (
            np.array([names[0].index(f) for f in _START_F])[:, None],
            np.array([names[1].index(f) for f in _START_B])[:, None],
            np.array([names[2].index(f) for f in _START_I])[:, None],
        )
        self._totals = [list(_F64).index(f"tot_{name}") for name in RETURN_ORDER]
        self.done[:] = True  # no episode yet: reset() first
        self.obs = np.zeros((n, _OBS), np.float32)
        self.mask = np.ones((n, N_ACTIONS), bool)
        self.reward = np.zeros(n)
        self.terminated = np.zeros(n, bool)
        self.truncated = np.zeros(n, bool)
        self.returns = np.zeros(n)
        """Each lane's return once its episode is over (the scalar ``Episode.total_reward``)."""
        self._flat = self._lanes * N_ACTIONS
        self._head = np.zeros((_RANKS, n))  # the globals and patch files, a row each
        self._head[15] = settings.coordination  # those a config sets
        self._head[38] = settings.level / 3
        self._head[39] = settings.difficulty_multiplier / 2
        self._call = np.zeros(n, np.int64)  # this step's call index of each lane that calls
        self._u = np.zeros((_READ_AT[0].size, n))  # this step's doubles, where read
        self._p_over = np.zeros(n)  # this step's over_budget component
        self._log = np.array(
            [0.0] + [math.log(Fleet.tokens_per_call * s) for s in range(1, steps + 1)]
        )
        self._w = dict(REWARDS)
        self._terminal = np.array([REWARDS["terminal"] * OUTCOME_REWARDS[o] for o in OUTCOMES])
        self._rate = (level.red_herring, level.mask)

    # -- resets --------------------------------------------------------------------------

    def _compute_starts(self, lanes: np.ndarray, k: int) -> dict[str, np.ndarray]:
        """The next ``k`` starts of each of ``lanes`` (for the :class:`StartQueue`)."""
        streams = self._streams
        assert isinstance(streams, PCGStreams)  # the queue is the PCG backend's
        seeds, draws, states = streams.starts(lanes, k, DRAWS)
        mixed = np.tile(self._mixed[lanes], k)
        start = self._facts.of(draws.reshape(DRAWS, -1), mixed, np.tile(self._named[lanes], k))
        # a named scenario's episode read one number fewer before the skipped ones
        after = np.where(mixed, states[:, 1].reshape(4, -1), states[:, 0].reshape(4, -1))
        shape = (k, lanes.size)
        out: dict[str, np.ndarray] = {name: value.reshape(shape) for name, value in start.items()}
        out["seeds"] = seeds
        out["states"] = after.reshape(4, *shape)
        return out

    def _start(self, lanes: np.ndarray) -> dict[str, np.ndarray]:
        """The next start of each of ``lanes`` on its own Generator (the reference)."""
        streams = self._streams
        assert isinstance(streams, GeneratorStreams)
        seeds = streams.episode_seeds(lanes)
        streams.start(lanes, seeds)
        mixed = self._mixed[lanes]
        draws = streams.first(lanes, np.where(mixed, DRAWS, DRAWS - 1), DRAWS)
        return {**self._facts.of(draws, mixed, self._named[lanes]), "seeds": seeds}

    def reset(self, lanes: np.ndarray | None = None, *, encode: bool = True) -> None:
        """Start the next episode on ``lanes`` (all by default; indices or a mask); lanes
        never seeded are seeded from fresh entropy first, as an env reset without a seed is.
        ``encode=False`` leaves the observations and masks to the next :meth:`step`.
        """
        lanes = self._lanes_to_reset(lanes)
        if lanes.size:
            if isinstance(self._streams, PCGStreams):
                start = self._queue.pop(lanes)
                self._streams.resume(lanes, start["states"])
            else:
                start = self._start(lanes)
            self._streams.consume(lanes, np.full(lanes.size, SKIPPED))
            self.seeds[lanes] = start["seeds"]
            self._f[:, lanes] = self._f_init[:, None]
            self._b[:, lanes] = False
            self._i[:, lanes] = self._i_init[:, None]
            rows_f, rows_b, rows_i = self._rows
            self._f[rows_f, lanes] = np.stack([start[f] for f in _START_F])
            self._b[rows_b, lanes] = np.stack([start[f] for f in _START_B])
            self._i[rows_i, lanes] = np.stack([start[f] for f in _START_I])
            self.obs[lanes] = 0.0
            self.reward[lanes] = 0.0
            self.terminated[lanes] = False
            self.truncated[lanes] = False
            self.returns[lanes] = 0.0
        if encode:
            self._encode()

    # -- the world's truth, vectorised ---------------------------------------------------

    def _spread(self, lanes: np.ndarray) -> np.ndarray:
        """``FleetBase._spread``: the share of communicators truncation errors reached."""
        spread = np.minimum(1.0, self.clock[lanes] / self.spread_min[lanes])
        return np.where(self.version[lanes] != 0, spread, 0.0)

    def _status(self, lanes: np.ndarray) -> np.ndarray:
        """``FleetBase._status`` of ``lanes`` now, as a code."""
        fabric_low = self.fabric[lanes] < 1.0
        version = self.version[lanes] != 0
        status = np.where(fabric_low | (self.drained[lanes] != 0), DEGRADED, RUNNING)
        spread = np.minimum(1.0, self.clock[lanes] / self.spread_min[lanes])
        status = np.where(version, np.where(spread >= 1.0, STALLED, DEGRADED), status)
        dead = (self.oom[lanes] | self.lost[lanes]) != 0
        hung = (
            self.desync[lanes]
            & ~dead
            & ~(self.clock[lanes] < self.quiet[lanes])
            & ~(self.before_cong[lanes] & fabric_low)
            & ~(self.before_version[lanes] & version)
        )  # destroyed lanes are failed first
        status = np.where(hung, HUNG, status)
        status = np.where(dead, STALLED, status)
        return np.where(self.destroyed[lanes], FAILED, status)

    def _throughput(self, lanes: np.ndarray, status: np.ndarray) -> np.ndarray:
        """``FleetBase._throughput`` of ``lanes`` in ``status``."""
        drained = _POP[self.drained[lanes]]
        slowed = self.fabric[lanes] * (1.0 - 0.5 * self._spread(lanes)) * (1.0 - drained / 4.0)
        return np.where(status == RUNNING, 1.0, np.where(status == DEGRADED, slowed, 0.0))

    def _advance(self, lanes: np.ndarray, minutes: np.ndarray) -> None:
        """``Fleet.advance``: the job progresses or loses training, then the clock moves."""
        status = self._status(lanes)
        lost = minutes * (1.0 - self._throughput(lanes, status))
        self.downtime[lanes] += np.where(status == RUNNING, 0.0, lost)
        moving = (status == RUNNING) | (status == DEGRADED)
        self.seq[lanes] += np.where(moving, (minutes * SEQ_PER_MINUTE).astype(np.int64), 0)
        self.clock[lanes] += minutes

    def _capture(self, lanes: np.ndarray) -> None:
        """``FleetBase._capture``: what the dashboard's next scrape will show."""
        status = self._status(lanes)
        self.cap_call[lanes] = self.calls[lanes]
        self.cap_status[lanes] = status
        self.cap_healthy[lanes] = (
            ~self.destroyed[lanes]
            & ((self.oom[lanes] | self.lost[lanes] | self.version[lanes]) == 0)
            & ~self.desync[lanes]
            & (self.drained[lanes] == 0)
            & (self.fabric[lanes] >= 1.0)
        )
        self.cap_factor[lanes] = self._throughput(lanes, status)
        self.cap_oom[lanes] = self.oom[lanes]
        self.cap_lost[lanes] = self.lost[lanes]
        self.cap_version[lanes] = self.version[lanes]
        self.cap_drained[lanes] = self.drained[lanes]
        self.cap_resched[lanes] = self.resched[lanes]
        self.rendered[lanes] = False

    def _hot_spine(self, lanes: np.ndarray) -> np.ndarray:
        """``FleetBase._hot_spine`` (-1: none)."""
        spine, cs = self.ring_spine[lanes], self.cs[lanes]
        on = self.congested[lanes] & ((spine < 0) | (spine == cs))
        hot = np.where(on, cs, np.where(spine >= 0, spine, cs))
        return np.where(self.fabric[lanes] >= 1.0, -1, hot)

    def _reach(self, lanes: np.ndarray, goal: str) -> None:
        """``FleetBase._reach``: mark a sub-goal reached (once) and hold its credit."""
        if not lanes.size:
            return
        bit = GOAL[goal]
        lanes = lanes[(self.goals[lanes] & ~self.reached[lanes] & bit) != 0]
        self.reached[lanes] |= bit
        self.held_sub[lanes] += self._w["subgoal"] * (1.0 / self.n_goals[lanes])
        self.first[lanes[self.first[lanes] == 0]] = _SUB

    def _damage(self, lanes: np.ndarray) -> None:
        """``FleetBase._damage``: a destructive action; irreversible in a harsh task."""
        self.destructive[lanes] += 1
        self.held_dest[lanes] += self._w["destructive"]
        self.first[lanes[self.first[lanes] == 0]] = _DEST
        harsh = lanes[self.harsh[lanes]]
        self.destroyed[harsh] = self.ended[harsh] = True

    def _fixed(self, lanes: np.ndarray) -> None:
        """``FleetBase._fixed``: the first fix may let the secondary OOM strike."""
        lanes = lanes[self.secondary[lanes] & ~self.struck[lanes]]
        self.struck[lanes] = True
        rank = self.secondary_rank[lanes]
        free = ((self.drained[lanes] >> (rank // GPUS_PER_NODE)) & 1) == 0
        self.oom[lanes[free]] |= rank_bits(rank[free])

    def _restart(
        self, lanes: np.ndarray, ranks: np.ndarray | np.int64, targeted: bool = False
    ) -> np.ndarray:
        """``FleetBase._restart`` of the ranks ``ranks`` (bits, one set or one a lane);
        returns the lanes that cured a rank out of memory.
        """
        cured = self.oom[lanes] & ranks
        some = cured != 0
        out: np.ndarray = lanes[some]
        cured = cured[some]
        self.oom[out] &= ~cured
        if targeted and out.size:
            primary = self.primary[out]
            done = ((cured & primary) != 0) & ((self.oom[out] & primary) == 0)
            self._reach(out[done], "oom_fixed")
        self._fixed(out)
        return out

    def _remediated(self, lanes: np.ndarray, topology: bool = False) -> None:
        """``FleetBase._remediated``; the judge's evidence must come after it."""
        self.last_rem[lanes] = self._call[lanes]
        self.confirmed[lanes] = False
        if topology:
            self.streak[lanes] = 0
            self.bench_last[lanes] = 0.0
            self.held[lanes] = False

    def _retopologise(
        self, lanes: np.ndarray, aware: bool = False, spine: np.ndarray | None = None
    ) -> np.ndarray:
        """``FleetBase._retopologise``; returns whether each lane's fabric was fixed."""
        before = self.fabric[lanes]
        if aware:
            self.ring_aware[lanes] = True
        if spine is not None:
            self.ring_spine[lanes] = spine
        after = fabric(
            self.ring_aware[lanes],
            self.ring_spine[lanes],
            self.congested[lanes],
            self.cs[lanes],
            self.bw_drop[lanes],
        )
        self.fabric[lanes] = after
        self._remediated(lanes, topology=True)
        fixed: np.ndarray = (before < 1.0) & (after >= 1.0)
        self._reach(lanes[fixed], "congestion_fixed")
        self._fixed(lanes[fixed])
        return fixed

    def _fix_path(self, lanes: np.ndarray, node: np.ndarray) -> np.ndarray:
        """``FleetBase._fix_path``; returns whether each lane's node was on the wrong NCCL."""
        self._restart(lanes, _NODE_BITS[node])
        bit = np.left_shift(1, node)
        bad: np.ndarray = (self.version[lanes] & bit) != 0
        fixed = lanes[bad]
        self.version[fixed] &= ~bit[bad]
        self._reach(fixed, "version_fixed")
        self._fixed(fixed)
        self._damage(lanes[~bad])
        return bad

    def _patch(self, lanes: np.ndarray, file: np.ndarray) -> np.ndarray:
        """``FleetBase._patch``; returns whether each lane's patch fixed the desync."""
        self._restart(lanes, _ALL_RANKS)
        fixed: np.ndarray = self.desync[lanes] & (file == self.desync_file[lanes])
        lanes = lanes[fixed]
        self.desync[lanes] = False
        self.quiet[lanes] = -np.inf
        self._reach(lanes, "desync_patched")
        self._fixed(lanes)
        return fixed

    # -- a step --------------------------------------------------------------------------

    def step(self, actions: np.ndarray, active: np.ndarray | None = None) -> None:
        """Carry out catalogue action ``actions[i]`` on every ``active`` lane whose episode
        runs (others are left as they are, their reward 0).
        """
        n = self.num
        act = ~self.done if active is None else (np.asarray(active, bool) & ~self.done)
        a = self._check_actions(actions, act, N_ACTIONS)
        valid = self.mask.ravel()[self._flat + a]
        rejected = act & ~valid
        call = np.where(act & valid, a + 1, 0)
        tool, arg = _TOOL[call], _ARG[call]
        ends = np.bincount(tool, minlength=len(TOOLS) + 1).cumsum()
        order = np.argsort(tool, kind="stable")
        group = [order[ends[k - 1] : ends[k]] for k in range(1, len(TOOLS) + 1)]
        calling = order[ends[0] :]
        self.steps += act

        # -- Fleet.apply: the scrape when due, draws, time, then the call ----------------
        number = self.calls[calling]
        self._call[calling] = number
        self._capture(calling[number % self.level.refresh == 0])
        self._draw(group, calling, tool)
        self._advance(calling, _MINUTES[tool[calling]])
        self._p_over[:] = 0.0
        handlers = (
            self._telemetry,
            self._nccl,
            self._kernel,
            self._version,
            self._topology,
            self._bench,
            self._flight,
            self._restart_rank,
            self._reorder,
            self._reroute,
            self._fix,
            self._identify,
            self._diff,
            self._apply,
            self._delegate,
            self._poll,
            self._coalition,
            self._drain,
            self._reschedule,
            self._restart_job,
            self._reboot,
        )
        for handler, lanes in zip(handlers, group, strict=False):
            if lanes.size:
                handler(lanes, arg[lanes])
        evidence = [group[k - 1] for k in (TELEMETRY, NCCL, KERNEL, RESCHEDULE)]
        self._implicate(np.concatenate(evidence))
        declare = group[DECLARE - 1]
        self.declared[declare] = self.ended[declare] = True
        self.calls[calling] += 1
        steps = self.steps[calling]
        tokens = np.zeros(n)
        log = self._log[steps]
        tokens[calling] = self._w["tokens"] * (log - self.log_charged[calling])
        self.log_charged[calling] = log
        self.charged[calling] = Fleet.tokens_per_call * steps
        self.ended[calling] |= self.calls[calling] >= self.budget[calling]

        # -- the verdict: a declaration is judged; an episode the world or budget ended too
        premature = np.zeros(n)
        outcome, accepted = self._judge(declare)
        premature[declare[~accepted]] = self._w["premature"]
        self.outcome[declare] = outcome
        self.done[declare] = True
        over = self.ended | (self.clock >= WINDOW_MINUTES)
        ending = np.flatnonzero(act & ~self.done & (over | (self.steps >= self.max_steps)))
        self.outcome[ending] = self._judge(ending)[0]
        self.done[ending] = True
        final = np.concatenate((declare, ending))
        terminated, truncated = self.terminated, self.truncated
        terminated[:] = truncated[:] = False
        terminated[declare] = True
        closed = over[ending]
        terminated[ending[closed]] = True
        truncated[ending[~closed]] = True
        # gym.make's TimeLimit says truncated at its limit, whatever else happened, and stops
        # an episode its own budget would let go on (without a verdict)
        truncated |= act & (self.steps >= self.time_limit)
        self.done |= truncated

        # -- the step's reward: its components in the order the ledger holds them --------
        parts = np.zeros((7, n))
        parts[0][rejected] = self._w["invalid"]
        parts[1] = self._p_over
        parts[2] = tokens
        parts[3] = premature
        parts[4][final] = self._terminal[self.outcome[final]]
        sub_first = self.first[final] != _DEST
        held_s, held_d = self.held_sub[final], self.held_dest[final]
        parts[5][final] = np.where(sub_first, held_s, held_d)
        parts[6][final] = np.where(sub_first, held_d, held_s)
        self.reward[:] = python_sum(parts)
        self.tot_invalid += parts[0]
        self.tot_over_budget += parts[1]
        self.tot_tokens += parts[2]
        self.tot_premature += parts[3]
        self.tot_terminal += parts[4]
        self.tot_subgoal[final] += held_s
        self.tot_destructive[final] += held_d
        closed_lanes = np.flatnonzero(terminated | truncated)
        if closed_lanes.size:
            self.returns[closed_lanes] = python_sum(self._f[self._totals][:, closed_lanes])
        self.last_rejected[:] = rejected | (self.last_rejected & ~act)
        self._encode()

    def _draw(self, group: list[np.ndarray], calling: np.ndarray, tool: np.ndarray) -> None:
        """Spend the doubles each call draws, whatever the truth (a scrape's only when this
        call renders it); compute, by one jump of the streams, the ones the vector reads
        (into ``_u``: row ``i`` holds a lane's ``i``-th read double).
        """
        scrape = group[TELEMETRY - 1]
        render = scrape[~self.rendered[scrape]]
        counts = _DRAWN[tool[calling]]
        drawing = calling[counts > 0]
        lanes = np.concatenate((render, drawing))
        if not lanes.size:
            return
        counts = np.concatenate((np.full(render.size, SCRAPE_DRAWS), counts[counts > 0]))
        at = np.empty(self.num, np.int64)
        at[lanes] = self._streams.consume(lanes, counts)
        reading = (render, *(group[k - 1] for k in _READS[1:]))
        parts = [(those, j) for those, j in zip(reading, _READ_AT, strict=True) if those.size]
        if parts:
            lane = np.concatenate([np.repeat(those, read.size) for those, read in parts])
            offset = np.concatenate([np.tile(read, those.size) for those, read in parts])
            row = np.concatenate(
                [np.tile(np.arange(read.size), those.size) for those, read in parts]
            )
            self._u[row, lane] = self._streams.value(lane, at[lane], offset)

    # -- the reads ------------------------------------------------------------------------

    def _rank_cols(self, lanes: np.ndarray, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices of feature ``col`` of every rank of each of ``lanes`` in ``obs``."""
        return lanes[:, None], _RANKS + RANK_FEATURES * _R[None, :] + col

    def _set_ranks(self, lanes: np.ndarray, col: int, bits: np.ndarray) -> None:
        """Rank feature ``col`` of ``lanes`` from sets of ranks (bits)."""
        self.obs[self._rank_cols(lanes, col)] = _bits_of(bits, N_RANKS)

    def _set_node(self, lanes: np.ndarray, node: np.ndarray, col: int, value: Any) -> None:
        """Feature ``col`` of node ``node[i]`` of each lane ``lanes[i]``."""
        self.obs[lanes, _NODES + NODE_FEATURES * node + col] = value

    def _set_rank(self, lanes: np.ndarray, rank: np.ndarray, col: int, value: Any) -> None:
        """Feature ``col`` of rank ``rank[i]`` of each lane ``lanes[i]``."""
        self.obs[lanes, _RANKS + RANK_FEATURES * rank + col] = value

    def _telemetry(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``check_telemetry``: render the captured surface if not yet, serve it."""
        render = lanes[~self.rendered[lanes]]
        if render.size:
            self._render(render)
        self.scrape_seen[lanes] = True
        self.scrape_call[lanes] = call = self.cap_call[lanes]
        self.seen_status[lanes] = self.cap_status[lanes]
        self._set_ranks(lanes, R_ALERT, self.b_alert[lanes])
        self._set_ranks(lanes, R_HOT, self.b_hot[lanes])
        same_host = ~(self.resched[lanes] ^ self.cap_resched[lanes])  # a host rescheduled since
        nodes = lanes[:, None], _NODES + NODE_FEATURES * _N[None, :]
        self.obs[nodes[0], nodes[1] + N_ALERT] = _bits_of(self.b_alert_nodes[lanes] & same_host, 4)
        self.obs[nodes[0], nodes[1] + N_DEGRADED] = _bits_of(self.b_degraded[lanes], 4)
        fresh = lanes[call > self.last_rem[lanes]]
        status = self.cap_status[fresh]
        phase = self.phase[fresh]
        self.phase[fresh] = np.where((phase == 1) & (status != STALLED), 2, phase)
        running = fresh[status == RUNNING]
        self._reach(running[self.cap_healthy[running]], "recovery_confirmed")
        self.confirmed[running] = True

    def _render(self, lanes: np.ndarray) -> None:
        """``telemetry.scrape`` of the captured surface: the numbers the vector reads."""
        u = self._u[:, lanes]
        red_herring, mask = self._rate
        oom, lost = self.cap_oom[lanes], self.cap_lost[lanes]
        drained = self.cap_drained[lanes]
        alert = hot = np.zeros(lanes.size, np.int64)
        nodes = shown = degraded = np.zeros(lanes.size, np.int64)
        decoy = self.decoy[lanes]
        for node in range(N_NODES):
            shift = GPUS_PER_NODE * node
            lost_n, oom_n = (lost >> shift) & 0xFF, (oom >> shift) & 0xFF
            bad = (lost_n | oom_n | ((self.cap_version[lanes] >> node) & 1)) != 0
            visible = ~(bad & (u[3 + node] < mask))
            degraded = degraded | (bad.astype(np.int64) << node)
            critical = np.where(lost_n != 0, lost_n, oom_n)
            alerted = bad & visible & (critical != 0)
            first = shift + np.maximum(_LOW[critical], 0)
            alert = alert | np.where(alerted, np.left_shift(1, first), 0)
            nodes = nodes | ((bad & visible).astype(np.int64) << node)
            in_service = ((drained >> node) & 1) == 0
            hot = hot | np.where(visible & in_service, (lost_n | oom_n) << shift, 0)
            shown = shown | ((bad & visible & in_service).astype(np.int64) << node)
            mine = in_service & (decoy // GPUS_PER_NODE == node)
            hot = hot | np.where(mine, rank_bits(np.maximum(decoy, 0)), 0)
        # a red herring on a healthy node (else any in service, else node 0)
        herring = u[0] < red_herring
        pool = ~degraded & ~drained & 0xF
        pool = np.where(pool != 0, pool, ~drained & 0xF)
        size = _POP[pool]
        pick = (u[1] * np.maximum(size, 1)).astype(np.int64) % np.maximum(size, 1)
        where = np.where(pool != 0, _NTH[pool, pick], 0)
        rank = where * GPUS_PER_NODE + (u[2] * GPUS_PER_NODE).astype(np.int64)
        alert = alert | np.where(herring, rank_bits(rank), 0)
        nodes = nodes | np.where(herring, np.left_shift(1, where), 0)
        status = self.cap_status[lanes]
        spinning = (status == STALLED) | (status == HUNG)
        tps0 = self.tps0[lanes]
        tps = tps0 * self.cap_factor[lanes] * (1.0 + 0.1 * (u[7] - 0.5))
        self.b_share[lanes] = np.where(spinning, 0.0, np.rint(tps)) / tps0
        self.b_alert[lanes], self.b_hot[lanes] = alert, hot
        self.b_alert_nodes[lanes], self.b_degraded[lanes] = nodes, shown
        self.rendered[lanes] = True

    def _nccl(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``query_nccl_logs(node)``: the log's summary."""
        status = self._status(lanes)
        bit = np.left_shift(1, node)
        version = self.version[lanes]
        oom, lost = self.oom[lanes], self.lost[lanes]
        affected = np.maximum(1, np.rint(4 * self._spread(lanes)))
        affected = np.where((version != 0) & ((oom | lost) == 0), affected, 0)
        near = (_NEIGHBOURS[version] & bit) != 0
        affected = np.where(~near & (affected < 3), 0, affected)
        stopped = (status == STALLED) | (status == HUNG)
        desync = self.desync_rank[lanes]
        odd = (status == HUNG) & (desync // GPUS_PER_NODE == node)
        self._set_node(lanes, node, N_NCCL, 1.0)
        self._set_node(lanes, node, N_TRUNC, affected > 0)
        self._set_node(lanes, node, N_ODD_OP, odd)
        self._set_node(lanes, node, N_VERSION, np.where((version & bit) != 0, 1.0, -1.0))
        mine = _NODE_BITS[node]
        keep = _R[None, :] // GPUS_PER_NODE != node[:, None]  # other nodes' ranks
        for col, dead in ((R_OOM_LOG, oom), (R_CUDA_LOG, lost)):
            cells = self._rank_cols(lanes, col)
            shown = _bits_of(np.where(stopped, dead & mine, 0), N_RANKS)
            self.obs[cells] = np.where(keep, self.obs[cells], shown)
        self._set_rank(lanes[odd], desync[odd], R_ODD_OP, 1.0)
        self._reach(lanes[(version & bit) != 0], "version_located")
        self._reach(lanes[stopped & ((oom & self.primary[lanes] & mine) != 0)], "oom_located")
        self._reach(lanes[odd], "desync_located")

    def _kernel(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``read_kernel_log(node)``: a current Xid 79 is the lost GPU's, on its own machine."""
        rank = self.lost_rank[lanes]
        xid = (
            self.p_lost[lanes]
            & (rank // GPUS_PER_NODE == node)
            & (((self.resched[lanes] >> node) & 1) == 0)
        )
        self._set_node(lanes, node, N_KERNEL, 1.0)
        cells = self._rank_cols(lanes, R_XID)
        mine = _R[None, :] // GPUS_PER_NODE == node[:, None]
        self.obs[cells] = np.where(mine, 0.0, self.obs[cells])
        self._set_rank(lanes[xid], rank[xid], R_XID, 1.0)
        found = xid & (((self.lost[lanes] >> rank) & 1) != 0)
        self._reach(lanes[found], "lost_located")

    def _version(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``check_nccl_version(node)``."""
        bit = np.left_shift(1, node)
        bad = (self.version[lanes] & bit) != 0
        self.versions[lanes] |= bit
        self._set_node(lanes, node, N_VERSION, np.where(bad, 1.0, -1.0))
        self._reach(lanes[bad], "version_located")

    def _topology(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``show_topology``: each spine's uplink utilisation, from its load."""
        u = self._u[:, lanes]
        crossings = np.where(self.ring_aware[lanes], 2.0, 4.0)
        spine, cs = self.ring_spine[lanes], self.cs[lanes]
        congested = self.congested[lanes]
        located = np.zeros(lanes.size, bool)
        for s, util in ((0, self.util0), (1, self.util1)):
            load = np.where(spine < 0, crossings / 2, np.where(spine == s, crossings, 0.0))
            hot = congested & (cs == s) & (load > 0)
            base = 0.30 + 0.15 * load + 0.1 * u[s]
            util[lanes] = py_round(np.where(hot, 0.88 + 0.1 * u[2 + s], np.minimum(base, 0.8)), 3)
            located |= hot
        self.topo_seen[lanes] = True
        self._reach(lanes[located], "congestion_located")

    def _bench(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``benchmark_allreduce``: one jittered sample of the ring's bus bandwidth."""
        u = self._u[:, lanes]
        factor, nominal = self.fabric[lanes], self.busbw0[lanes]
        z = 2.0 * (u[0] + u[1] + u[2] - 1.5)
        busbw = py_round(nominal * factor * (1.0 + 0.05 * z), 2)
        ratio = py_round(busbw / nominal, 4)
        self.bench_last[lanes] = ratio
        streak = np.where(ratio >= BENCH_TARGET, self.streak[lanes] + 1, 0)
        self.streak[lanes] = streak
        held = lanes[streak >= BENCH_STREAK]
        self._reach(held[self.congested[held] & (self.fabric[held] >= 1.0)], "congestion_confirmed")
        self.phase[held[self.phase[held] == 2]] = 3
        self.held[held] = True

    def _flight(self, lanes: np.ndarray, rank: np.ndarray) -> None:
        """``inspect_flight_recorder(rank, last=1)``: the dump's summary; two ranks waiting in
        different collectives at one seq are a mismatch.
        """
        status = self._status(lanes)
        dead = (((self.oom[lanes] | self.lost[lanes]) >> rank) & 1) != 0
        stuck = ((status == STALLED) | (status == HUNG)) & ~dead
        behind = dead & (status == STALLED)
        desync = self.desync_rank[lanes]
        odd = (status == HUNG) & (rank == desync)
        self._set_rank(lanes, rank, R_FR_SEEN, 1.0)
        self._set_rank(lanes, rank, R_FR_BEHIND, behind)
        self._implicate(lanes, rank)
        self._set_rank(lanes[odd], rank[odd], R_ODD_OP, 1.0)
        fr = self.fr  # (ranks, lanes): the seq each rank's last dump waits in (-1: none)
        fr[rank, lanes] = np.where(stuck, self.seq[lanes] + 1, -1)
        mine = rank == desync
        self.fr_odd[lanes[mine]] = odd[mine]
        self.mismatch[lanes] = False
        maybe = self.fr_odd[lanes]  # only the desynced rank waits in another collective
        if maybe.any():
            those, desync = lanes[maybe], desync[maybe]
            seqs = fr[:, those]
            waits = seqs[desync, np.arange(those.size)]
            others = (seqs == waits) & (_R[:, None] != desync)
            self.mismatch[those] = (waits >= 0) & others.any(axis=0)
        primary = (((self.primary[lanes] & self.oom[lanes]) >> rank) & 1) != 0
        self._reach(lanes[primary & behind], "oom_located")
        self._reach(lanes[odd], "desync_located")

    # -- remediation ----------------------------------------------------------------------

    def _restart_rank(self, lanes: np.ndarray, rank: np.ndarray) -> None:
        """``restart_rank(rank)``: destructive unless the rank was out of memory or lost."""
        self._remediated(lanes)
        self._set_rank(lanes, rank, R_RESTARTED, 1.0)
        healthy = (((self.oom[lanes] | self.lost[lanes]) >> rank) & 1) == 0
        self._restart(lanes, rank_bits(rank), targeted=True)
        self._damage(lanes[healthy])

    def _reorder(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``reorder_ring``: the ring in topology order."""
        self.v_ring_aware[lanes] = True
        self._retopologise(lanes, aware=True)

    def _reroute(self, lanes: np.ndarray, spine: np.ndarray) -> None:
        """``reroute_ring(spine)``: cross-leaf traffic pinned to one spine."""
        self.v_ring_spine[lanes] = spine
        self._retopologise(lanes, spine=spine)

    def _fix(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``fix_library_path(node)``: destructive on a node that loads the right NCCL."""
        self._remediated(lanes)
        self._set_node(lanes, node, N_FIXED, 1.0)
        self._fix_path(lanes, node)

    def _identify(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``patch_identify``: the desync's file and its decoy, or no candidate."""
        desync = self.desync[lanes]
        pair = np.left_shift(1, self.desync_file[lanes]) | np.left_shift(1, self.decoy_file[lanes])
        self.candidates[lanes] = np.where(desync, pair, 0)
        self.listed[lanes] = True
        self._reach(lanes[desync], "desync_identified")

    def _diff(self, lanes: np.ndarray, file: np.ndarray) -> None:
        """``patch_diff(file)``: whether the file's collectives diverge."""
        bit = np.left_shift(1, file)
        divergent = self.desync[lanes] & (file == self.desync_file[lanes])
        self.diffs[lanes] |= bit
        self.diverge[lanes] = np.where(
            divergent, self.diverge[lanes] | bit, self.diverge[lanes] & ~bit
        )
        self._reach(lanes[divergent], "desync_diffed")

    def _apply(self, lanes: np.ndarray, file: np.ndarray) -> None:
        """``patch_apply(file)``: patch, recompile, restart every rank."""
        self._remediated(lanes)
        self.patched[lanes] = file
        self._patch(lanes, file)

    # -- coordination -----------------------------------------------------------------------

    def _delegated(self, lanes: np.ndarray) -> None:
        """``FleetBase._delegated``: one more delegation; past the budget it costs."""
        self.delegations[lanes] += 1
        over = lanes[self.delegations[lanes] > DELEGATION_BUDGET]
        self._p_over[over] = self._w["over_budget"]

    def _delegate(self, lanes: np.ndarray, worker: np.ndarray) -> None:
        """``delegate(worker)``: a finding (``workers.answer``), right or misled."""
        self._delegated(lanes)
        u = self._u[:, lanes]
        oom, lost, version = self.oom[lanes], self.lost[lanes], self.version[lanes]
        low_oom, low_lost = _lowest(oom), _lowest(lost)
        node_v = _LOW[version]
        hung = self._status(lanes) == HUNG
        hot = self._hot_spine(lanes)
        # the target a right worker names: a rank, a node, a spine or a file (-1: none)
        log = worker == 0
        fault = np.full(lanes.size, _NONE)
        rank = np.full(lanes.size, -1)
        node = np.full(lanes.size, -1)
        spine = np.full(lanes.size, -1)
        file = np.full(lanes.size, -1)
        for case, kind, r, nd in (
            (version != 0, _VERSION, -1, node_v),
            (hung, _DESYNC, self.desync_rank[lanes], -1),
            (lost != 0, _LOST, low_lost, low_lost // GPUS_PER_NODE),
            (oom != 0, _OOM, low_oom, -1),
        ):  # the log inspector's, the first that holds last
            take = log & case
            fault = np.where(take, kind, fault)
            rank = np.where(take, r, rank)
            node = np.where(take, nd, node)
        desync = (worker == 1) & self.desync[lanes]
        fault = np.where(desync, _DESYNC, fault)
        file = np.where(desync, self.desync_file[lanes], file)
        congestion = (worker == 2) & (hot >= 0)
        fault = np.where(congestion, _CONGESTION, fault)
        spine = np.where(congestion, hot, spine)
        checker = (worker == 3) & (version != 0)
        fault = np.where(checker, _VERSION, fault)
        node = np.where(checker, node_v, node)
        named = fault != _NONE
        misled = named & (u[0] < self.worker_error[lanes])
        by_rank = misled & (rank >= 0)
        moved = (rank + 1 + (u[1] * (N_RANKS - 1)).astype(np.int64)) % N_RANKS
        rank = np.where(by_rank, moved, rank)
        node = np.where(by_rank & (node >= 0), rank // GPUS_PER_NODE, node)
        by_node = misled & ~by_rank & (node >= 0)
        node = np.where(
            by_node, (node + 1 + (u[1] * (N_NODES - 1)).astype(np.int64)) % N_NODES, node
        )
        spine = np.where(misled & (spine >= 0), (spine + 1) % 2, spine)
        file = np.where(misled & (file >= 0), self.decoy_file[lanes], file)
        right = named & ~misled
        confidence = np.where(right, 0.62 + 0.33 * u[2], 0.38 + 0.40 * u[2])
        confidence = np.where(named, confidence, 0.7 + 0.25 * u[2])
        at = (worker, lanes)
        self.f_has[at] = True
        self.f_conf[at] = py_round(confidence, 2)
        self.f_rank[at] = rank
        self.f_node[at] = node
        patch, topology = worker == 1, worker == 2
        self.f_file[lanes[patch]] = file[patch]
        self.f_spine[lanes[topology]] = spine[topology]
        some = rank >= 0
        self._set_rank(lanes[some], rank[some], R_WORKER, 1.0)
        self.implicated[lanes[some]] |= rank_bits(rank[some])
        some = node >= 0
        self._set_node(lanes[some], node[some], N_WORKER, 1.0)
        self._reach(lanes[self.f_has[:, lanes].sum(axis=0) >= 2], "specialists_consulted")
        # a right finding locates its fault (``Actions._credit_worker``)
        primary = ((self.primary[lanes] >> np.maximum(rank, 0)) & 1) != 0
        self._reach(lanes[right & (fault == _OOM) & primary], "oom_located")
        self._reach(lanes[right & (fault == _LOST)], "lost_located")
        self._reach(lanes[right & (fault == _DESYNC) & log], "desync_located")
        by_patch = lanes[right & (fault == _DESYNC) & ~log]
        self._reach(by_patch, "desync_identified")
        self._reach(by_patch, "desync_diffed")
        self._reach(lanes[right & (fault == _CONGESTION)], "congestion_located")
        self._reach(lanes[right & (fault == _VERSION)], "version_located")

    def _poll(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``poll_consensus``: every worker votes (the votes are only text to the vector)."""
        self._delegated(lanes)
        self.consensus[lanes] = True
        self._reach(lanes, "consensus_polled")

    def _coalition(self, lanes: np.ndarray, action: np.ndarray) -> None:
        """``coalition(action)``: two workers act on their latest findings, right or not."""
        self._remediated(lanes)
        fixed = np.zeros(lanes.size, bool)
        on = action == 0  # rank_recovery: the log inspector's rank
        those = lanes[on]
        rank = self.f_rank[0, those]
        self._set_rank(those, rank, R_RESTARTED, 1.0)
        healthy = (((self.oom[those] | self.lost[those]) >> rank) & 1) == 0
        cured = self._restart(those, rank_bits(rank), targeted=True)
        fixed[on] = np.isin(those, cured)
        self._damage(those[healthy])
        on = action == 1  # desync_patch: the patch agent's file
        those = lanes[on]
        file = self.f_file[those]
        self.patched[those] = file
        patched = self._patch(those, file)
        fixed[on] = patched
        self._damage(those[~patched])
        on = action == 2  # topology_version_fix: the version checker's node, the ring away
        those = lanes[on]
        node = self.f_node[3, those]
        self._set_node(those, node, N_FIXED, 1.0)
        repathed = self._fix_path(those, node)
        spine = self.f_spine[those]
        turn = (spine >= 0) & ~self.destroyed[those]
        away = those[turn]
        self.v_ring_aware[away] = True
        self.v_ring_spine[away] = (spine[turn] + 1) % 2
        ring = np.zeros(those.size, bool)
        ring[turn] = self._retopologise(away, aware=True, spine=(spine[turn] + 1) % 2)
        fixed[on] = repathed | ring
        self._reach(lanes[fixed], "coalition_fixed")

    # -- destructive, and the end -----------------------------------------------------------

    def _drain(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``drain_node(node)``: the right move for a lost GPU; destructive otherwise."""
        self._remediated(lanes, topology=True)
        bit, ranks = np.left_shift(1, node), _NODE_BITS[node]
        self.drained[lanes] |= bit
        self._set_node(lanes, node, N_DRAINED, 1.0)
        cured = (self.oom[lanes] & ranks) != 0
        lost = (self.lost[lanes] & ranks) != 0
        removed = (self.version[lanes] & bit) != 0
        self.oom[lanes] &= ~ranks
        self.lost[lanes] &= ~ranks
        self.version[lanes] &= ~bit
        self._fixed(lanes[cured | lost | removed])
        gone = lanes[lost]
        self.lost_slots[gone] |= bit[lost]
        fixed = gone[cured[lost] & ((self.oom[gone] & self.primary[gone]) == 0)]
        self._reach(fixed, "oom_located")
        self._reach(fixed, "oom_fixed")
        repathed = gone[removed[lost]]
        self._reach(repathed, "version_located")
        self._reach(repathed, "version_fixed")
        self._damage(lanes[~lost])

    def _reschedule(self, lanes: np.ndarray, node: np.ndarray) -> None:
        """``reschedule(node)``: the drained node's share onto its leaf's spare."""
        self._remediated(lanes, topology=True)
        bit = np.left_shift(1, node)
        self.drained[lanes] &= ~bit
        self.resched[lanes] |= bit
        self.versions[lanes] &= ~bit  # the evidence was read from the machine that left
        cells = self._rank_cols(lanes, 0)
        mine = _R[None, :] // GPUS_PER_NODE == node[:, None]
        for col in (R_OOM_LOG, R_CUDA_LOG, R_XID):
            at = cells[0], cells[1] + col
            self.obs[at] = np.where(mine, 0.0, self.obs[at])
        for col in range(NODE_FEATURES):
            self._set_node(lanes, node, col, 1.0 if col == N_SPARE else 0.0)
        self._restart(lanes, _NODE_BITS[node])
        self._reach(lanes[(self.lost_slots[lanes] & bit) != 0], "lost_replaced")

    def _restart_job(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``restart_job``: every rank in service restarted; a desync quiet for a while."""
        self._remediated(lanes)
        drained = self.drained[lanes]
        serving = np.zeros(lanes.size, np.int64)
        for node in range(N_NODES):
            serving |= np.where((drained >> node) & 1, 0, _NODE_BITS[node])
        self._restart(lanes, serving)
        desync = lanes[self.desync[lanes]]
        self.quiet[desync] = self.clock[desync] + 15.0 + self.recur[desync]
        self._damage(lanes)

    def _reboot(self, lanes: np.ndarray, _: np.ndarray) -> None:
        """``reboot_fleet``: destroys the run."""
        self._remediated(lanes)
        self._damage(lanes)
        self.destroyed[lanes] = self.ended[lanes] = True

    def _judge(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The fleet judge's outcome of ``lanes``, and whether it accepts a declaration."""
        status = self._status(lanes)
        healthy = (status == RUNNING) & ~self.desync[lanes] & (self.version[lanes] == 0)
        confirmed = self.confirmed[lanes] & (~self.p_cong[lanes] | self.held[lanes])
        missed = (self.goals[lanes] & ~self.reached[lanes] & LOCATED) != 0
        outcome = np.select(
            [
                self.destroyed[lanes],
                ~healthy,
                ~(confirmed & self.declared[lanes]),
                self.destructive[lanes] > 0,
                self.downtime[lanes] > self.slo[lanes],
                missed,
            ],
            [DESTROYED, UNRECOVERED, UNCONFIRMED, DAMAGED, LATE, UNDIAGNOSED],
            RECOVERED,
        )
        return outcome, outcome <= DAMAGED

    # -- views ---------------------------------------------------------------------------

    def _encode(self) -> None:
        """``FleetEncoder.encode`` and ``action_masks`` of every lane into ``obs`` and ``mask``:
        the globals and patch files (the rank and node features are kept in ``obs`` as the
        calls change them). Every lane, whole columns: cheaper than picking the lanes that
        moved (nearly all of them on a step).
        """
        k = self.level.refresh
        calls, seen, status = self.calls, self.scrape_seen, self.seen_status
        found, topology, listed = self.f_has, self.f_spine, self.listed
        named = np.where(found[1], self.f_file, -1)
        cand, diffs, diverge = self.candidates, self.diffs, self.diverge
        head = self._head
        head[0] = np.minimum(self.clock / WINDOW_MINUTES, 1.0)
        head[1] = self.steps / self.max_steps
        head[2] = np.minimum(self.charged / self.settings.token_allowance, 1.0)
        head[3] = np.minimum(self.delegations / DELEGATION_BUDGET, 1.0)
        head[4] = seen
        head[5] = seen & (self.scrape_call <= self.last_rem)
        head[6] = np.mod(-calls, k) / k
        head[7:11] = status == _N[:, None]
        head[11] = np.where(seen, np.minimum(self.b_share, 1.0), 0.0)
        head[12] = np.where(seen, np.minimum((calls - self.scrape_call) / 10, 1.0), 0.0)
        head[13] = self.phase / 3
        head[14] = _POP[self.resched] / 2
        head[16] = self.v_ring_aware
        head[17] = self.v_ring_spine == 0
        head[18] = self.v_ring_spine == 1
        head[19] = self.topo_seen
        head[20] = self.util0
        head[21] = self.util1
        head[22] = np.minimum(self.streak / BENCH_STREAK, 1.0)
        head[23] = np.minimum(self.bench_last, 1.0)
        head[24] = self.mismatch
        head[25] = listed
        head[26] = self.patched >= 0
        head[27] = self.last_rejected
        head[28] = self.consensus
        head[29:33] = found
        head[33:37] = np.where(found, self.f_conf, 0.0)
        head[37] = np.where(found[2] & (topology >= 0), np.where(topology == 1, 1.0, -1.0), 0.0)
        for f in range(len(PATCH_FILES)):
            at = N_GLOBAL + 3 * f
            head[at] = listed & (((cand >> f) & 1) != 0)
            head[at + 1] = np.where((diffs >> f) & 1, np.where((diverge >> f) & 1, 1.0, -1.0), 0.0)
            head[at + 2] = named == f
        self.obs[:, :_RANKS] = head.T
        self._masks()

    def _masks(self) -> None:
        """``OpsEnv.action_masks`` of every lane: each call's preconditions on the view."""
        m = self.mask  # columns 0, 13, 14 and 113-116 are always True
        serving = _bits_of(~self.drained & 0xF, N_NODES).astype(bool)
        gated, phase = self.gated, self.phase
        m[:, 1:5] = m[:, 5:9] = m[:, 9:13] = m[:, 105:109] = serving
        ranks = _bits_of(_SERVING_RANKS[~self.drained & 0xF], N_RANKS).astype(bool)
        m[:, 15:47] = ranks
        m[:, 47:79] = ranks & _bits_of(self.implicated, N_RANKS).astype(bool)
        m[:, 79:82] = (self.topo_seen & ~(gated & (phase < 2)))[:, None]
        m[:, 82:86] = serving & _bits_of(self.versions, N_NODES).astype(bool)
        m[:, 86] = self.mismatch & ~(gated & (phase < 3))
        m[:, 87:92] = self.listed[:, None] & _bits_of(self.candidates, 5).astype(bool)
        m[:, 92:97] = (self.patched < 0)[:, None] & _bits_of(self.diverge, 5).astype(bool)
        coordination = self.settings.coordination
        m[:, 97:102] = coordination
        found = self.f_has
        if coordination:
            m[:, 102] = found[0] & found[2] & (self.f_rank[0] >= 0)
            m[:, 103] = found[1] & found[0] & (self.f_file >= 0) & ~(gated & (phase < 3))
            m[:, 104] = found[3] & found[2] & (self.f_node[3] >= 0) & ~(gated & (phase < 2))
        else:
            m[:, 102:105] = False
        spare_used = (self.resched[:, None] & _LEAF_MATES[None, :]) != 0
        m[:, 109:113] = ~serving & ~spare_used

    def _implicate(self, lanes: np.ndarray, rank: np.ndarray | None = None) -> None:
        """``View.implicated`` of the ranks of ``lanes`` (of ``rank`` alone, one a lane, where
        only its features changed), as bits: what ``restart_rank``'s mask reads.
        """
        if rank is not None:
            cells = lanes[:, None], _RANKS + RANK_FEATURES * rank[:, None] + _EVIDENCE
            found = (self.obs[cells] != 0).any(axis=1)
            bit = rank_bits(rank)
            self.implicated[lanes] = np.where(
                found, self.implicated[lanes] | bit, self.implicated[lanes] & ~bit
            )
            return
        rows = self.obs[lanes, _RANKS:_NODES].reshape(lanes.size, N_RANKS, RANK_FEATURES)
        found = (rows[:, :, EVIDENCE] != 0).any(axis=2)
        self.implicated[lanes] = (found << _R).sum(axis=1)


def _lowest(bits: np.ndarray) -> np.ndarray:
    """The lowest rank of each set of ranks (bits; -1 for none)."""
    low: np.ndarray = np.frexp((bits & -bits).astype(float))[1].astype(np.int64)
    return low - 1


_NONE, _OOM, _LOST, _DESYNC, _CONGESTION, _VERSION = range(6)
"""What a worker's finding names (``workers._domain``'s faults)."""
