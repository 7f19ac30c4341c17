"""The Store: episodes, evaluations and training runs in one database."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import URL, Connection, Dialect, Engine, func, or_, select, text
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from opsgym.store import migrate, records, seal
from opsgym.store.engine import WRITE, make_engine, mask, resolve
from opsgym.store.errors import DuplicateEpisodeError, NotFoundError, StoreError, one_line
from opsgym.store.models import (
    JOB_STATUSES,
    STATUSES,
    EpisodeModel,
    EvaluationModel,
    EventModel,
    TrainingJobModel,
    TrainingRunModel,
    utcnow,
)
from opsgym.store.owner import gone, runner
from opsgym.store.rows import (
    EpisodeRow,
    Evaluation,
    TrainingJob,
    TrainingRun,
    episode_columns,
    episode_row,
    evaluation_row,
    training_job_row,
    training_run_row,
)

_KEY = ("policy", "scenario", "seed", "trial")
ORDERS = ("oldest", "newest")
"""How :meth:`Store.episodes` may sort: by id, oldest or newest first."""
ENTRY_KEYS = ("record", "policy", "split", "trial", "evaluation", "extras")
"""What an entry of :meth:`Store.add_episodes` may hold."""
T = TypeVar("T")


def open_store(url: str | Path | None = None) -> Store:
    """Open (creating or upgrading if needed) the store at ``url``.

    Args:
        url: ``None`` for ``$OPSGYM_DB`` or else the default SQLite file in the user's data
            directory; a path for a SQLite file; anything with ``://`` for a SQLAlchemy URL
            (``postgresql://user:pass@host/db`` uses psycopg 3).

    Raises:
        StoreError: the URL is malformed, the database unreachable, or its schema is newer
            than this opsgym. The message is one line naming the URL (password masked).
    """
    shown = "the default store" if url is None else mask(str(url)) or repr(url)
    try:
        resolved = resolve(url)
        shown = mask(resolved)
        engine = make_engine(resolved)
    except Exception as exc:  # malformed URL, unknown dialect, missing driver, bad folder
        raise StoreError(f"Cannot open store {shown}: {one_line(exc)}") from exc
    try:
        _upgrade(engine)
    except Exception as exc:
        engine.dispose()
        raise StoreError(f"Cannot open store {shown}: {one_line(exc)}") from exc
    return Store(engine)


def _upgrade(engine: Engine, attempts: int = 40) -> None:
    """:func:`migrate.upgrade`, again after a pause when SQLite says the file is locked.

    Processes that open a new SQLite file at once can find it locked before the busy timeout
    applies (switching the file to WAL needs it to themselves, and SQLite refuses at once a
    lock that could deadlock); the first to get it creates the schema, the others then find
    it current. Bounded: about ten seconds in all.
    """
    for attempt in range(attempts):
        try:
            migrate.upgrade(engine)
            return
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            engine.dispose()
            time.sleep(0.05 + 0.01 * attempt)


class Store:
    """Episodes, evaluations and training runs in one SQL database. Make it with
    :func:`open_store`; close it (or use it as a context manager) when done.

    Every write is one transaction: it happens entirely or not at all. Reads return plain
    dicts (typed as :class:`EpisodeRow`, :class:`Evaluation`, :class:`TrainingRun`), never
    live ORM objects.

    Attributes:
        url: The database URL, password included (to open the same store in a worker).
    """

    def __init__(self, engine: Engine):
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE: True})
        url: URL = engine.url
        self.url = url.render_as_string(hide_password=False)
        self._shown = mask(url)
        self._evaluation_ids: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Store({self._shown!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for queries of your own over :mod:`opsgym.store.models`."""
        return self._engine

    def close(self) -> None:
        """Release the store's connections."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Session]:
        try:
            with Session(self._engine) as session:
                yield session
        except SQLAlchemyError as exc:
            raise StoreError(f"Cannot read store {self._shown}: {one_line(exc)}") from exc

    @contextmanager
    def _write(self, what: str) -> Iterator[Session]:
        """One transaction: committed if the block ends, rolled back if anything raises.

        Database errors, and values the driver cannot encode (``TypeError``, ``ValueError``,
        ``OverflowError``), become a :class:`StoreError`; anything else propagates as it is.
        """
        try:
            with Session(self._writer, expire_on_commit=False) as session, session.begin():
                yield session
        except (SQLAlchemyError, TypeError, ValueError, OverflowError) as exc:
            raise StoreError(f"Cannot write {what} to {self._shown}: {one_line(exc)}") from exc

    @contextmanager
    def _transaction(self, what: str) -> Iterator[Connection]:
        """Like :meth:`_write`, on a bare connection: the fast path for episodes."""
        try:
            with self._writer.begin() as connection:
                yield connection
        except (SQLAlchemyError, TypeError, ValueError, OverflowError) as exc:
            raise StoreError(f"Cannot write {what} to {self._shown}: {one_line(exc)}") from exc

    def _evaluation_model(self, session: Session, name: str) -> EvaluationModel:
        found = session.scalar(select(EvaluationModel).where(EvaluationModel.name == name))
        if found is None:
            known = session.scalars(select(EvaluationModel.name).order_by(EvaluationModel.id))
            raise NotFoundError(f"No evaluation named {name!r} in {self._shown}; {_listed(known)}")
        return found

    def _run_model(self, session: Session, name: str) -> TrainingRunModel:
        found = session.scalar(select(TrainingRunModel).where(TrainingRunModel.name == name))
        if found is None:
            known = session.scalars(select(TrainingRunModel.name).order_by(TrainingRunModel.id))
            raise NotFoundError(
                f"No training run named {name!r} in {self._shown}; {_listed(known)}"
            )
        return found

    # -- episodes -----------------------------------------------------------------------

    def add_episode(
        self,
        record: dict[str, Any],
        *,
        policy: str,
        split: str,
        trial: int = 0,
        evaluation: Evaluation | str | None = None,
        extras: dict[str, Any] | None = None,
    ) -> int:
        """Store one episode record and all its events, in one transaction.

        Args:
            record: What ``Episode.record()`` returned.
            policy: Name of the policy that played it.
            split: The seed split it was drawn from.
            trial: Which of the k runs on this seed it is.
            evaluation: The evaluation (or its name) it belongs to, if any.
            extras: Figures the harness computed: ``downtime_cost`` (float), ``lies``
                (``{"told", "trusted", "reconciled", "by_kind"}``), and ``family`` (the drawn
                family, checked against the record's truth; read from it when not given).

        Returns:
            The episode's id.

        Raises:
            RecordError: ``record`` is not a record the store can keep exactly.
            ValueError: ``trial`` or ``extras`` is malformed.
            DuplicateEpisodeError: the evaluation already holds this (policy, scenario,
                seed, trial).
            NotFoundError: no evaluation of that name.
            StoreError: the database refused the write. Nothing was written.
        """
        entry = {"record": record, "policy": policy, "split": split, "trial": trial}
        return self.add_episodes([{**entry, "evaluation": evaluation, "extras": extras}])[0]

    def add_episodes(self, entries: Iterable[dict[str, Any]]) -> list[int]:
        """Store several episodes in one transaction: all of them, or none.

        Each entry holds :meth:`add_episode`'s arguments by name (``record``, ``policy``,
        ``split`` and optionally ``trial``, ``evaluation``, ``extras``). One commit for many
        episodes is several times cheaper than one each, for a harness that buffers what its
        workers finish; the price is that a crash loses the unwritten buffer (a resumed
        evaluation plays those episodes again, with the same results).

        Returns:
            The episodes' ids, in the order given.

        Raises:
            The errors of :meth:`add_episode`; a key given twice in one call is a
            :class:`DuplicateEpisodeError` too.
        """
        entries = list(entries)
        for i, entry in enumerate(entries):
            unknown = sorted(set(entry) - set(ENTRY_KEYS))
            if unknown:
                raise TypeError(f"Entry {i} has unknown keys {unknown}; known: {list(ENTRY_KEYS)}.")
        if not entries:
            return []
        prepared = []
        for entry in entries:
            try:
                prepared.append(
                    records.prepare(**{**entry, "evaluation": _name(entry.get("evaluation"))})
                )
            except records.UnstorableError as exc:
                what = _what(entries[0]["record"], len(entries))
                raise StoreError(f"Cannot write {what} to {self._shown}: {exc}") from exc
        return self._write_prepared(prepared, _what(entries[0]["record"], len(entries)))

    def add_prepared(self, prepared: Sequence[records.Prepared]) -> list[int]:
        """Store episodes made ready by :func:`opsgym.store.records.prepare_episode` (in a
        worker process, say) in one transaction, all of them or none: the lean path of an
        evaluation, which leaves only the inserts to the process that holds the write lock.

        Returns:
            The episodes' ids, in the order given.

        Raises:
            DuplicateEpisodeError: a key is given twice, or already stored.
            NotFoundError: no evaluation of a given name.
            StoreError: the database refused the write. Nothing was written.
        """
        if not prepared:
            return []
        first = dict(zip(records.PREPARED_COLUMNS, prepared[0].values, strict=True))
        return self._write_prepared(prepared, _what(first, len(prepared)))

    def _write_prepared(self, prepared: Sequence[records.Prepared], what: str) -> list[int]:
        seen: dict[tuple[Any, ...], int] = {}
        for i, p in enumerate(prepared):
            if p.evaluation is None:
                continue
            key = (p.evaluation, *p.key)
            if key in seen:
                raise DuplicateEpisodeError(
                    f"Entries {seen[key]} and {i} both hold evaluation {p.evaluation!r}'s "
                    f"(policy, scenario, seed, trial) = {p.key}; nothing was written."
                )
            seen[key] = i
        evaluation_ids = [None if p.evaluation is None else self._evaluation_id(p.evaluation)
                          for p in prepared]  # fmt: skip
        try:
            with self._transaction(what) as connection:
                ids = _allocate_ids(connection, len(prepared))
                _insert_episodes(connection, ids, evaluation_ids, prepared)
                _insert_events(connection, ids, prepared)
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError):
                for p, evaluation_id in zip(prepared, evaluation_ids, strict=True):
                    if evaluation_id is not None:
                        self._refuse_duplicate(p, evaluation_id)
            raise
        return ids

    def _evaluation_id(self, name: str) -> int:
        """The id of evaluation ``name`` (remembered: evaluations are never renumbered)."""
        if name not in self._evaluation_ids:
            with self._read() as session:
                self._evaluation_ids[name] = self._evaluation_model(session, name).id
        return self._evaluation_ids[name]

    def _refuse_duplicate(self, prepared: records.Prepared, evaluation_id: int) -> None:
        """Raise :class:`DuplicateEpisodeError` if the episode's key is already stored."""
        conditions = [
            getattr(EpisodeModel, c) == v for c, v in zip(_KEY, prepared.key, strict=True)
        ]
        with self._read() as session:
            found = session.scalar(
                select(EpisodeModel.id).where(
                    EpisodeModel.evaluation_id == evaluation_id, *conditions
                )
            )
        if found is not None:
            raise DuplicateEpisodeError(
                f"Evaluation {prepared.evaluation!r} already holds (policy, scenario, seed, "
                f"trial) = {prepared.key} as episode {found}; nothing was written."
            )

    def episode_record(self, episode_id: int) -> dict[str, Any]:
        """The exact record episode ``episode_id`` was stored from (``opsgym.replay`` it).

        Raises:
            NotFoundError: no such episode.
        """
        with self._read() as session:
            episode = session.get(EpisodeModel, episode_id)
            if episode is None:
                raise NotFoundError(f"No episode {episode_id!r} in {self._shown}.")
            found = session.execute(
                select(EventModel.steps, EventModel.truth_hidden).where(
                    EventModel.episode_id == episode_id
                )
            ).first()
            steps, truth = found if found is not None else ([], [])
            return records.rebuild(episode, steps, truth)

    def episodes(
        self,
        *,
        env: str | None = None,
        scenario: str | None = None,
        family: str | None = None,
        policy: str | None = None,
        evaluation: Evaluation | str | None = None,
        outcome: str | None = None,
        split: str | None = None,
        accepted: bool | None = None,
        order: str = "oldest",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[EpisodeRow]:
        """Stored episodes matching every filter given (equal to it), without their events.

        ``accepted`` keeps the episodes whose verdict accepted (``True``) or did not (``False``:
        refused, or never judged); ``order`` is ``oldest`` first (by id, the default) or
        ``newest`` first; ``limit`` and ``offset`` cut a page from that order.

        Raises:
            NotFoundError: no evaluation of that name.
            ValueError: an unknown ``order``.
        """
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {order!r}.")
        name = _name(evaluation)
        equal = {"env": env, "scenario": scenario, "family": family, "policy": policy,
                 "outcome": outcome, "split": split}  # fmt: skip
        query = _filtered(select(EvaluationModel.name, *episode_columns()), name, accepted, equal)
        key = EpisodeModel.id.desc() if order == "newest" else EpisodeModel.id
        query = query.order_by(key).offset(offset).limit(limit)
        with self._read() as session:
            if name is not None:
                self._evaluation_model(session, name)
            rows = session.execute(query).all()
        return [episode_row(row[0], tuple(row[1:])) for row in rows]

    def count_episodes(
        self,
        *,
        env: str | None = None,
        scenario: str | None = None,
        family: str | None = None,
        policy: str | None = None,
        evaluation: Evaluation | str | None = None,
        outcome: str | None = None,
        split: str | None = None,
        accepted: bool | None = None,
    ) -> int:
        """How many stored episodes match every filter given (those of :meth:`episodes`).

        Raises:
            NotFoundError: no evaluation of that name.
        """
        name = _name(evaluation)
        equal = {"env": env, "scenario": scenario, "family": family, "policy": policy,
                 "outcome": outcome, "split": split}  # fmt: skip
        query = _filtered(select(func.count()).select_from(EpisodeModel), name, accepted, equal)
        with self._read() as session:
            if name is not None:
                self._evaluation_model(session, name)
            return session.scalar(query) or 0

    # -- evaluations --------------------------------------------------------------------

    def start_evaluation(self, name: str, config: dict[str, Any]) -> Evaluation:
        """Create evaluation ``name``, or reopen it to resume (``resumed`` says which).

        A resumed evaluation is marked ``running`` again; :meth:`done_keys` lists what it
        already holds. While it runs, its ``aggregates`` name this process (``runner``), so
        that a reader can tell when it died without a word (see :mod:`opsgym.store.owner`).

        Raises:
            StoreError: an evaluation of that name exists with a different config (pick
                another name, or run with the stored config).
        """
        config = _plain(config, "config")
        return _raced(lambda: self._start_evaluation(name, config))

    def _start_evaluation(self, name: str, config: dict[str, Any]) -> Evaluation:
        with self._write(f"evaluation {name!r}") as session:
            found = session.scalar(select(EvaluationModel).where(EvaluationModel.name == name))
            if found is None:
                found = EvaluationModel(
                    name=name, config=config, status="running", aggregates={"runner": runner()}
                )
                session.add(found)
                session.flush()
                return evaluation_row(found, 0)
            if found.config != config:
                raise StoreError(
                    f"Evaluation {name!r} exists with a different config "
                    f"({_first_difference(found.config, config)}); resume it with the same "
                    "settings or choose another name."
                )
            self._refuse_broken_seal(session, found)
            found.status, found.aggregates = "running", {"runner": runner()}
            found.updated_at = utcnow()
            return evaluation_row(found, self._count(session, found.id), resumed=True)

    def done_keys(self, evaluation: Evaluation | str) -> set[tuple[str, str, int, int]]:
        """``(policy, scenario, seed, trial)`` of every episode the evaluation holds."""
        name = _name(evaluation)
        with self._read() as session:
            evaluation_id = self._evaluation_model(session, name).id
            query = select(*(getattr(EpisodeModel, c) for c in _KEY)).where(
                EpisodeModel.evaluation_id == evaluation_id
            )
            rows = session.execute(query).all()
        return {(p, sc, se, t) for p, sc, se, t in rows}

    def finish_evaluation(
        self, name: str, status: str, aggregates: dict[str, Any] | None = None
    ) -> Evaluation:
        """Mark evaluation ``name`` ``done``, ``failed`` or ``interrupted``, with its summary,
        and seal the episodes it holds (:mod:`opsgym.store.seal`; :meth:`seal` reads it).
        """
        _check_status(status)
        aggregates = _plain(aggregates, "aggregates")
        with self._write(f"evaluation {name!r}") as session:
            found = self._evaluation_model(session, name)
            found.status, found.aggregates, found.updated_at = status, aggregates, utcnow()
            self._seal(session, found)
            session.flush()
            return evaluation_row(found, self._count(session, found.id))

    def seal(self, name: str) -> dict[str, Any] | None:
        """Evaluation ``name``'s seal, ``{"root", "manifest"}``, or ``None`` if it was never
        finished (or was finished before the store kept seals).

        Raises:
            NotFoundError: no evaluation of that name.
        """
        with self._read() as session:
            found = self._evaluation_model(session, name)
            if found.root is None:
                return None
            return {"root": found.root, "manifest": found.manifest or []}

    @staticmethod
    def _stored_entries(session: Session, evaluation_id: int) -> list[tuple[int, tuple[Any, ...]]]:
        """``(id, (policy, scenario, seed, trial, record_hash))`` of the evaluation's episodes."""
        query = select(
            EpisodeModel.id, *(getattr(EpisodeModel, c) for c in _KEY), EpisodeModel.record_hash
        ).where(EpisodeModel.evaluation_id == evaluation_id)
        return [(row[0], tuple(row[1:])) for row in session.execute(query).all()]

    def _seal(self, session: Session, found: EvaluationModel) -> None:
        """Write ``found``'s manifest and root over the episodes it holds now."""
        entries = seal.manifest(e for _, e in self._stored_entries(session, found.id))
        found.manifest, found.root = entries, seal.root(found.name, found.config, entries)

    def _refuse_broken_seal(self, session: Session, found: EvaluationModel) -> None:
        """Raise if sealed evaluation ``found`` no longer holds the episodes it was sealed with:
        resuming it would seal an edited set of episodes afresh.
        """
        if found.root is None:
            return
        problems = seal.differences(found.manifest or [], self._stored_entries(session, found.id))
        if found.root != seal.root(found.name, found.config, found.manifest or []):
            problems.insert(0, {"message": "its manifest does not hash to its root"})
        if problems:
            shown = "; ".join(p["message"] for p in problems[:3])
            more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
            raise StoreError(
                f"Evaluation {found.name!r} no longer matches the seal it was finished with "
                f"({shown}{more}); `opsgym eval --verify {found.name}` names every difference. "
                "Nothing was played."
            )

    def evaluation(self, name: str) -> Evaluation:
        """Evaluation ``name``. Raises :class:`NotFoundError` if there is none."""
        self._settle_abandoned()
        with self._read() as session:
            found = self._evaluation_model(session, name)
            return evaluation_row(found, self._count(session, found.id))

    def evaluations(self) -> list[Evaluation]:
        """Every stored evaluation, oldest first."""
        self._settle_abandoned()
        counts = (
            select(EpisodeModel.evaluation_id, func.count().label("n"))
            .group_by(EpisodeModel.evaluation_id)
            .subquery()
        )
        query = (
            select(EvaluationModel, func.coalesce(counts.c.n, 0))
            .outerjoin(counts, counts.c.evaluation_id == EvaluationModel.id)
            .order_by(EvaluationModel.id)
        )
        with self._read() as session:
            return [evaluation_row(model, n) for model, n in session.execute(query).all()]

    def _settle_abandoned(self) -> None:
        """Mark ``interrupted`` every running evaluation whose process, on this host, is gone.

        An evaluation killed outright cannot mark itself. Each is marked only if its row is
        unchanged since it was read (a resume elsewhere names a new runner and wins); a store
        that cannot be written now is left as it is, and read as it is.
        """
        query = select(EvaluationModel).where(EvaluationModel.status == "running")
        try:
            with self._read() as session:
                running = [(m.id, m.updated_at, m.aggregates) for m in session.scalars(query)]
            for evaluation_id, seen, aggregates in running:
                named = (aggregates or {}).get("runner")
                if not gone(named):
                    continue
                with self._write("an abandoned evaluation") as session:
                    found = session.get(EvaluationModel, evaluation_id)
                    if found is None or found.status != "running" or found.updated_at != seen:
                        continue
                    found.status, found.updated_at = "interrupted", utcnow()
                    self._seal(session, found)
                    found.aggregates = abandoned(
                        f"its process ({named.get('pid')} on {named.get('host')}) ended "
                        "without finishing it",
                        found.name,
                        self._count(session, evaluation_id),
                    )
        except StoreError:
            return

    @staticmethod
    def _count(session: Session, evaluation_id: int) -> int:
        query = select(func.count()).where(EpisodeModel.evaluation_id == evaluation_id)
        return session.scalar(query) or 0

    # -- training runs ------------------------------------------------------------------

    def start_training_run(
        self, name: str, *, kind: str, env: str, config: dict[str, Any]
    ) -> TrainingRun:
        """Create training run ``name``, or reopen it to resume (``resumed`` says which).

        Raises:
            StoreError: a run of that name exists with another kind, env or config.
        """
        config = _plain(config, "config")
        return _raced(lambda: self._start_training_run(name, kind, env, config))

    def _start_training_run(
        self, name: str, kind: str, env: str, config: dict[str, Any]
    ) -> TrainingRun:
        with self._write(f"training run {name!r}") as session:
            found = session.scalar(select(TrainingRunModel).where(TrainingRunModel.name == name))
            if found is None:
                found = TrainingRunModel(
                    name=name, kind=kind, env=env, config=config, status="running"
                )
                session.add(found)
                session.flush()
                return training_run_row(found)
            stored = {"kind": found.kind, "env": found.env, "config": found.config}
            given = {"kind": kind, "env": env, "config": config}
            if stored != given:
                raise StoreError(
                    f"Training run {name!r} exists with different settings "
                    f"({_first_difference(stored, given)}); choose another name."
                )
            found.status, found.updated_at = "running", utcnow()
            return training_run_row(found, resumed=True)

    def update_training_run(
        self,
        name: str,
        *,
        curves: dict[str, Any] | None = None,
        checkpoint: str | Path | None = None,
    ) -> TrainingRun:
        """Replace the run's curves and/or checkpoint (what is ``None`` is left as it is)."""
        return self._write_run(name, None, curves, checkpoint)

    def finish_training_run(
        self,
        name: str,
        status: str,
        *,
        curves: dict[str, Any] | None = None,
        checkpoint: str | Path | None = None,
    ) -> TrainingRun:
        """Mark the run ``done``, ``failed`` or ``interrupted``, with its last curves."""
        _check_status(status)
        return self._write_run(name, status, curves, checkpoint)

    def _write_run(
        self,
        name: str,
        status: str | None,
        curves: dict[str, Any] | None,
        checkpoint: str | Path | None,
    ) -> TrainingRun:
        curves = _plain(curves, "curves")
        with self._write(f"training run {name!r}") as session:
            found = self._run_model(session, name)
            if status is not None:
                found.status = status
            if curves is not None:
                found.curves = curves
            if checkpoint is not None:
                found.checkpoint = str(checkpoint)
            found.updated_at = utcnow()
            session.flush()
            return training_run_row(found)

    def training_run(self, name: str) -> TrainingRun:
        """Training run ``name``. Raises :class:`NotFoundError` if there is none."""
        with self._read() as session:
            return training_run_row(self._run_model(session, name))

    def training_runs(self) -> list[TrainingRun]:
        """Every stored training run, oldest first."""
        with self._read() as session:
            models = session.scalars(select(TrainingRunModel).order_by(TrainingRunModel.id))
            return [training_run_row(m) for m in models]

    # -- training jobs ------------------------------------------------------------------

    def add_training_job(
        self,
        name: str,
        *,
        kind: str,
        env: str,
        config: dict[str, Any],
        folder: str | Path,
        max_wall_s: float | None = None,
    ) -> TrainingJob:
        """Record a new training job, ``queued``.

        Raises:
            StoreError: a job of that name exists.
        """
        config = _plain(config, "config")
        with self._write(f"training job {name!r}") as session:
            model = TrainingJobModel(
                name=name,
                kind=kind,
                env=env,
                config=config,
                status="queued",
                folder=str(folder),
                max_wall_s=max_wall_s,
            )
            session.add(model)
            session.flush()
            return training_job_row(model)

    def update_training_job(self, name: str, **fields: Any) -> TrainingJob:
        """Set some of the job's ``status``, ``pid``, ``pid_start``, ``exit_code``, ``error``,
        ``started_at`` and ``finished_at``.
        """
        unknown = sorted(set(fields) - JOB_FIELDS)
        if unknown:
            raise TypeError(
                f"training jobs have no settable fields {unknown}; {sorted(JOB_FIELDS)}"
            )
        if "status" in fields and fields["status"] not in JOB_STATUSES:
            raise ValueError(
                f"status must be one of {', '.join(JOB_STATUSES)}; got {fields['status']!r}."
            )
        with self._write(f"training job {name!r}") as session:
            model = self._job_model(session, name)
            for key, value in fields.items():
                setattr(model, key, value)
            model.updated_at = utcnow()
            session.flush()
            return training_job_row(model)

    def training_job(self, name: str) -> TrainingJob:
        """Training job ``name``. Raises :class:`NotFoundError` if there is none."""
        with self._read() as session:
            return training_job_row(self._job_model(session, name))

    def training_jobs(self, statuses: Iterable[str] | None = None) -> list[TrainingJob]:
        """Every training job (those in ``statuses`` if given), oldest first."""
        query = select(TrainingJobModel).order_by(TrainingJobModel.id)
        if statuses is not None:
            query = query.where(TrainingJobModel.status.in_(list(statuses)))
        with self._read() as session:
            return [training_job_row(m) for m in session.scalars(query)]

    def delete_training_job(self, name: str) -> None:
        """Forget training job ``name`` (its run, and its files, are left as they are)."""
        with self._write(f"training job {name!r}") as session:
            session.delete(self._job_model(session, name))

    def _job_model(self, session: Session, name: str) -> TrainingJobModel:
        found = session.scalar(select(TrainingJobModel).where(TrainingJobModel.name == name))
        if found is None:
            known = session.scalars(select(TrainingJobModel.name).order_by(TrainingJobModel.id))
            raise NotFoundError(
                f"No training job named {name!r} in {self._shown}; {_listed(known)}"
            )
        return found


JOB_FIELDS = frozenset(
    {"status", "pid", "pid_start", "exit_code", "error", "started_at", "finished_at"}
)
"""What :meth:`Store.update_training_job` may set."""

_EPISODE_COLUMNS = ("id", "evaluation_id", *records.PREPARED_COLUMNS)
_CREATED_AT = records.PREPARED_COLUMNS.index("created_at")


def _filtered(
    query: Any, evaluation: str | None, accepted: bool | None, equal: dict[str, Any]
) -> Any:
    """``query`` over episodes (joined to their evaluation) narrowed to the evaluation named,
    the verdict's acceptance and the columns ``equal`` gives a value (``None``: any).
    """
    query = query.outerjoin(EvaluationModel, EpisodeModel.evaluation_id == EvaluationModel.id)
    for column, value in equal.items():
        if value is not None:
            query = query.where(getattr(EpisodeModel, column) == value)
    if evaluation is not None:
        query = query.where(EvaluationModel.name == evaluation)
    if accepted is True:
        query = query.where(EpisodeModel.accepted.is_(True))
    elif accepted is False:  # refused, or never judged (an episode cut short has no verdict)
        query = query.where(or_(EpisodeModel.accepted.is_(False), EpisodeModel.accepted.is_(None)))
    return query


def _allocate_ids(connection: Connection, n: int) -> list[int]:
    """Ids for ``n`` new episodes. On SQLite the transaction holds the write lock (``BEGIN
    IMMEDIATE``), so the ids after the largest are free; elsewhere the table's sequence gives
    them.
    """
    if connection.dialect.name == "sqlite":
        last = connection.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM episodes").scalar()
        return list(range(last + 1, last + 1 + n))
    ids = connection.execute(
        text(
            "SELECT nextval(pg_get_serial_sequence('episodes', 'id')) FROM generate_series(1, :n)"
        ),
        {"n": n},
    ).scalars()
    return sorted(ids)


@lru_cache
def _insert_sql(dialect: Dialect, table: str, columns: tuple[str, ...]) -> str:
    """``INSERT INTO table (columns) VALUES (...)`` in the driver's own parameter style."""
    marker = "?" if dialect.paramstyle == "qmark" else "%s"
    names = ", ".join(dialect.identifier_preparer.quote(c) for c in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join(marker for _ in columns)})"


def _insert_episodes(
    connection: Connection,
    ids: list[int],
    evaluation_ids: list[int | None],
    prepared: Sequence[records.Prepared],
) -> None:
    # Prepared values go to the driver as they are, their JSON already text: an insert costs
    # the database's work and little else. Only the time stamp needs the dialect's form.
    dialect = connection.dialect
    stamp = _CREATED_AT
    when = EpisodeModel.__table__.c.created_at.type.dialect_impl(dialect).bind_processor(dialect)
    rows = []
    for i, evaluation_id, p in zip(ids, evaluation_ids, prepared, strict=True):
        values = p.values
        if when is not None:
            values = (*values[:stamp], when(values[stamp]), *values[stamp + 1 :])
        rows.append((i, evaluation_id, *values))
    connection.exec_driver_sql(_insert_sql(dialect, "episodes", _EPISODE_COLUMNS), rows)


def _insert_events(
    connection: Connection, ids: list[int], prepared: Sequence[records.Prepared]
) -> None:
    sql = _insert_sql(connection.dialect, "events", ("episode_id", "steps", "truth_hidden"))
    connection.exec_driver_sql(
        sql, [(i, p.steps, p.truth) for i, p in zip(ids, prepared, strict=True)]
    )


def _what(first: dict[str, Any], n: int) -> str:
    """How a write of ``n`` episodes, the first with these header fields, is named in an error."""
    what = f"episode {first['env']}/{first['scenario']}/seed={first['seed']}"
    return f"{n} episodes (the first: {what})" if n > 1 else what


def _raced(start: Callable[[], T]) -> T:
    """``start()``, once more if another process created the same name in the meantime
    (the second time it finds the name and resumes it).
    """
    try:
        return start()
    except StoreError as exc:
        if not isinstance(exc.__cause__, IntegrityError):
            raise
    return start()


def _name(evaluation: Evaluation | str | None) -> str | None:
    return evaluation["name"] if isinstance(evaluation, dict) else evaluation


def _listed(names: Iterable[str], most: int = 20) -> str:
    names = list(names)
    if not names:
        return "it holds none."
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"stored: {', '.join(names[:most])}{more}."


def abandoned(why: str, name: str, stored: int) -> dict[str, Any]:
    """The aggregates of an evaluation that ended unfinished: why, and how to resume it."""
    return {
        "error": why,
        "stored": stored,
        "resume": (
            f"run it again with the same name ({name!r}) and settings: the {stored} episodes "
            "stored are kept and only the missing ones are played"
        ),
    }


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}; got {status!r}.")


def _plain(value: Any, what: str) -> Any:
    """``value`` as it will read back from a JSON column (tuples become lists)."""
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be plain JSON data: {exc}") from exc


def _first_difference(stored: dict[str, Any], given: dict[str, Any]) -> str:
    for key in sorted(set(stored) | set(given), key=str):
        if stored.get(key) != given.get(key):
            return f"{key}: stored {stored.get(key)!r}, given {given.get(key)!r}"
    return "no field differs"
