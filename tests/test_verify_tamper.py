"""`opsgym eval --verify` against a hostile editor of the store: every figure a report reads is
recomputed or sealed, so each edit below exits non-zero and names what changed (issue 20).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from opsgym.audit.tamper import TAMPERS, apply, named
from opsgym.cli import app
from opsgym.core.replay import replay
from opsgym.evaluation import evaluate
from opsgym.evaluation.verify import (
    EXIT_AGGREGATES,
    EXIT_EVENT,
    EXIT_MATCH,
    EXIT_SEAL,
    EXIT_VERDICT,
    verify,
)
from opsgym.store import StoreError, open_store

runner = CliRunner()
NAME = "tamper"
SEEDS = 10
TOTAL = 2 * SEEDS


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> Path:
    """A finished evaluation: oracle and random on 10 mixed test seeds of oversight."""
    folder = tmp_path_factory.mktemp("honest")
    evaluate(
        "oversight",
        ["oracle", "random"],
        episodes=SEEDS,
        db=folder / "e.sqlite",
        name=NAME,
        out=folder / "out",
    )
    return folder


@pytest.fixture
def db(honest, tmp_path) -> Path:
    """A copy of the honest store, to tamper with."""
    for path in honest.glob("e.sqlite*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / "e.sqlite"


def _verify(db: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["eval", "--verify", NAME, "--db", str(db)])
    return result.exit_code, result.output


def _sql(db: Path, *statements: str) -> None:
    with sqlite3.connect(db) as conn:
        for sql in statements:
            assert conn.execute(sql).rowcount >= 1, sql


def _published_root(honest: Path) -> str:
    return json.loads((honest / "out" / "results.json").read_text())["root"]


FIRST = "(SELECT MIN(id) FROM episodes)"


def test_an_untampered_evaluation_verifies_and_prints_its_published_root(honest, db):
    code, out = _verify(db)
    root = _published_root(honest)
    assert code == EXIT_MATCH, out
    assert f"{TOTAL}/{TOTAL} match" in out and f"root {root}" in out
    assert len(root) == 64
    assert f"root `{root}`" in (honest / "out" / "report.md").read_text()
    checked = runner.invoke(app, ["eval", "--verify", NAME, "--db", str(db), "--root", root])
    assert checked.exit_code == EXIT_MATCH, checked.output


EXIT_OF = {
    "verdict": EXIT_VERDICT,
    "seal": EXIT_SEAL,
    "aggregates": EXIT_AGGREGATES,
    "event": EXIT_EVENT,
}


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda t: t.name)
def test_each_tamper_exits_non_zero_naming_what_changed(db, tamper):
    """The audit's list (:mod:`opsgym.audit.tamper`): a figure beside a record, labels, trials,
    a deleted or an extra episode, aggregates, calls after the end, a call's tokens, the root,
    the sealed seeds. Each exits with its kind's code and names what it edited."""
    apply(db, tamper)
    code, out = _verify(db)
    assert code == EXIT_OF[tamper.kind], out
    assert tamper.names in out
    with open_store(db) as store:
        assert named(verify(NAME, db).problems, tamper)
        assert store.evaluation(NAME)["config"]["seeds"] == "sealed"


def test_swapped_policy_labels_are_named_as_relabelled(db):
    _sql(
        db,
        "UPDATE episodes SET policy = 'swap' WHERE policy = 'oracle'",
        "UPDATE episodes SET policy = 'oracle' WHERE policy = 'random'",
        "UPDATE episodes SET policy = 'random' WHERE policy = 'swap'",
    )
    code, out = _verify(db)
    assert code == EXIT_SEAL, out
    assert "relabelled: sealed as (oracle, mixed, seed" in out
    assert "stored as (random, mixed, seed" in out and "field 'policy'" in out


def _record(db: Path) -> dict:
    with open_store(db) as store:
        return store.episode_record(store.episodes(evaluation=NAME, limit=1)[0]["id"])


def test_a_record_with_calls_after_its_end_does_not_replay_as_a_match(db):
    record = _record(db)
    assert replay(record).match
    record["calls"].append(dict(record["calls"][0]))
    found = replay(record)
    assert not found.match
    assert found.first_difference["field"] == "calls"
    assert found.first_difference["step"] == len(record["events"]) + 1


def test_a_record_whose_call_tokens_were_edited_does_not_replay_as_a_match(db):
    record = _record(db)
    record["calls"][0]["tokens"] += 900
    found = replay(record)
    assert not found.match
    assert found.first_difference == {
        "step": 1,
        "field": "calls",
        "recorded": record["calls"][0],
        "replayed": {**record["calls"][0], "tokens": record["events"][0]["tokens"]},
    }


def test_a_rewritten_seal_shows_a_root_other_than_the_published_one(honest, db):
    _sql(db, f"UPDATE episodes SET policy = 'oracle2' WHERE id = {FIRST}")
    with open_store(db) as store:  # the editor seals the edited set afresh
        store.finish_evaluation(NAME, "done", store.evaluation(NAME)["aggregates"])
    code, out = _verify(db)
    published = _published_root(honest)
    assert f"root {published}" not in out and "root " in out
    assert code == EXIT_AGGREGATES, out  # the summary names a policy no episode has any more
    checked = runner.invoke(app, ["eval", "--verify", NAME, "--db", str(db), "--root", published])
    assert checked.exit_code == EXIT_SEAL, checked.output
    assert "do not give the root published" in checked.output


def test_swap_delete_and_resume_is_refused_and_verify_names_each_edit(db):
    """The attack of issue 20: random relabelled oracle, its unsafe episodes deleted, the
    evaluation resumed to fill the gap. The resume refuses; verify names both edits.
    """
    _sql(
        db,
        "UPDATE episodes SET policy = 'swap' WHERE policy = 'oracle'",
        "UPDATE episodes SET policy = 'oracle' WHERE policy = 'random'",
        "UPDATE episodes SET policy = 'random' WHERE policy = 'swap'",
        "DELETE FROM events WHERE episode_id IN (SELECT id FROM episodes "
        "WHERE policy = 'oracle' AND outcome != 'safe_ship')",
        "DELETE FROM episodes WHERE policy = 'oracle' AND outcome != 'safe_ship'",
    )
    with pytest.raises(StoreError, match="no longer matches the seal"):
        evaluate("oversight", ["oracle", "random"], episodes=SEEDS, db=db, name=NAME)
    code, out = _verify(db)
    assert code == EXIT_SEAL, out
    assert "relabelled" in out and "missing episode (random" in out


def test_an_unsealed_evaluation_fails_until_a_resume_seals_it(db):
    """An evaluation finished before seals were kept (or with its seal removed) cannot have its
    set of episodes checked; resuming it, which plays nothing, seals what it holds.
    """
    _sql(db, "UPDATE evaluations SET root = NULL, manifest = NULL")
    code, out = _verify(db)
    assert code == EXIT_SEAL and "never sealed" in out, out
    again = evaluate("oversight", ["oracle", "random"], episodes=SEEDS, db=db, name=NAME)
    assert again.played == 0 and again.root is not None
    code, out = _verify(db)
    assert code == EXIT_MATCH and f"root {again.root}" in out, out
