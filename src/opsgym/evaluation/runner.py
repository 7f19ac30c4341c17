"""``opsgym.evaluate``: policies x scenarios x seeds x trials, played, stored, summarised.

Every episode is played on its own from ``(env, scenario, seed, policy, trial)`` and written to
the store in one transaction, so an evaluation killed half-way loses nothing it finished and a
re-run with the same name plays only what is missing. The summary is computed from the stored
episodes, sorted by key: it is the same whether the episodes ran in one process, in local worker
processes or as Ray tasks.

Evaluations are honest by construction: they default to the ``mixed`` scenario (the family is
hidden), refuse ``reward_timing="dense"`` (it pays hidden facts through the reward) and refuse
``overrides`` (forced hidden facts are for tests, not for numbers).

**Seeds are sealed by default.** A seed is the episode's hidden facts: whoever knows it can play
a twin of the episode and keep the best calls, and the first observation of a public seed often
names it (a lookup table over the split's first seeds). So an evaluation draws its seeds when it
is created (``seeds="sealed"``), from the operating system's randomness, among
:data:`~opsgym.core.request.SEALED_INDEX_SPACE` seeds of the split's residue class: unknown
before the run and too many to tabulate. They are kept in the evaluation's config (``drawn``),
so a resume plays the same ones and the stored evaluation replays, verifies and regenerates its
tables as before. The fixed public sequence (the split's first seeds, the same for everyone)
stays on request (``seeds="public"``), and every table says which it was.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.core.registry import spec
from opsgym.core.request import EpisodeRequest, draw_seeds
from opsgym.core.rewards import LeakingConfigError
from opsgym.core.scenarios import check_seed, check_split, seeds, split_of

if TYPE_CHECKING:
    from opsgym.core.episode import Episode
    from opsgym.store.records import Prepared

DEFAULT_SCENARIO = "mixed"
SEED_MODES = ("sealed", "public")
"""Where an evaluation's seeds come from: drawn when it is created and kept (``sealed``), or the
split's first seeds, the same for everyone (``public``)."""
CHUNK = 16
"""Episodes a worker plays and then writes in one transaction."""


class EvaluationError(OpsgymError, ValueError):
    """An evaluation was asked for with settings that cannot run."""


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate. Plain data: stored with the evaluation and compared on resume.

    Attributes:
        env: The environment.
        policies: Policy names (``random``, the world's scripted ones, ``llm:MODEL`` ...).
        scenarios: Scenarios to run; ``mixed`` hides the family.
        split: Seeds come from this split (``test`` by default).
        episodes: Seeds per policy and scenario.
        trials: Runs per seed, for pass^k. A deterministic policy runs once and reports
            pass^k = pass^1.
        config: Public settings of every episode.
        max_steps: Step budget (``None``: the environment's).
        runs_dir: Where ``KIND:runs:NAME`` policies are found (``None``: ``runs``). Not part of
            what is evaluated: the stored name is ``KIND:runs:NAME``.
        seeds: ``sealed`` (drawn when the evaluation is created, see the module docstring) or
            ``public`` (the split's first ``episodes`` seeds).
        drawn: The sealed seeds, in order (``episodes`` of them), once drawn
            (:func:`with_seeds`); empty for public seeds.
    """

    env: str
    policies: tuple[str, ...]
    scenarios: tuple[str, ...] = (DEFAULT_SCENARIO,)
    split: str = "test"
    episodes: int = 200
    trials: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    max_steps: int | None = None
    runs_dir: str | None = field(default=None, compare=False)
    seeds: str = "sealed"
    drawn: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        data = asdict(self)
        del data["runs_dir"]
        data["policies"], data["scenarios"] = list(self.policies), list(self.scenarios)
        data["drawn"] = list(self.drawn)
        return data

    def episode_seeds(self) -> list[int]:
        """The seeds every policy and scenario plays, in order."""
        if self.seeds == "public":
            return seeds(self.split, self.episodes)
        if len(self.drawn) != self.episodes:
            raise EvaluationError(
                "the evaluation's sealed seeds are not drawn yet (see opsgym.evaluation.runner."
                "with_seeds)"
            )
        return list(self.drawn)


def seed_mode(config: dict[str, Any]) -> str:
    """How the stored evaluation ``config`` drew its seeds (``public`` before seeds were sealed)."""
    return str(config.get("seeds", "public"))


def with_seeds(
    cfg: EvalConfig,
    stored: dict[str, Any] | None = None,
    source: tuple[str, dict[str, Any]] | None = None,
) -> EvalConfig:
    """``cfg`` with its sealed seeds: those of ``stored`` (the config of the evaluation being
    resumed, if it drew them), else the first ``episodes`` of ``source`` (``(name, config)`` of
    another sealed evaluation, to compare policies on its seeds), else a fresh draw. Public
    seeds need none: ``cfg`` as it is.

    Raises:
        EvaluationError: ``source`` is not a sealed evaluation of the same split with at least
            ``episodes`` seeds.
    """
    if cfg.seeds != "sealed" or cfg.drawn:
        return cfg
    if stored is not None and seed_mode(stored) == "sealed":
        drawn = tuple(int(s) for s in stored.get("drawn", ()))
        if len(drawn) == cfg.episodes:
            return replace(cfg, drawn=drawn)
    if source is not None:
        name, other = source
        drawn = tuple(int(s) for s in other.get("drawn", ()))
        if seed_mode(other) != "sealed" or other.get("split") != cfg.split:
            raise EvaluationError(
                f"evaluation {name!r} has no sealed seeds of the {cfg.split!r} split to share "
                f"(seeds {seed_mode(other)!r}, split {other.get('split')!r})"
            )
        if len(drawn) < cfg.episodes:
            raise EvaluationError(
                f"evaluation {name!r} drew {len(drawn)} seeds; {cfg.episodes} were asked for"
            )
        return replace(cfg, drawn=drawn[: cfg.episodes])
    return replace(cfg, drawn=tuple(draw_seeds(cfg.split, cfg.episodes)))


@dataclass(frozen=True, order=True)
class Task:
    """One episode of an evaluation."""

    policy: str
    scenario: str
    seed: int
    trial: int


def check(cfg: EvalConfig) -> EvalConfig:
    """Raise a one-line error naming what is wrong with ``cfg`` (and what exists)."""
    from opsgym.agents import policy_names

    spec(cfg.env)  # an unknown world first, naming the known ones
    check_split(cfg.split)
    if not cfg.policies:
        raise EvaluationError("No policy to evaluate: pass at least one --policy.")
    known = policy_names(cfg.env)
    for name in cfg.policies:
        base = name.split(":", 1)[0]
        if name not in known and base + ":" not in known:
            raise UnknownNameError(f"policy for {cfg.env!r}", name, known)
    if not isinstance(cfg.episodes, int) or cfg.episodes <= 0:
        raise EvaluationError(f"episodes must be a positive integer, got {cfg.episodes!r}")
    if not isinstance(cfg.trials, int) or cfg.trials <= 0:
        raise EvaluationError(f"trials must be a positive integer, got {cfg.trials!r}")
    if "reward_timing" in cfg.config or "overrides" in cfg.config:
        raise LeakingConfigError(
            "Evaluations run with reward_timing='end' and no overrides: "
            f"config has {sorted(set(cfg.config) & {'reward_timing', 'overrides'})}."
        )
    if cfg.seeds not in SEED_MODES:
        raise UnknownNameError("seed mode", cfg.seeds, SEED_MODES)
    if cfg.drawn:
        drawn = list(cfg.drawn)
        if cfg.seeds != "sealed" or len(drawn) != cfg.episodes or len(set(drawn)) != len(drawn):
            raise EvaluationError(
                f"drawn seeds are for sealed evaluations, {cfg.episodes} distinct ones; got "
                f"{len(drawn)} ({len(set(drawn))} distinct) with seeds={cfg.seeds!r}"
            )
        wrong = [s for s in drawn if split_of(check_seed(s)) != cfg.split]
        if wrong:
            raise EvaluationError(f"drawn seed {wrong[0]} is not in the {cfg.split!r} split")
    probe = seeds(cfg.split, 1)[0]  # every rule of the request, once per scenario
    for name in cfg.scenarios:
        request(cfg, name, probe).resolve(evaluation=True)
    return cfg


def request(cfg: EvalConfig, scenario: str, seed: int) -> EpisodeRequest:
    """The request of one episode of ``cfg``."""
    return EpisodeRequest(
        cfg.env,
        scenario,
        seed,
        split=cfg.split,
        config=cfg.config,
        max_steps=cfg.max_steps,
    )


def tasks(cfg: EvalConfig) -> list[Task]:
    """Every episode of the evaluation, in a fixed order."""
    from opsgym.agents import is_deterministic

    out = []
    episode_seeds = cfg.episode_seeds()
    for policy in cfg.policies:
        trials = 1 if is_deterministic(cfg.env, policy, runs_dir=cfg.runs_dir) else cfg.trials
        for scenario in cfg.scenarios:
            for seed in episode_seeds:
                out.extend(Task(policy, scenario, seed, t) for t in range(trials))
    return out


def trial_seed(seed: int, trial: int) -> int:
    """The seed of the generator (:func:`opsgym.agents.base.policy_rng`) a policy with its own
    randomness is reset with on ``trial`` of ``seed``: the policy gets the generator, never a
    seed.
    """
    return seed if trial == 0 else seed + (trial << 32)


def play_task(cfg: EvalConfig, task: Task) -> Episode:
    """Play one episode of the evaluation."""
    from opsgym.agents import get_policy, play
    from opsgym.agents.base import policy_rng

    episode = request(cfg, task.scenario, task.seed).start(evaluation=True)
    policy = get_policy(cfg.env, task.policy, runs_dir=cfg.runs_dir)
    policy.reset(policy_rng(trial_seed(task.seed, task.trial)))
    return play(episode, policy, reset=False)


def played(cfg: EvalConfig, task: Task, name: str) -> Prepared:
    """Play one episode of evaluation ``name``; return it ready to be written to the store.

    The record's hashing and JSON happen here, in whichever process played the episode; the
    store only inserts what comes out.
    """
    from opsgym.store.records import prepare_episode

    episode = play_task(cfg, task)
    extras = {
        "family": episode.family.name,
        "lies": lies_of(episode),
        "downtime_cost": downtime_cost(episode.events),
    }
    return prepare_episode(
        episode,
        policy=task.policy,
        split=cfg.split,
        trial=task.trial,
        evaluation=name,
        extras=extras,
    )


def play_chunk(cfg: EvalConfig, chunk: Sequence[Task], store: str, name: str) -> list[Task]:
    """Play ``chunk`` in a worker and write it to ``store`` (a URL) in one transaction."""
    prepared = [played(cfg, task, name) for task in chunk]
    if _WRITE_LOCK is None:
        _worker_store(store).add_prepared(prepared)
    else:
        with _WRITE_LOCK:
            _worker_store(store).add_prepared(prepared)
    return list(chunk)


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Keep the objects alive when the block starts out of the cyclic garbage collector's
    passes until it ends (:func:`gc.freeze`).

    An evaluation makes many short-lived containers, and each full collection would walk the
    whole heap of what was imported before (NumPy, SciPy, SQLAlchemy): tens of milliseconds
    each. Worker processes forked inside the block inherit the frozen heap, so their collections
    neither walk nor write (and so copy) the parent's pages, the use Python's documentation gives
    for it. Nothing is frozen if something else froze objects already: it owns the freeze.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Writer:
    """Writes finished episodes in small groups: one transaction per group, all or nothing.

    A commit costs about as much as playing a short episode, so episodes are grouped: a group
    is written once it holds ``size`` episodes or its first episode has waited ``seconds``,
    and always on :meth:`flush` (at the end, and when the evaluation is interrupted). A process
    killed outright loses at most the last ``seconds`` of finished episodes, never a part of
    one; a resumed evaluation plays them again, with the same results.

    The writes happen in the caller's thread. A background writing thread was measured and
    made evaluations slower: the driver takes the interpreter lock back between rows, and the
    playing thread then waits for it.
    """

    def __init__(self, store: Any, size: int = 32, seconds: float = 0.5):
        self.store, self.size, self.seconds = store, size, seconds
        self._buffer: list[Prepared] = []
        self._since = 0.0

    def add(self, prepared: Prepared) -> None:
        """Buffer one episode; write the group if it is full or old enough."""
        if not self._buffer:
            self._since = time.monotonic()
        self._buffer.append(prepared)
        if len(self._buffer) >= self.size or time.monotonic() - self._since >= self.seconds:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered."""
        if self._buffer:
            buffer, self._buffer = self._buffer, []
            self.store.add_prepared(buffer)


def downtime_cost(events: list[dict[str, Any]]) -> float | None:
    """The money the episode's downtime cost, where the world prices it (``downtime_cost_usd``
    in the final truth).
    """
    cost = events[-1]["truth"].get("downtime_cost_usd") if events else None
    return float(cost) if isinstance(cost, int | float) else None


_STORES: dict[str, Any] = {}


def _worker_store(url: str) -> Any:
    """This worker process's connection to the store at ``url`` (opened once)."""
    from opsgym.store import open_store

    if url not in _STORES:
        _STORES[url] = open_store(url)
    return _STORES[url]


def lies_of(episode: Any) -> dict[str, Any]:
    """The episode's lies told, trusted and reconciled (see :mod:`opsgym.core.lies`)."""
    return episode.world.lies.summary()


# -- executors ------------------------------------------------------------------------------
#
# Local workers are this process and ``workers - 1`` children. Each plays a chunk of episodes,
# prepares them (hashes, JSON) and writes the chunk itself, in one transaction (a worker killed
# mid-chunk writes none of it), so that only the inserts are ever serialised. They take turns to
# write under one lock: a SQLite file takes one writer at a time, and its busy handler sleeps in
# growing steps (up to 100 ms) when writers queue for it. Ray tasks, which may run on other
# machines, rely on the database (PostgreSQL for a cluster) to queue them.


def _local(cfg: EvalConfig, todo: Sequence[Task], name: str) -> Iterator[dict[str, Any]]:
    for task in todo:
        yield {"task": task, "prepared": played(cfg, task, name)}


def _chunks(todo: Sequence[Task], workers: int) -> list[list[Task]]:
    size = max(1, min(CHUNK, len(todo) // (workers * 4) or 1))
    return [list(todo[i : i + size]) for i in range(0, len(todo), size)]


class _Queue:
    """The tasks left, handed out in chunks that shrink as they run out (guided scheduling): at
    most :data:`CHUNK`, at least one, and about a ``4 * workers``-th of what is left, so that
    the workers finish close together.
    """

    def __init__(self, todo: Sequence[Task], workers: int):
        self._todo, self._next, self._share = list(todo), 0, 4 * workers

    def __bool__(self) -> bool:
        return self._next < len(self._todo)

    def take(self) -> list[Task]:
        left = len(self._todo) - self._next
        size = max(1, min(CHUNK, left // self._share))
        chunk = self._todo[self._next : self._next + size]
        self._next += size
        return chunk


_WRITE_LOCK: Any = None


def _share_lock(lock: Any) -> None:
    """Pool initializer: the lock local workers take turns to write under."""
    global _WRITE_LOCK
    _WRITE_LOCK = lock


def _processes(
    cfg: EvalConfig, todo: Sequence[Task], workers: int, store: Any, name: str
) -> Iterator[dict[str, Any]]:
    context = multiprocessing.get_context()
    lock = context.Lock()
    queue = _Queue(todo, workers)
    children = workers - 1
    pool = ProcessPoolExecutor(
        max_workers=children, mp_context=context, initializer=_share_lock, initargs=(lock,)
    )
    pending: set[Future[list[Task]]] = set()

    def top_up() -> None:  # a chunk running and one queued per child: never idle
        while queue and len(pending) < 2 * children:
            pending.add(pool.submit(play_chunk, cfg, queue.take(), store.url, name))

    try:
        top_up()
        while queue:
            chunk = queue.take()
            prepared = [played(cfg, task, name) for task in chunk]
            with lock:
                store.add_prepared(prepared)
            yield from ({"task": t} for t in chunk)
            finished = {f for f in pending if f.done()}
            pending -= finished
            for future in finished:
                yield from ({"task": t} for t in future.result())
            top_up()
        for future in as_completed(pending):
            yield from ({"task": t} for t in future.result())
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # what runs still finishes its chunk
        raise
    pool.shutdown(wait=True)


def _ray(
    cfg: EvalConfig, todo: Sequence[Task], address: str, store: Any, name: str
) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError as exc:
        raise EvaluationError("--ray needs the ray extra: pip install 'opsgym[ray]'") from exc
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, num_cpus=os.cpu_count())
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(play_chunk)
    pending = [remote.remote(cfg, c, store.url, name) for c in _chunks(todo, 2)]
    while pending:
        done, pending = ray.wait(pending)
        for finished in ray.get(done):
            yield from ({"task": t} for t in finished)


def execute(
    cfg: EvalConfig,
    todo: Sequence[Task],
    *,
    workers: int = 1,
    ray: str | None = None,
    store: Any = None,
    name: str = "",
) -> Iterator[dict[str, Any]]:
    """Play ``todo``, yielding each finished episode (in any order).

    In one process the episodes come back prepared (``prepared``) to be written by the caller;
    local workers (this process among them) and Ray tasks write to ``store`` (a
    :class:`~opsgym.store.Store`; other processes open its URL) themselves and yield only their
    tasks.
    """
    if ray:
        return _ray(cfg, todo, ray, store, name)
    if workers > 1 and len(todo) > 1:
        return _processes(cfg, todo, workers, store, name)
    return _local(cfg, todo, name)
