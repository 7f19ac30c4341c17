"""``opsgym train ppo``, run as a user would: a subprocess with a tiny budget.

A tiny solvable case proves that learning still works, two runs with one seed save the same
parameters, bad input is a one-line error, and Ctrl-C leaves a usable policy and a store entry
marked ``interrupted``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

ENV = {**os.environ, "COLUMNS": "200", "CI": "1"}


HANG_S = 1800
"""A hang guard, not a speed target: a small PPO run takes one to two minutes on an idle 2-core
machine and several times that when the machine runs other jobs (400 s once failed so)."""


def opsgym(
    *args: str, timeout: float = HANG_S, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "opsgym.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV if env is None else env,
    )


def train(tmp_path: Path, name: str, *args: str) -> Path:
    out = opsgym(
        "train",
        "ppo",
        *("--out", str(tmp_path / "runs"), "--name", name, "--db", str(tmp_path / "x.sqlite")),
        *args,
    )
    assert out.returncode == 0, out.stderr
    return tmp_path / "runs" / name


def parameters(folder: Path) -> dict[str, np.ndarray]:
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(folder / "model.zip", device="cpu")
    return {k: v.numpy() for k, v in model.policy.state_dict().items()}


def one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode != 0
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


# The small solvable setting: the nominal family (v2 can ship on 30 of these 40 test seeds),
# 160k steps on 16 batched lanes (rollouts of 64 steps a lane, 256-step minibatches), starts swept
# back along the oracle's path over the first 30% of them. On these seeds (Release-v5) random
# earns -5.2, naive (ships blind) 5.1 with 10 unsafe, a policy that always rolls back 6.4, the
# oracle 10.3. Seeds 3, 1 and 2 at 160k: return 7.92, 7.90, 10.13; safe 90%, 90%, 100%; shipped
# wherever v2 could ship; about 90 s each with two at once on 2 cores. At 80k on v5 the lanes
# shipped everywhere (25% unsafe, 2.9) and two Gym envs rolled back everywhere (6.8): since v5 a
# canary on a failing v2 held too long is harm, and it takes longer to learn to read health first.
EASY = ("--env", "release", "--scenario", "nominal", "--n-envs", "2", "--seed", "3")
LANES = ("--vector", "--n-envs", "16", "--n-steps", "64")


@pytest.mark.slow(minutes=2)
def test_ppo_learns_to_ship_a_single_easy_family_with_the_curriculum(tmp_path):
    folder = train(
        tmp_path, "easy", *EASY, *LANES, "--total-timesteps", "160000", "--eval-episodes", "40"
    )
    result = json.loads((folder / "evaluation.json").read_text())
    assert result["mean_return"] > 7.0, result  # above always rolling back (6.4), naive (5.1)
    assert result["shipped_when_shippable"] >= 0.8, result
    assert result["safe_rate"] >= 0.85, result
    config = json.loads((folder / "config.json").read_text())
    assert config["curriculum"] and config["vector"] and config["scenario"] == "nominal"


@pytest.mark.slow
@pytest.mark.parametrize("path", ["--no-vector", "--vector"])
def test_two_runs_with_one_seed_save_identical_parameters(tmp_path, path):
    budget = ("--total-timesteps", "2048", "--eval-episodes", "0", path)
    first = parameters(train(tmp_path, "first", *EASY, *budget))
    second = parameters(train(tmp_path, "second", *EASY, *budget))
    assert first.keys() == second.keys()
    for key in first:
        assert np.array_equal(first[key], second[key]), key


@pytest.mark.slow
@pytest.mark.parametrize("env", ["release", "oversight", "fleet"])
def test_the_batched_lanes_train_the_parameters_the_gym_envs_train(tmp_path, env):
    """``--vector`` is the same run: the same episodes on every lane, the curriculum's draws and
    starts, masks and reward timing, so the same parameters bit for bit (``mixed``, curriculum
    on: the sweep starts every episode part-way, then fades)."""
    run = ("--env", env, "--n-envs", "4", "--n-steps", "128", "--batch-size", "128")
    budget = ("--total-timesteps", "4096", "--eval-episodes", "0", "--seed", "5")
    scalar = parameters(train(tmp_path, "scalar", *run, *budget, "--no-vector"))
    lanes = parameters(train(tmp_path, "lanes", *run, *budget, "--vector"))
    assert scalar.keys() == lanes.keys()
    for key in scalar:
        assert np.array_equal(scalar[key], lanes[key]), key


@pytest.mark.slow
def test_the_run_is_recorded_in_the_store_with_its_config_and_curves(tmp_path):
    from opsgym.store import open_store

    train(tmp_path, "stored", *EASY, "--total-timesteps", "2048", "--eval-episodes", "5")
    with open_store(str(tmp_path / "x.sqlite")) as store:
        run = store.training_run("stored")
    assert run["status"] == "done" and run["kind"] == "ppo" and run["env"] == "release"
    assert run["config"]["total_timesteps"] == 2048
    assert {"return", "start_prob", "test_safe"} <= set(run["curves"])
    assert run["checkpoint"].endswith("model.zip")
    logs = list((tmp_path / "runs" / "stored" / "tb").rglob("events.out.tfevents.*"))
    assert logs and all(f.stat().st_size > 0 for f in logs)  # TensorBoard's own event files
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(run["checkpoint"], device="cpu")
    assert run["config"]["anneal_lr"] is True  # the step size decays to 0 over the budget
    assert model.lr_schedule(1.0) == pytest.approx(run["config"]["learning_rate"])
    assert model.lr_schedule(0.5) == pytest.approx(run["config"]["learning_rate"] / 2)
    assert model.lr_schedule(0.0) == 0.0


@pytest.mark.slow
def test_a_trained_policy_is_evaluated_like_any_other(tmp_path):
    folder = train(tmp_path, "policy", *EASY, "--total-timesteps", "1024", "--eval-episodes", "0")
    out = opsgym(
        "eval",
        *("--env", "release", "--scenario", "nominal", "--episodes", "3"),
        *("--policy", f"ppo:{folder / 'model.zip'}", "--db", str(tmp_path / "eval.sqlite")),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ppo:" in out.stdout and "3 episodes played" in out.stdout


@pytest.mark.parametrize("env", ["release", "fleet", "oversight"])
def test_the_evaluation_is_the_harness_s_with_the_world_s_headline(env):
    """What PPO's evaluations report (``evaluation.json``, the ``dev_*``/``test_*`` curves) is the
    evaluation harness's summary, and the world's headline counted as the world declares it."""
    from opsgym.agents import get_policy, play
    from opsgym.core.registry import make, spec
    from opsgym.core.scenarios import seeds
    from opsgym.evaluation.harness import evaluate_in_process
    from opsgym.training.ppo import evaluate_policy

    policy = "naive" if env == "release" else "oracle"  # release's naive ships unsafely
    result = evaluate_policy(env, get_policy(env, policy), "mixed", 12, "dev")
    (summary,) = evaluate_in_process(
        env, get_policy(env, policy), ["mixed"], split="dev", episodes=12
    )
    assert result["summary"] == summary and result["episodes"] == 12
    assert result["mean_return"] == summary["return"]["value"]
    headline = spec(env).headline
    counted = scored = 0
    for seed in seeds("dev", 12):  # by hand: each episode's outcome and final truth
        episode = play(make(env, "mixed", seed), get_policy(env, policy))
        score = headline.score(episode.verdict.outcome, episode.events[-1]["truth"])
        counted += score is not None
        scored += bool(score)
    figure = summary["headline"]
    assert (figure["name"], figure["counted"], figure["scored"]) == (headline.name, counted, scored)
    assert result[headline.name] == scored / counted
    if env == "release":
        assert result["shipped_when_shippable"] < 1 and result["safe_rate"] < 1


def test_an_unknown_env_is_a_one_line_error(tmp_path):
    out = opsgym("train", "ppo", "--env", "relase", "--out", str(tmp_path))
    line = one_line_error(out)
    assert "relase" in line and "release" in line


def test_vector_on_a_world_without_a_batched_twin_is_a_one_line_error(tmp_path):
    # the plugin world (tests/conftest.py) has none: the subprocess finds it as this one does
    site = next(p for p in sys.path if Path(p, "opsgym_flag_world-0.1.dist-info").is_dir())
    root = str(Path(__file__).resolve().parents[1])
    paths = os.pathsep.join([site, root, *filter(None, [ENV.get("PYTHONPATH")])])
    out = opsgym(
        "train",
        "ppo",
        "--env",
        "flag",
        "--vector",
        "--out",
        str(tmp_path),
        env={**ENV, "PYTHONPATH": paths},
    )
    line = one_line_error(out)
    assert "flag" in line and all(w in line for w in ("release", "oversight", "fleet"))
    assert not (tmp_path / "runs").exists() and list(tmp_path.iterdir()) == []


def test_an_output_folder_that_exists_is_a_one_line_error(tmp_path):
    (tmp_path / "runs" / "taken").mkdir(parents=True)
    out = opsgym("train", "ppo", "--out", str(tmp_path / "runs"), "--name", "taken")
    assert "exists" in one_line_error(out)


@pytest.mark.parametrize("what", ["missing", "not a zip"])
def test_a_ppo_path_that_cannot_be_loaded_is_a_one_line_error_of_eval(tmp_path, what):
    path = tmp_path / "model.zip"
    if what == "not a zip":
        path.write_text("not a model")
    out = opsgym(
        "eval",
        *("--env", "release", "--episodes", "2", "--policy", f"ppo:{path}"),
        *("--db", str(tmp_path / "x.sqlite")),
    )
    line = one_line_error(out)
    assert str(path) in line


@pytest.mark.slow
def test_ctrl_c_leaves_a_usable_model_and_a_run_marked_interrupted(tmp_path):
    from opsgym.agents.ppo import PPOPolicy
    from opsgym.store import open_store
    from opsgym.training.ppo import evaluate_policy

    db = str(tmp_path / "x.sqlite")
    process = subprocess.Popen(
        [sys.executable, "-m", "opsgym.cli", "train", "ppo", *EASY]
        + ["--total-timesteps", "10000000", "--out", str(tmp_path), "--name", "cut", "--db", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + HANG_S / 4
        while time.monotonic() < deadline and not _has_curves(db, "cut"):
            assert process.poll() is None, process.communicate()
            time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=HANG_S / 4)
    finally:
        process.kill()
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    model = tmp_path / "cut" / "model.zip"
    assert zipfile.is_zipfile(model)
    result = evaluate_policy("release", PPOPolicy("release", model), "nominal", 2)
    assert result["episodes"] == 2
    with open_store(db) as store:
        run = store.training_run("cut")
    assert run["status"] == "interrupted" and run["checkpoint"] == str(model)


def _has_curves(db: str, name: str) -> bool:
    """Whether run ``name`` has written its first curves (training is under way)."""
    from opsgym.store import open_store

    if not Path(db).exists():
        return False
    try:
        with open_store(db) as store:
            return bool(store.training_run(name)["curves"])
    except Exception:  # noqa: BLE001 -- not created yet
        return False
