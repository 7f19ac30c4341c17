"""Sealed evaluation seeds (issue 20, item 2): an evaluation draws its seeds when it is created,
from a space too large to tabulate, keeps them, resumes and verifies on them; the public
sequence stays on request and every table says which it was.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opsgym.cli import app
from opsgym.core.request import SEALED_INDEX_SPACE, draw_seed, draw_seeds
from opsgym.core.scenarios import seeds as public_seeds
from opsgym.core.scenarios import split_of
from opsgym.evaluation import evaluate
from opsgym.evaluation.runner import EvalConfig, EvaluationError, check, with_seeds
from opsgym.evaluation.verify import verify
from opsgym.server.models import EvaluationStart
from opsgym.store import open_store

runner = CliRunner()


def test_drawn_seeds_are_distinct_in_their_split_and_safe_for_javascript():
    drawn = draw_seeds("dev", 500)
    assert len(set(drawn)) == 500 and {split_of(s) for s in drawn} == {"dev"}
    assert max(drawn) < 2**53 and 10 * SEALED_INDEX_SPACE <= 2**53
    assert min(drawn) > 10 * 10_000  # none of the public table's first 10,000 seeds (p ~ 2e-8)
    assert draw_seed("test") > 10 * 2**27  # a server's drawn seed, from the sealed space too


def test_an_evaluation_draws_its_seeds_keeps_them_and_resumes_on_them(tmp_path):
    db = tmp_path / "e.sqlite"
    first = evaluate("release", ["oracle", "random"], episodes=4, db=db, name="sealed")
    drawn = first.config.drawn
    assert first.config.seeds == "sealed" and len(set(drawn)) == 4
    assert {split_of(s) for s in drawn} == {"test"}
    assert not set(drawn) & set(public_seeds("test", 4))
    with open_store(db) as store:
        stored = store.evaluation("sealed")["config"]
        rows = store.episodes(evaluation="sealed", limit=None)
    assert stored["seeds"] == "sealed" and stored["drawn"] == list(drawn)
    assert {r["seed"] for r in rows} == set(drawn) and len(rows) == 8
    again = evaluate("release", ["oracle", "random"], episodes=4, db=db, name="sealed")
    assert again.played == 0 and again.config.drawn == drawn and again.summary == first.summary
    assert verify("sealed", db).exit_code == 0
    other = evaluate("release", ["oracle"], episodes=4, db=db, name="another")
    assert not set(other.config.drawn) & set(drawn)  # a new evaluation draws afresh


def test_a_stopped_sealed_evaluation_resumes_on_the_seeds_it_drew(tmp_path):
    db = tmp_path / "e.sqlite"

    def stop_after_two(stream, total):
        for i, item in enumerate(stream):
            if i == 2:
                raise RuntimeError("stopped")
            yield item

    with pytest.raises(RuntimeError):
        evaluate("fleet", ["oracle"], episodes=5, db=db, name="cut", progress=stop_after_two)
    with open_store(db) as store:
        drawn = store.evaluation("cut")["config"]["drawn"]
    resumed = evaluate("fleet", ["oracle"], episodes=5, db=db, name="cut")
    assert list(resumed.config.drawn) == drawn and resumed.played == 3 and resumed.stored == 5


def test_public_seeds_are_the_split_s_first_and_named_so(tmp_path):
    result = evaluate("release", ["naive"], episodes=3, db=tmp_path / "e.sqlite", seeds="public")
    assert result.name.endswith("__public") and result.config.drawn == ()
    with open_store(tmp_path / "e.sqlite") as store:
        rows = store.episodes(evaluation=result.name, limit=None)
    assert sorted(r["seed"] for r in rows) == public_seeds("test", 3)


@pytest.mark.parametrize(
    ("args", "label"),
    [([], "sealed seeds"), (["--seeds", "public"], "PUBLIC seeds")],
)
def test_every_table_says_which_seeds_it_was(tmp_path, args, label):
    out = tmp_path / "out"
    cmd = ["eval", "--env", "release", "--policy", "naive", "--episodes", "2"]
    cmd += ["--db", str(tmp_path / "e.sqlite"), "--out", str(out)]
    result = runner.invoke(app, [*cmd, *args])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert flat.count(label) >= 2  # the outcomes table and the costs table
    assert label in (out / "report.md").read_text()
    config = json.loads((out / "results.json").read_text())["config"]
    assert config["seeds"] == ("public" if args else "sealed")


def test_bad_seed_settings_are_one_line_errors():
    with pytest.raises(Exception, match="seed mode"):
        check(EvalConfig("release", ("oracle",), seeds="secret"))
    with pytest.raises(EvaluationError, match="not in the 'test' split"):
        check(EvalConfig("release", ("oracle",), episodes=1, drawn=(8,)))
    with pytest.raises(EvaluationError, match="distinct"):
        check(EvalConfig("release", ("oracle",), episodes=2, drawn=(9, 9)))
    cfg = with_seeds(EvalConfig("release", ("oracle",), episodes=3))
    assert len(cfg.drawn) == 3 and check(cfg) is cfg


def test_the_server_s_evaluations_are_sealed_unless_asked():
    body = EvaluationStart(env="release", policies=["oracle"])
    assert body.seeds == "sealed"
    assert EvaluationStart(env="release", policies=["oracle"], seeds="public").seeds == "public"


def test_policies_evaluated_apart_share_seeds_only_when_asked(tmp_path):
    db = tmp_path / "e.sqlite"
    first = evaluate("release", ["oracle"], episodes=4, db=db, name="first")
    later = evaluate("release", ["naive"], episodes=3, db=db, name="later", seeds_from="first")
    assert later.config.drawn == first.config.drawn[:3]
    evaluate("release", ["naive"], episodes=2, db=db, name="open", seeds="public")
    for source, says in [("open", "no sealed seeds"), ("first", "drew 4 seeds; 5")]:
        with pytest.raises(EvaluationError, match=says):
            evaluate("release", ["naive"], episodes=5, db=db, name="x" + source, seeds_from=source)
