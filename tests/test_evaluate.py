"""`opsgym eval` and `opsgym.evaluate`: stored, resumable, verifiable, the same however run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import opsgym
from opsgym.cli import app
from opsgym.evaluation import evaluate
from opsgym.evaluation.verify import (
    EXIT_EVENT,
    EXIT_HEADER,
    EXIT_MATCH,
    EXIT_SEAL,
    EXIT_VERDICT,
)
from opsgym.store import open_store

runner = CliRunner()


def _small(db, **kw):
    args = dict(episodes=6, db=db, name="small")
    args.update(kw)
    return evaluate("release", ["oracle", "random"], **args)


def test_an_evaluation_stores_every_episode_and_summarises_each_outcome(tmp_path):
    db = tmp_path / "e.sqlite"
    result = _small(db, trials=2)
    assert result.played == result.stored == 6 + 12  # oracle is deterministic: one trial
    by_policy = {e["policy"]: e for e in result.summary}
    oracle, rand = by_policy["oracle"], by_policy["random"]
    assert oracle["deterministic"] and not rand["deterministic"]
    assert oracle["pass_hat_k"]["2"] == oracle["pass_hat_k"]["1"]
    for entry in result.summary:
        rates = entry["outcomes"]
        assert set(opsgym.specs()["release"].outcome_rewards) <= set(rates)
        assert sum(r["value"] for r in rates.values()) == pytest.approx(1.0)
        for r in rates.values():
            assert r["low"] <= r["value"] <= r["high"]
    with open_store(db) as store:
        rows = store.episodes(evaluation="small", limit=None)
        assert {r["family"] for r in rows} - {
            s.name for s in opsgym.specs()["release"].families()
        } == set()
        assert store.evaluation("small")["status"] == "done"


def test_a_rerun_with_the_same_name_plays_nothing_and_gives_the_same_summary(tmp_path):
    db = tmp_path / "e.sqlite"
    first = _small(db)
    again = _small(db)
    assert again.played == 0 and again.stored == first.stored
    assert again.summary == first.summary


def test_workers_and_one_process_give_identical_results(tmp_path):
    # Two stores, so two evaluations: the public seeds make them the same episodes.
    one = _small(tmp_path / "a.sqlite", seeds="public")
    two = _small(tmp_path / "b.sqlite", workers=2, seeds="public")
    assert json.dumps(one.summary, sort_keys=True) == json.dumps(two.summary, sort_keys=True)


@pytest.mark.slow
def test_ray_tasks_give_identical_results(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import ray

    one = _small(tmp_path / "a.sqlite", seeds="public")
    try:
        on_ray = _small(tmp_path / "b.sqlite", ray="local", seeds="public")
    finally:
        ray.shutdown()
    assert json.dumps(one.summary, sort_keys=True) == json.dumps(on_ray.summary, sort_keys=True)


def test_outputs_are_written(tmp_path):
    out = tmp_path / "out"
    _small(tmp_path / "e.sqlite", out=out)
    results = json.loads((out / "results.json").read_text())
    assert results["name"] == "small" and len(results["summary"]) == 2
    lines = (out / "episodes.csv").read_text().splitlines()
    assert len(lines) == 1 + 12 and lines[0].startswith("policy,scenario,family,seed")
    report = (out / "report.md").read_text()
    assert "pass^1" in report and "Wilson" in report and "τ-bench" in report
    for chart in ("outcomes.png", "components.png"):
        if (out / chart).exists():
            assert (out / chart).read_bytes()[:4] == b"\x89PNG"


# -- verify ------------------------------------------------------------------------------


def _verify(db) -> tuple[int, str]:
    result = runner.invoke(app, ["eval", "--verify", "small", "--db", str(db)])
    return result.exit_code, result.output


def test_verify_matches_every_stored_episode(tmp_path):
    db = tmp_path / "e.sqlite"
    _small(db)
    code, out = _verify(db)
    assert code == EXIT_MATCH and "12/12 match" in out


def _tamper(db: Path, sql: str) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute(sql).rowcount >= 1


@pytest.mark.parametrize(
    "sql,code,field",
    [
        (
            "UPDATE events SET steps = json_set(steps, '$[0].report', json('{\"forged\": true}')) "
            "WHERE episode_id = (SELECT MIN(id) FROM episodes)",
            EXIT_EVENT,
            "report",
        ),
        (
            "UPDATE episodes SET header = json_set(header, '$.max_steps', 5) "
            "WHERE id = (SELECT MIN(id) FROM episodes)",
            EXIT_HEADER,
            "header",
        ),
        (  # a header edit that also moves the episode to another key of the evaluation
            "UPDATE episodes SET seed = seed + 100000 WHERE id = (SELECT MIN(id) FROM episodes)",
            EXIT_SEAL,
            "seed",
        ),
        (
            "UPDATE episodes SET outcome = 'deployed_verified' WHERE outcome != "
            "'deployed_verified' AND id = (SELECT MIN(id) FROM episodes "
            "WHERE outcome != 'deployed_verified')",
            EXIT_VERDICT,
            "verdict",
        ),
        (
            'UPDATE episodes SET "return" = "return" + 1 WHERE id = (SELECT MIN(id) FROM episodes)',
            EXIT_VERDICT,
            "return",
        ),
    ],
)
def test_verify_finds_and_names_each_kind_of_tampering(tmp_path, sql, code, field):
    db = tmp_path / "e.sqlite"
    _small(db)
    _tamper(db, sql)
    got, out = _verify(db)
    assert got == code, out
    assert "11/12 match" in out and repr(field) in out


# -- a crash mid-evaluation ---------------------------------------------------------------


def test_a_killed_evaluation_leaves_no_half_episode_and_resumes_without_duplicates(tmp_path):
    db = tmp_path / "e.sqlite"
    cmd = [
        sys.executable,
        "-m",
        "opsgym.cli",
        "eval",
        "--env",
        "fleet",
        "--policy",
        "oracle",
        "--policy",
        "random",
        "--episodes",
        "40",
        "--db",
        str(db),
        "--name",
        "killed",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    stored = 0
    while time.monotonic() < deadline and stored < 5:
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as conn:
                    stored = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
            except sqlite3.OperationalError:
                continue
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert 5 <= stored
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT e.id, e.steps, json_array_length(v.steps), json_array_length(v.truth_hidden) "
            "FROM episodes e LEFT JOIN events v ON v.episode_id = e.id"
        ).fetchall()
        assert rows and all(steps == n == truths for _, steps, n, truths in rows)
        orphans = conn.execute(
            "SELECT COUNT(*) FROM events WHERE episode_id NOT IN (SELECT id FROM episodes)"
        ).fetchone()[0]
        assert orphans == 0
        before = len(rows)
    assert before < 80
    with open_store(db) as store:  # no word from the killed process: its death is seen
        killed = store.evaluation("killed")
    assert killed["status"] == "interrupted"
    assert f"({proc.pid} on " in killed["aggregates"]["error"]
    assert killed["aggregates"]["stored"] == before and "'killed'" in killed["aggregates"]["resume"]
    result = evaluate("fleet", ["oracle", "random"], episodes=40, db=db, name="killed")
    assert result.played == 80 - before and result.stored == 80
    with open_store(db) as store:
        assert store.evaluation("killed")["status"] == "done"
    with sqlite3.connect(db) as conn:
        keys = conn.execute("SELECT policy, seed, trial FROM episodes").fetchall()
    assert len(keys) == len(set(keys)) == 80


def _stopping(after: int, exc: BaseException):
    """A progress hook that raises ``exc`` once ``after`` episodes have come through."""

    def progress(stream, total):
        for i, item in enumerate(stream):
            if i == after:
                raise exc
            yield item

    return progress


@pytest.mark.parametrize(
    ("exc", "status"),
    [(RuntimeError("the endpoint went away"), "failed"), (KeyboardInterrupt(), "interrupted")],
)
def test_an_evaluation_that_raises_or_is_stopped_is_marked_so_and_resumes(tmp_path, exc, status):
    """Regression: an evaluation that failed stayed ``running`` in the store for ever."""
    db = tmp_path / "e.sqlite"
    with pytest.raises(type(exc)):
        _small(db, progress=_stopping(5, exc), seeds="public")
    with open_store(db) as store:
        stopped = store.evaluation("small")
    assert stopped["status"] == status
    assert stopped["aggregates"]["error"] == f"{type(exc).__name__}: {exc}".rstrip(": ")
    assert stopped["aggregates"]["stored"] == stopped["episodes"] == 5  # what it played is kept
    assert "same name ('small')" in stopped["aggregates"]["resume"]
    listed = runner.invoke(app, ["eval", "--list", "--db", str(db)])
    assert status in listed.output
    resumed = _small(db, seeds="public")
    assert (resumed.played, resumed.stored) == (12 - 5, 12)
    with open_store(db) as store:
        assert store.evaluation("small")["status"] == "done"
    assert resumed.summary == _small(tmp_path / "whole.sqlite", seeds="public").summary


def test_an_evaluation_failing_before_it_plays_is_marked_failed(tmp_path, monkeypatch):
    db = tmp_path / "e.sqlite"

    def broken(*args, **kwargs):
        raise OSError("no worker could start")

    monkeypatch.setattr("opsgym.evaluation.harness.execute", broken)
    with pytest.raises(OSError):
        _small(db)
    with open_store(db) as store:
        assert store.evaluation("small")["status"] == "failed"


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--env", "relase", "--policy", "oracle"], "Unknown environment 'relase'"),
        (["--env", "release", "--policy", "orcle"], "'oracle'"),
        (
            ["--env", "release", "--policy", "oracle", "--scenario", "nope"],
            "scenario of 'release' 'nope'",
        ),
        (["--env", "release", "--policy", "oracle", "--split", "val"], "Unknown split 'val'"),
        (["--env", "release", "--policy", "oracle", "--episodes", "0"], "episodes must be"),
        (
            ["--env", "release", "--policy", "oracle", "--db", "postgresql://127.0.0.1:1/x"],
            "127.0.0.1:1",
        ),
        (["--env", "release"], "No policy"),
    ],
)
def test_bad_input_is_a_one_line_error_naming_what_was_wrong(args, needle, tmp_path):
    if "--db" not in args:
        args = [*args, "--db", str(tmp_path / "e.sqlite")]
    result = runner.invoke(app, ["eval", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_dense_reward_timing_and_overrides_are_refused():
    with pytest.raises(opsgym.OpsgymError, match="reward_timing"):
        evaluate(
            "release", ["oracle"], config={"reward_timing": "dense"}, episodes=1, db=":memory:"
        )


def test_list_shows_stored_evaluations(tmp_path):
    db = tmp_path / "e.sqlite"
    _small(db)
    result = runner.invoke(app, ["eval", "--list", "--db", str(db)])
    assert result.exit_code == 0 and "small" in result.output and "done" in result.output


# -- a golden evaluation -----------------------------------------------------------------

GOLDEN = Path(__file__).parent / "golden" / "eval_release_small.json"


def _golden_summary(db) -> list[dict]:
    result = evaluate(
        "release",
        ["oracle", "naive", "random"],
        episodes=12,
        trials=2,
        db=db,
        name="golden",
        seeds="public",
    )
    return json.loads(json.dumps(result.summary))


def _close(a, b, path="summary"):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_a_small_fixed_evaluation_matches_its_golden_file(tmp_path):
    """Regenerate after an intended change of the release world with
    ``OPSGYM_UPDATE_GOLDEN=1 pytest tests/test_evaluate.py -k golden`` and review the diff."""
    summary = _golden_summary(tmp_path / "g.sqlite")
    if os.environ.get("OPSGYM_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    _close(summary, json.loads(GOLDEN.read_text()))


def test_eval_shows_a_slow_policys_latest_turn_and_outside_a_terminal_says_so_on_stderr(
    monkeypatch, capsys
):
    import io
    import logging

    from rich.console import Console
    from rich.progress import Progress

    from opsgym.evaluation import cli as eval_cli

    monkeypatch.setattr(eval_cli, "QUIET_S", 0.0)
    agents = logging.getLogger("opsgym.agents")
    handlers, level = list(agents.handlers), agents.level
    bar = Progress(console=Console(file=io.StringIO()))
    with eval_cli._Heartbeat(bar, "release") as beat:
        beat.live = False  # as under a pipe or in CI
        stream = beat.progress(iter(["a", "b"]), 2)
        next(stream)
        logging.getLogger("opsgym.agents.hf").info("hf:m: release seed 9, turn 3")
        assert list(stream) == ["b"]
    err = capsys.readouterr().err
    assert "release: 1/2 episodes; hf:m: release seed 9, turn 3" in err
    assert "release: 2/2 episodes" in err
    assert (agents.handlers, agents.level) == (handlers, level)
    with eval_cli._Heartbeat(bar, "release") as beat:  # in a terminal: beside the bar
        beat.live = True

        def played():
            logging.getLogger("opsgym.agents.hf").info("turn 1 [of 60]")  # no Rich markup
            yield "a"

        assert list(beat.progress(played(), 1)) == ["a"]
        assert bar.tasks[-1].fields["status"] == "turn 1 [of 60]"


def test_charts_draw_each_outcome_by_its_meaning_never_unsafe_in_green(tmp_path):
    """Regression (issue 21): outcomes.png took matplotlib's colour cycle, which drew the
    release's `unsafe` in green. Harmful outcomes are red and hatched, unfinished ones grey and
    dotted, safe ones blue or green and plain, and each legend label says which."""
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_rgb

    from opsgym.evaluation.report import outcome_styles

    styles = outcome_styles(
        "release", ["deployed_verified", "unsafe", "incomplete", "rolled_back_verified"]
    )
    red, green, blue = to_rgb(styles["unsafe"][0])
    assert red > 0.6 and green < 0.3 and blue < 0.3 and styles["unsafe"][1] == "xx"
    assert styles["unsafe"][2] == "unsafe (harm)"
    grey = to_rgb(styles["incomplete"][0])
    assert max(grey) - min(grey) < 0.2 and styles["incomplete"][1] == ".."
    for safe in ("deployed_verified", "rolled_back_verified"):
        r, g, b = to_rgb(styles[safe][0])
        assert r < 0.4 and max(g, b) > 0.4 and styles[safe][1] == ""
    assert styles["deployed_verified"][0] != styles["rolled_back_verified"][0]
    for env, harmful in (("fleet", "destroyed"), ("oversight", "unsafe_ship")):
        assert outcome_styles(env, [harmful])[harmful][2].endswith("(harm)")
    result = evaluate(
        "release", ["naive"], ["mixed"], episodes=6, db=tmp_path / "s.sqlite", out=tmp_path / "o"
    )
    assert (tmp_path / "o" / "outcomes.png").stat().st_size > 1000 and result.stored == 6
