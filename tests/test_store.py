"""The store, on a real SQLite file and on a real (throwaway) PostgreSQL server."""

from __future__ import annotations

import fnmatch
import json
import math
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, inspect, select, text

import opsgym
from opsgym.core.episode import canonical, jsonable, seal
from opsgym.core.errors import OpsgymError, RecordError
from opsgym.store import (
    DuplicateEpisodeError,
    NotFoundError,
    StoreError,
    open_store,
)
from opsgym.store import records as store_records
from opsgym.store import store as store_module
from opsgym.store.engine import ENV_VAR, loads, resolve
from opsgym.store.migrate import HEAD, SCRIPTS, VERSION_TABLE, alembic_config
from opsgym.store.models import Base, EpisodeModel, EventModel
from tests.pg import postgres_server, postgres_url  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"episodes", "events", "evaluations", "training_runs", "training_jobs", VERSION_TABLE}


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "opsgym.sqlite")
    return request.getfixturevalue("postgres_url")


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    """Finished episodes of every world, plus an unfinished one with odd calls."""
    out = [opsgym.run(env, None, seed).record() for env in opsgym.list_envs() for seed in (1, 2)]
    out.append(opsgym.run("release", "deploy_timeout", 4, "random").record())
    odd = opsgym.make("fleet", None, 3, token_source="provider")
    odd.step(123, {"x": [1, 2.5, None]}, tokens=7)  # rejected: a tool named by a number
    odd.step("check_telemetry", None, tokens=0)
    odd.step(None, "not a dict")  # rejected again, args of the wrong shape
    out.append(odd.record())  # no verdict: the episode is not over
    return out


@pytest.fixture(scope="module")
def episodes() -> list[Any]:
    """Live episodes, as an evaluation has them: every world's oracle and random on mixed
    seeds, an unfinished one with odd calls, and one with a model's transcript."""
    out = [
        opsgym.run(env, "mixed", seed, policy)
        for env in opsgym.list_envs()
        for seed in (5, 6)
        for policy in ("oracle", "random")
    ]
    odd = opsgym.make("fleet", None, 3, token_source="provider")
    odd.step(123, {"x": [1, 2.5, None]}, tokens=7)
    odd.step("check_telemetry", None, tokens=0)
    out.append(odd)
    talk = opsgym.run("release", "nominal", 2)
    talk.transcript.append({"role": "assistant", "content": "deploy it", "id": 2**70})
    out.append(talk)
    return out


def count(store: Any, model: type) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(model)).scalar_one()


# -- round trip ------------------------------------------------------------------------------


def test_record_comes_back_exactly_and_replays(url: str, records: list[dict[str, Any]]) -> None:
    with open_store(url) as store:
        ids = [store.add_episode(r, policy="oracle", split="test") for r in records]
    with open_store(url) as store:  # a fresh connection: nothing served from memory
        for i, original in zip(ids, records, strict=True):
            stored = store.episode_record(i)
            assert stored == original
            assert canonical(stored) == canonical(original)
            result = opsgym.replay(stored)
            assert result.match, result.first_difference
            assert result.recorded_hash == original["hash"] == result.replayed_hash


def test_awkward_json_values_round_trip_bit_for_bit(url: str) -> None:
    record = opsgym.run("release", "nominal", 3).record()
    awkward = {
        "negative_zero": -0.0,
        "tiny": 5e-324,
        "huge": 1.7976931348623157e308,
        "sum": 0.1 + 0.2,
        "one": 1.0,
        "big_int": 2**63 + 1,
        "text": 'été ✓ "quoted" \\ \n',
        "nested": [[], {}, [None, True, False]],
    }
    record["events"][0]["truth"]["awkward"] = awkward
    record["events"][-1]["report"]["awkward"] = awkward
    record["rewards"]["negative_zero"] = -0.0
    with open_store(url) as store:
        stored = store.episode_record(store.add_episode(record, policy="p", split="test"))
    assert canonical(stored) == canonical(record)
    # Each value is written back as it was (keys come back sorted: the store writes them so).
    back = stored["events"][0]["truth"]["awkward"]
    assert json.dumps(back, sort_keys=True) == json.dumps(awkward, sort_keys=True)
    assert math.copysign(1.0, back["negative_zero"]) == -1.0


def test_truth_lives_in_its_own_hidden_column(url: str, records: list[dict[str, Any]]) -> None:
    with open_store(url) as store:
        store.add_episode(records[0], policy="oracle", split="test")
        columns = {c["name"]: c for c in inspect(store.engine).get_columns("events")}
        with store.engine.connect() as conn:
            steps, truth = conn.execute(select(EventModel.steps, EventModel.truth_hidden)).one()
    assert "truth" not in columns and "truth_hidden" in columns
    assert truth == [e["truth"] for e in records[0]["events"]]
    assert all("truth" not in step for step in steps)
    if not url.endswith(".sqlite"):  # SQLite keeps no column comments
        assert "HIDDEN" in columns["truth_hidden"]["comment"]


@pytest.mark.parametrize(
    ("table", "column", "value", "field"),
    [
        ("episodes", "outcome", "'unsafe'", "verdict"),
        ("episodes", "seed", "999", "header"),
        ("episodes", "header", "json_set(header, '$.max_steps', 5)", "header"),
        (
            "events",
            "steps",
            """json_set(steps, '$[1].report', json('{"status": "ok"}'))""",
            "report",
        ),
        ("events", "truth_hidden", "json_set(truth_hidden, '$[1]', json('{}'))", "truth"),
    ],
)
def test_values_edited_in_the_database_are_caught_by_replay(
    tmp_path: Path, records: list[dict[str, Any]], table: str, column: str, value: str, field: str
) -> None:
    with open_store(tmp_path / "s.sqlite") as store:
        i = store.add_episode(records[4], policy="oracle", split="test")
        with store.engine.begin() as conn:
            where = "id = :i" if table == "episodes" else "episode_id = :i"
            conn.execute(text(f"UPDATE {table} SET {column} = {value} WHERE {where}"), {"i": i})
        result = opsgym.replay(store.episode_record(i))
    assert not result.match and result.first_difference["field"] == field


def test_episode_rows_carry_what_statistics_need(url: str, records: list[dict[str, Any]]) -> None:
    extras = {"downtime_cost": 40000.0, "lies": {"told": 2, "trusted": 1, "reconciled": 1,
                                                 "by_kind": {"stale_health": 1}}}  # fmt: skip
    with open_store(url) as store:
        store.start_evaluation("e", {"episodes": 2})
        first = store.add_episode(records[0], policy="oracle", split="test", evaluation="e",
                                  extras=extras)  # fmt: skip
        for r in records[1:]:
            store.add_episode(r, policy="random", split="dev")
        row = store.episodes(evaluation="e")[0]
        record = records[0]
        assert row["id"] == first and row["evaluation"] == "e" and row["policy"] == "oracle"
        assert (row["env"], row["scenario"], row["seed"], row["trial"], row["split"]) == (
            record["env"], record["scenario"], 1, 0, "test")  # fmt: skip
        assert (row["outcome"], row["accepted"]) == (record["verdict"]["outcome"], True)
        assert row["verdict"] == record["verdict"]
        assert row["steps"] == len(record["events"])
        assert row["tokens"] == sum(e["tokens"] for e in record["events"])
        assert row["rewards"] == record["rewards"] and row["return"] == record["return"]
        assert row["family"] == record["events"][-1]["truth"]["family"]
        assert (row["downtime_cost"], row["lies"]) == (40000.0, extras["lies"])
        assert (row["record_hash"], row["token_source"]) == (record["hash"], "fixed")
        assert row["created_at"].tzinfo is not None
        assert len(store.episodes()) == len(records)
        assert len(store.episodes(policy="random", split="dev")) == len(records) - 1
        assert [r["env"] for r in store.episodes(env="oversight")] == ["oversight"] * 2
        unfinished = store.episodes(env="fleet", policy="random")
        assert unfinished[-1]["outcome"] is None and unfinished[-1]["verdict"] is None
        assert unfinished[-1]["evaluation"] is None
        assert len(store.episodes(limit=2, offset=1)) == 2
        assert store.episodes(outcome="no such outcome") == []
        with pytest.raises(NotFoundError, match="No evaluation named 'missing'.*stored: e"):
            store.episodes(evaluation="missing")
        with pytest.raises(NotFoundError):
            store.episode_record(10_000)


def test_episodes_come_newest_first_on_request_filtered_by_acceptance_and_counted(
    url: str, records: list[dict[str, Any]]
) -> None:
    with open_store(url) as store:
        ids = [store.add_episode(r, policy="oracle", split="test") for r in records]
        accepted = [i for i, r in zip(ids, records, strict=True)
                    if (r["verdict"] or {}).get("accepted")]  # fmt: skip
        assert 0 < len(accepted) < len(ids)  # both kinds, and one with no verdict at all
        assert [r["id"] for r in store.episodes()] == ids  # oldest first, as before
        assert [r["id"] for r in store.episodes(order="newest")] == ids[::-1]
        assert [r["id"] for r in store.episodes(order="newest", limit=2, offset=1)] == ids[-2:-4:-1]
        assert [r["id"] for r in store.episodes(accepted=True)] == accepted
        refused = [r["id"] for r in store.episodes(accepted=False, order="newest")]
        assert refused == [i for i in ids[::-1] if i not in accepted]
        assert store.count_episodes() == len(ids)
        assert store.count_episodes(accepted=True) == len(accepted)
        assert store.count_episodes(accepted=False) == len(ids) - len(accepted)
        assert store.count_episodes(env="oversight", accepted=True) == len(
            store.episodes(env="oversight", accepted=True)
        )
        with pytest.raises(ValueError, match="order must be one of oldest, newest; got 'up'"):
            store.episodes(order="up")
        with pytest.raises(NotFoundError):
            store.count_episodes(evaluation="missing")


# -- the lean path of an evaluation -----------------------------------------------------------

_STAMP = store_records.PREPARED_COLUMNS.index("created_at")


def _unstamped(prepared: store_records.Prepared) -> store_records.Prepared:
    return prepared._replace(values=prepared.values[:_STAMP] + prepared.values[_STAMP + 1 :])


def test_an_episode_prepared_straight_from_play_is_its_record_prepared(
    episodes: list[Any],
) -> None:
    for i, episode in enumerate(episodes):
        given = {"policy": "p", "split": "test", "trial": i, "evaluation": "e",
                 "extras": {"downtime_cost": 1.5}}  # fmt: skip
        fast = store_records.prepare_episode(episode, **given)
        assert _unstamped(fast) == _unstamped(store_records.prepare(episode.record(), **given))


def test_a_draft_prepared_is_its_sealed_record_prepared(episodes: list[Any]) -> None:
    """What a server's writer process does with the draft it reads back from JSON."""
    for episode in episodes:
        draft = loads(json.dumps(jsonable(episode.draft())))
        given = {"policy": "client", "split": "train"}
        fast = store_records.prepare_draft(draft, **given)
        assert all("hash" not in e for e in draft["events"])  # read, never changed
        sealed = store_records.prepare(seal(loads(json.dumps(jsonable(episode.draft())))), **given)
        assert _unstamped(fast) == _unstamped(sealed)


def test_an_episode_orjson_cannot_write_is_prepared_the_general_way(url: str) -> None:
    """A rejected call keeps the arguments the agent sent, an integer beyond 64 bits among them:
    the one-pass writer gives way to ``json`` and the record comes back exact.
    """
    episode = opsgym.make("release", "nominal", 1)
    episode.step("status", {"service": 2**70})
    assert episode.events[-1]["rejected"]
    fast = store_records.prepare_episode(episode, policy="p", split="test")
    assert _unstamped(fast) == _unstamped(store_records.prepare(episode.record(), policy="p",
                                                                 split="test"))  # fmt: skip
    with open_store(url) as store:
        assert store.episode_record(store.add_prepared([fast])[0]) == episode.record()


def test_prepared_episodes_come_back_as_their_records(url: str, episodes: list[Any]) -> None:
    prepared = [
        store_records.prepare_episode(e, policy="p", split="test", trial=i, evaluation="e")
        for i, e in enumerate(episodes)
    ]
    with open_store(url) as store:
        store.start_evaluation("e", {})
        ids = store.add_prepared(prepared[:3])
        ids += store.add_prepared(prepared[3:])
        assert [store.episode_record(i) for i in ids] == [e.record() for e in episodes]
        assert [r["trial"] for r in store.episodes(evaluation="e")] == list(range(len(episodes)))
        with pytest.raises(DuplicateEpisodeError, match="already holds"):
            store.add_prepared(prepared[-1:])
        with pytest.raises(DuplicateEpisodeError, match="Entries 0 and 1"):
            store.add_prepared([prepared[0], prepared[0]])
        assert count(store, EpisodeModel) == count(store, EventModel) == len(episodes)


# -- migrations ------------------------------------------------------------------------------


def test_migrations_create_every_table_and_are_idempotent(url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD
    for _ in range(2):  # the second open finds the schema at head and changes nothing
        with open_store(url) as store, store.engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == TABLES
            assert conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all() == [(HEAD,)]
            context = MigrationContext.configure(
                conn, opts={"version_table": VERSION_TABLE, "compare_type": True}
            )
            assert compare_metadata(context, Base.metadata) == []  # models == migrations


def test_events_move_to_one_row_per_episode_and_back_keeping_every_record(
    url: str, records: list[dict[str, Any]]
) -> None:
    from alembic import command

    with open_store(url) as store:
        ids = [store.add_episode(r, policy="oracle", split="test") for r in records]
        with store.engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0002")  # a row per step
        with store.engine.connect() as conn:
            per_step = conn.execute(text("SELECT episode_id, step FROM events")).all()
        assert len(per_step) == sum(len(r["events"]) for r in records)
    with open_store(url) as store:  # opening upgrades it to one row per episode again
        assert [store.episode_record(i) for i in ids] == records
        assert count(store, EventModel) == len(records)


def test_migration_scripts_ship_as_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["opsgym"]
    package = ROOT / "src" / "opsgym"
    shipped = [p for p in SCRIPTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "env.py" for p in shipped) and any(p.suffix == ".mako" for p in shipped)
    for path in shipped:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, g) for g in globs), f"{relative} is not shipped"


# -- atomicity -------------------------------------------------------------------------------


def test_failure_after_events_are_written_leaves_nothing(
    url: str, records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = store_module._insert_events

    def insert_then_crash(*args: Any) -> None:
        original(*args)
        raise RuntimeError("crash after the events went in")

    with open_store(url) as store:
        monkeypatch.setattr(store_module, "_insert_events", insert_then_crash)
        with pytest.raises(RuntimeError, match="crash after"):
            store.add_episode(records[0], policy="oracle", split="test")
        assert count(store, EpisodeModel) == count(store, EventModel) == 0


def test_an_event_the_database_cannot_take_leaves_nothing(
    url: str, records: list[dict[str, Any]]
) -> None:
    record = json.loads(json.dumps(records[0]))
    record["events"][-1]["report"]["unstorable"] = {1, 2}  # not JSON: fails mid-insert
    with open_store(url) as store:
        with pytest.raises(StoreError) as info:
            store.add_episode(record, policy="oracle", split="test")
        assert "\n" not in str(info.value) and "seed=1" in str(info.value)
        assert count(store, EpisodeModel) == count(store, EventModel) == 0
        store.add_episode(records[0], policy="oracle", split="test")  # the store still works
        assert count(store, EpisodeModel) == 1


def test_a_batch_of_episodes_is_written_whole_or_not_at_all(
    url: str, records: list[dict[str, Any]]
) -> None:
    entries = [{"record": r, "policy": "oracle", "split": "test", "trial": i, "evaluation": "b"}
               for i, r in enumerate(records)]  # fmt: skip
    broken = json.loads(json.dumps(records[-1]))
    broken["events"][0]["report"]["unstorable"] = {1}
    with open_store(url) as store:
        store.start_evaluation("b", {})
        with pytest.raises(StoreError, match=f"{len(records)} episodes"):
            store.add_episodes([*entries[:-1], {**entries[-1], "record": broken}])
        with pytest.raises(DuplicateEpisodeError, match="Entries 0 and 1"):
            store.add_episodes([entries[0], {**entries[0], "policy": "oracle"}])
        assert count(store, EpisodeModel) == count(store, EventModel) == 0
        ids = store.add_episodes(entries)
        assert [store.episode_record(i) for i in ids] == records
        with pytest.raises(DuplicateEpisodeError, match="already holds"):
            store.add_episodes([{**entries[0], "trial": 99}, entries[1]])
        assert count(store, EpisodeModel) == len(records)
        with pytest.raises(TypeError, match="unknown keys"):
            store.add_episodes([{**entries[0], "seed": 1}])


def test_records_the_store_could_not_keep_exactly_are_refused(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    def edited(change: Any) -> dict[str, Any]:
        record = json.loads(json.dumps(records[0]))
        change(record)
        return record

    bad = {
        "clock is an int": edited(lambda r: r["events"][0].update(clock=3)),
        "unknown key": edited(lambda r: r.update(extra=1)),
        "calls disagree": edited(lambda r: r["calls"][0].update(tool="deploy")),
        "steps repeat": edited(lambda r: r["events"][1].update(step=1)),
        "missing events": edited(lambda r: r.pop("events")),
    }
    with open_store(tmp_path / "s.sqlite") as store:
        for why, record in bad.items():
            with pytest.raises(RecordError):
                store.add_episode(record, policy="p", split="test")
            assert count(store, EpisodeModel) == 0, why
        with pytest.raises(ValueError, match="Unknown extras"):
            store.add_episode(records[0], policy="p", split="test", extras={"lie": 1})
        with pytest.raises(ValueError, match="not the family in the record's truth"):
            store.add_episode(records[0], policy="p", split="test", extras={"family": "x"})


def _write_concurrently(path: str, batch: list[dict[str, Any]], worker: int, barrier: Any) -> None:
    barrier.wait()  # both open a new file at once: migrations and the evaluation race too
    with open_store(path) as store:
        store.start_evaluation("race", {"k": 1})
        for trial, record in enumerate(batch):
            store.add_episode(record, policy=f"w{worker}", split="test", trial=trial,
                              evaluation="race")  # fmt: skip


def test_two_processes_writing_one_sqlite_file_lose_nothing(tmp_path: Path) -> None:
    batch = [opsgym.run("release", "nominal", seed).record() for seed in range(12)]
    path = str(tmp_path / "shared.sqlite")
    # fork: the children need nothing imported again (spawn costs a second per child).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    barrier = context.Barrier(2)
    workers = [
        context.Process(target=_write_concurrently, args=(path, batch, w, barrier))
        for w in range(2)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    with open_store(path) as store:
        rows = store.episodes(evaluation="race")
        assert len(rows) == 2 * len(batch) == store.evaluation("race")["episodes"]
        assert count(store, EventModel) == 2 * len(batch)  # one row of events per episode
        assert store.episode_record(rows[-1]["id"]) == batch[rows[-1]["trial"]]


# -- evaluations and resume ------------------------------------------------------------------


def test_resumed_evaluation_reports_what_it_holds(url: str, records: list[dict[str, Any]]) -> None:
    config = {"env": "release", "policies": ["oracle"], "episodes": 2}
    with open_store(url) as store:
        started = store.start_evaluation("nightly", config)
        assert (started["resumed"], started["status"], started["episodes"]) == (False, "running", 0)
        for r in records[:3]:
            store.add_episode(r, policy="oracle", split="test", evaluation=started)
        store.finish_evaluation("nightly", "interrupted")
    with open_store(url) as store:
        again = store.start_evaluation("nightly", config)
        assert (again["resumed"], again["status"], again["episodes"], again["id"]) == (
            True, "running", 3, started["id"])  # fmt: skip
        assert store.done_keys("nightly") == {
            ("oracle", r["scenario"], r["seed"], 0) for r in records[:3]
        }
        with pytest.raises(StoreError, match="different config.*episodes"):
            store.start_evaluation("nightly", {**config, "episodes": 5})
        done = store.finish_evaluation("nightly", "done", {"oracle": {"n": 3}})
        assert (done["status"], done["aggregates"]) == ("done", {"oracle": {"n": 3}})
        assert done["updated_at"] >= started["created_at"]
        store.start_evaluation("other", {})
        listed = [(e["name"], e["episodes"], e["status"]) for e in store.evaluations()]
        assert listed == [("nightly", 3, "done"), ("other", 0, "running")]
        assert store.evaluation("other")["config"] == {}
        with pytest.raises(ValueError, match="status must be one of"):
            store.finish_evaluation("other", "finished")
        with pytest.raises(NotFoundError):
            store.evaluation("nope")


def test_a_finished_evaluation_is_sealed_and_an_edited_one_cannot_resume(
    url: str, records: list[dict[str, Any]]
) -> None:
    from opsgym.store import seal

    config = {"env": "release", "policies": ["oracle"], "episodes": 3}
    with open_store(url) as store:
        store.start_evaluation("sealed", config)
        assert store.seal("sealed") is None  # nothing is sealed while it runs
        for r in records[:3]:
            store.add_episode(r, policy="oracle", split="test", evaluation="sealed")
        store.finish_evaluation("sealed", "done", {})
        found = store.seal("sealed")
        entries = [["oracle", r["scenario"], r["seed"], 0, r["hash"]] for r in records[:3]]
        assert found == {"root": seal.root("sealed", config, sorted(entries)),
                         "manifest": sorted(entries)}  # fmt: skip
        assert store.start_evaluation("sealed", config)["resumed"]  # untouched: resumes
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE episodes SET policy = 'naive' WHERE seed = :s"),
                         {"s": records[1]["seed"]})  # fmt: skip
        with pytest.raises(StoreError, match="no longer matches the seal.*relabelled"):
            store.start_evaluation("sealed", config)


def _runner_of(store: Any, name: str, runner: dict[str, Any]) -> None:
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE evaluations SET aggregates = :a WHERE name = :n"),
            {"a": json.dumps({"runner": runner}), "n": name},
        )


def test_a_running_evaluation_whose_process_died_reads_interrupted(
    url: str, records: list[dict[str, Any]]
) -> None:
    """An evaluation killed outright writes nothing: its row names its process, and a reader on
    the same host that finds the process gone marks it ``interrupted``."""
    started = (
        "import sys; from opsgym.store import open_store; s = open_store(sys.argv[1]); "
        "s.start_evaluation('gone', {}); s.start_evaluation('reused', {}); "
        "s.start_evaluation('elsewhere', {})"
    )
    subprocess.run([sys.executable, "-c", started, url], check=True, timeout=120)
    with open_store(url) as store:
        store.add_episode(records[0], policy="oracle", split="test", evaluation="gone")
        here = store.start_evaluation("here", {})["aggregates"]["runner"]
        assert (here["pid"], here["host"]) == (os.getpid(), socket.gethostname())
        _runner_of(store, "reused", {**here, "since": "-1"})  # this pid, another process's
        _runner_of(store, "elsewhere", {**here, "host": "another-host.invalid", "pid": 1})
        statuses = {e["name"]: e["status"] for e in store.evaluations()}
        assert statuses == {"gone": "interrupted", "reused": "interrupted",
                            "elsewhere": "running", "here": "running"}  # fmt: skip
        gone = store.evaluation("gone")
        assert gone["aggregates"]["stored"] == gone["episodes"] == 1
        assert "ended without finishing" in gone["aggregates"]["error"]
        assert "same name ('gone')" in gone["aggregates"]["resume"]
        resumed = store.start_evaluation("gone", {})  # resumes: its runner is this process
        assert (resumed["resumed"], resumed["status"]) == (True, "running")
        assert store.evaluation("gone")["status"] == "running"


def test_duplicate_episode_in_an_evaluation_is_refused(
    url: str, records: list[dict[str, Any]]
) -> None:
    with open_store(url) as store:
        store.start_evaluation("e", {})
        first = store.add_episode(records[0], policy="oracle", split="test", evaluation="e")
        with pytest.raises(DuplicateEpisodeError, match=f"as episode {first}"):
            store.add_episode(records[0], policy="oracle", split="test", evaluation="e")
        store.add_episode(records[0], policy="oracle", split="test", trial=1, evaluation="e")
        store.add_episode(records[0], policy="random", split="test", evaluation="e")
        store.add_episode(records[0], policy="oracle", split="test")  # outside any evaluation
        assert count(store, EpisodeModel) == 4
        assert count(store, EventModel) == 4
        with pytest.raises(NotFoundError):
            store.add_episode(records[0], policy="oracle", split="test", evaluation="missing")


def test_training_runs_are_started_updated_finished_and_resumed(url: str) -> None:
    with open_store(url) as store:
        run = store.start_training_run("ppo-1", kind="ppo", env="release", config={"lr": 3e-4})
        assert (run["status"], run["curves"], run["resumed"]) == ("running", None, False)
        store.update_training_run("ppo-1", curves={"return": [[0, -1.5]]}, checkpoint="c/1.zip")
        store.update_training_run("ppo-1", curves={"return": [[0, -1.5], [512, 2.0]]})
        again = store.start_training_run("ppo-1", kind="ppo", env="release", config={"lr": 3e-4})
        assert again["resumed"] and again["checkpoint"] == "c/1.zip"
        with pytest.raises(StoreError, match="different settings"):
            store.start_training_run("ppo-1", kind="sft", env="release", config={"lr": 3e-4})
        done = store.finish_training_run("ppo-1", "done", checkpoint=Path("c/2.zip"))
        assert (done["status"], done["checkpoint"]) == ("done", "c/2.zip")
        assert done["curves"] == {"return": [[0, -1.5], [512, 2.0]]}
        assert [r["name"] for r in store.training_runs()] == ["ppo-1"]
        assert store.training_run("ppo-1") == done
        with pytest.raises(NotFoundError):
            store.update_training_run("nope", checkpoint="x")


# -- opening ---------------------------------------------------------------------------------


def test_sqlite_runs_in_wal_mode_with_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000


def test_where_the_store_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    default = resolve(None)
    assert default.database == str(tmp_path / "data" / "opsgym" / "opsgym.sqlite")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env.sqlite"))
    assert resolve(None).database == str(tmp_path / "env.sqlite")
    assert resolve(tmp_path / "a" / "b.sqlite").drivername == "sqlite+pysqlite"
    assert (tmp_path / "a").is_dir()
    assert resolve("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert resolve("sqlite:///x.db").drivername == "sqlite"
    with open_store() as store:  # $OPSGYM_DB
        assert store.url.endswith("env.sqlite") and "env.sqlite" in repr(store)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("postgresql://someone:s3cret@127.0.0.1:1/x", "postgresql+psycopg://someone:***@127.0.0.1:1/x"),
        ("postgresql://someone:s3cret@127.0.0.1:notaport/x", "postgresql://someone:***@127.0.0.1"),
        ("nosuchdb://u:s3cret@h/x", "nosuchdb://u:***@h/x"),
        ("", "''"),
    ],
)  # fmt: skip
def test_bad_or_unreachable_url_is_a_one_line_error(url: str, named: str) -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as info:
        open_store(url)
    message = str(info.value)
    assert time.monotonic() - started < 6
    assert isinstance(info.value, OpsgymError)
    assert "\n" not in message and "s3cret" not in message
    assert named in message, message
    assert message.startswith("Cannot open store")


def test_no_test_reaches_the_users_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's guard (``tests/conftest.py``): the default store is a temporary file, and
    ``opsgym eval`` without ``--db`` writes there while the user's own store stays as it was."""
    from typer.testing import CliRunner

    from opsgym.cli import app
    from tests.conftest import USERS_STORES, _snapshot

    default = Path(resolve(None).database)
    assert default not in USERS_STORES and default.is_relative_to(tmp_path.parent)
    monkeypatch.delenv(ENV_VAR)  # the platformdirs default itself is redirected too
    assert Path(resolve(None).database).is_relative_to(tmp_path.parent)
    before = _snapshot(USERS_STORES)
    result = CliRunner().invoke(
        app, ["eval", "--env", "release", "--policy", "oracle", "--episodes", "1", "--name", "x"]
    )
    assert result.exit_code == 0, result.output
    with open_store() as store:
        assert [e["evaluation"] for e in store.episodes(evaluation="x")] == ["x"]
    assert _snapshot(USERS_STORES) == before
