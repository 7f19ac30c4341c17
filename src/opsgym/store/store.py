"""The Store: episodes, evaluations and training runs in one database."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import JSON, URL, Connection, Engine, func, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from opsgym.store import migrate, records
from opsgym.store.engine import WRITE, dumps, make_engine, mask, resolve
from opsgym.store.errors import DuplicateEpisodeError, NotFoundError, StoreError, one_line
from opsgym.store.models import (
    STATUSES,
    EpisodeModel,
    EvaluationModel,
    EventModel,
    TrainingRunModel,
    utcnow,
)
from opsgym.store.rows import (
    EpisodeRow,
    Evaluation,
    TrainingRun,
    episode_columns,
    episode_row,
    evaluation_row,
    training_run_row,
)

_KEY = ("policy", "scenario", "seed", "trial")
_ENTRY = ("record", "policy", "split", "trial", "evaluation", "extras")
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
        prepared = []
        for i, entry in enumerate(entries):
            unknown = sorted(set(entry) - set(_ENTRY))
            if unknown:
                raise TypeError(f"Entry {i} has unknown keys {unknown}; known: {list(_ENTRY)}.")
            prepared.append(self._prepare(**entry))
        seen: dict[tuple[Any, ...], int] = {}
        for i, (values, _events, name) in enumerate(prepared):
            if name is None:
                continue
            key = (name, *(values[c] for c in _KEY))
            if key in seen:
                raise DuplicateEpisodeError(
                    f"Entries {seen[key]} and {i} both hold evaluation {name!r}'s "
                    f"(policy, scenario, seed, trial) = {key[1:]}; nothing was written."
                )
            seen[key] = i
        if not prepared:
            return []
        first = prepared[0][0]
        what = f"episode {first['env']}/{first['scenario']}/seed={first['seed']}"
        if len(prepared) > 1:
            what = f"{len(prepared)} episodes (the first: {what})"
        ids = []
        try:
            with self._transaction(what) as connection:
                for values, events, _name in prepared:
                    inserted = connection.execute(insert(EpisodeModel), values)
                    ids.append(inserted.inserted_primary_key[0])
                    _insert_events(connection, ids[-1], events)
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError):
                for values, _events, name in prepared:
                    if name is not None:
                        self._refuse_duplicate(values, name)
            raise
        return ids

    def _prepare(
        self,
        record: dict[str, Any],
        policy: str,
        split: str,
        trial: int = 0,
        evaluation: Evaluation | str | None = None,
        extras: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
        """Check one entry; return its ``episodes`` row, its events and its evaluation."""
        records.check_record(record)
        extra = records.check_extras(extras, record)
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise ValueError(f"trial must be an int >= 0, got {trial!r}.")
        name = _name(evaluation)
        values = records.episode_values(
            record,
            policy=policy,
            split=split,
            trial=trial,
            evaluation_id=None if name is None else self._evaluation_id(name),
            extras=extra,
        )
        return values, record["events"], name

    def _evaluation_id(self, name: str) -> int:
        """The id of evaluation ``name`` (remembered: evaluations are never renumbered)."""
        if name not in self._evaluation_ids:
            with self._read() as session:
                self._evaluation_ids[name] = self._evaluation_model(session, name).id
        return self._evaluation_ids[name]

    def _refuse_duplicate(self, values: dict[str, Any], name: str) -> None:
        """Raise :class:`DuplicateEpisodeError` if the episode's key is already stored."""
        key = tuple(values[c] for c in _KEY)
        conditions = [getattr(EpisodeModel, c) == values[c] for c in _KEY]
        with self._read() as session:
            found = session.scalar(
                select(EpisodeModel.id).where(
                    EpisodeModel.evaluation_id == values["evaluation_id"], *conditions
                )
            )
        if found is not None:
            raise DuplicateEpisodeError(
                f"Evaluation {name!r} already holds (policy, scenario, seed, trial) = {key} "
                f"as episode {found}; nothing was written."
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
            events = session.scalars(
                select(EventModel)
                .where(EventModel.episode_id == episode_id)
                .order_by(EventModel.step)
            ).all()
            return records.rebuild(episode, list(events))

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
        limit: int | None = None,
        offset: int = 0,
    ) -> list[EpisodeRow]:
        """Stored episodes matching every filter given, oldest first, without their events.

        Raises:
            NotFoundError: no evaluation of that name.
        """
        name = _name(evaluation)
        query = (
            select(EvaluationModel.name, *episode_columns())
            .outerjoin(EvaluationModel, EpisodeModel.evaluation_id == EvaluationModel.id)
            .order_by(EpisodeModel.id)
            .offset(offset)
            .limit(limit)
        )
        filters = {
            EpisodeModel.env: env,
            EpisodeModel.scenario: scenario,
            EpisodeModel.family: family,
            EpisodeModel.policy: policy,
            EpisodeModel.outcome: outcome,
            EpisodeModel.split: split,
            EvaluationModel.name: name,
        }
        for column, value in filters.items():
            if value is not None:
                query = query.where(column == value)
        with self._read() as session:
            if name is not None:
                self._evaluation_model(session, name)
            rows = session.execute(query).all()
        return [episode_row(row[0], tuple(row[1:])) for row in rows]

    # -- evaluations --------------------------------------------------------------------

    def start_evaluation(self, name: str, config: dict[str, Any]) -> Evaluation:
        """Create evaluation ``name``, or reopen it to resume (``resumed`` says which).

        A resumed evaluation is marked ``running`` again; :meth:`done_keys` lists what it
        already holds.

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
                found = EvaluationModel(name=name, config=config, status="running")
                session.add(found)
                session.flush()
                return evaluation_row(found, 0)
            if found.config != config:
                raise StoreError(
                    f"Evaluation {name!r} exists with a different config "
                    f"({_first_difference(found.config, config)}); resume it with the same "
                    "settings or choose another name."
                )
            found.status, found.updated_at = "running", utcnow()
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
        """Mark evaluation ``name`` ``done``, ``failed`` or ``interrupted``, with its summary."""
        _check_status(status)
        aggregates = _plain(aggregates, "aggregates")
        with self._write(f"evaluation {name!r}") as session:
            found = self._evaluation_model(session, name)
            found.status, found.aggregates, found.updated_at = status, aggregates, utcnow()
            session.flush()
            return evaluation_row(found, self._count(session, found.id))

    def evaluation(self, name: str) -> Evaluation:
        """Evaluation ``name``. Raises :class:`NotFoundError` if there is none."""
        with self._read() as session:
            found = self._evaluation_model(session, name)
            return evaluation_row(found, self._count(session, found.id))

    def evaluations(self) -> list[Evaluation]:
        """Every stored evaluation, oldest first."""
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


_EVENT_COLUMNS = [c.name for c in EventModel.__table__.columns]
_EVENT_JSON = frozenset(c.name for c in EventModel.__table__.columns if isinstance(c.type, JSON))
_SQLITE_EVENTS = (
    f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _EVENT_COLUMNS)})"
)


def _insert_events(connection: Connection, episode_id: int, events: list[dict[str, Any]]) -> None:
    if not events:
        return
    rows = records.event_rows(episode_id, events)
    if connection.dialect.name != "sqlite":
        connection.execute(insert(EventModel), rows)
        return
    # Events are most of what an evaluation writes. On SQLite, whose JSON columns are text,
    # the rows go to the driver as they are, the JSON written once by the store's serializer:
    # a third of the cost of SQLAlchemy's per-value bind processing, and the same bytes.
    connection.exec_driver_sql(
        _SQLITE_EVENTS,
        [tuple(dumps(r[c]) if c in _EVENT_JSON else r[c] for c in _EVENT_COLUMNS) for r in rows],
    )


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
