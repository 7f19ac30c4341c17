"""The command line, run as a user would: a real subprocess of the installed ``opsgym``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).with_name("opsgym")


KEPT = ("PYTHONPATH", "OPSGYM_DB", "XDG_DATA_HOME")
"""Passed on: the source under test (a worktree's), and the suite's temporary store."""


def opsgym(*args: str) -> subprocess.CompletedProcess:
    kept = {k: os.environ[k] for k in KEPT if k in os.environ}
    return subprocess.run(
        [str(BIN), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", **kept},
    )


def test_list_names_every_env_and_scenario():
    out = opsgym("list")
    assert out.returncode == 0
    for name in ("release", "deploy_timeout", "stale_health", "partial_migration_ack"):
        assert name in out.stdout


def test_run_prints_the_timeline_the_truth_and_the_verdict_then_replays(tmp_path):
    record = tmp_path / "ep.json"
    out = opsgym(
        "run",
        "--env",
        "release",
        "--scenario",
        "deploy_timeout",
        "--seed",
        "1",
        "--policy",
        "oracle",
        "--out",
        str(record),
    )
    assert out.returncode == 0, out.stderr
    for text in (
        "what the tool reported",
        "timeout",
        "the truth",
        "ambiguity_resolved",
        "outcome deployed_verified",
    ):
        assert text in out.stdout
    data = json.loads(record.read_text())
    assert data["env"] == "release" and data["verdict"]["accepted"]
    replayed = opsgym("replay", str(record))
    assert replayed.returncode == 0 and "match" in replayed.stdout


def test_replay_of_a_tampered_record_shows_the_first_difference(tmp_path):
    record = tmp_path / "ep.json"
    assert opsgym("run", "--seed", "2", "--quiet", "--out", str(record)).returncode == 0
    data = json.loads(record.read_text())
    data["events"][1]["report"]["status"] = "forged"
    record.write_text(json.dumps(data))
    out = opsgym("replay", str(record))
    assert out.returncode == 1
    assert "differs at step 2, field 'report'" in out.stdout and "forged" in out.stdout


def test_unknown_names_exit_2_with_a_suggestion_in_one_line_on_stderr(tmp_path):
    out = opsgym("run", "--env", "relase")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: ") and "Did you mean 'release'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = opsgym("replay", str(tmp_path / "missing.json"))
    assert out.returncode == 2 and "cannot replay" in out.stderr


def test_python_dash_m_opsgym_is_the_opsgym_command():
    done = subprocess.run(
        [sys.executable, "-m", "opsgym", "list"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "release" in done.stdout and "flapping_health" in done.stdout


def test_every_command_fails_through_one_helper():
    """One way to fail (``opsgym.command_errors``): no command writes its own error line."""
    import re

    src = Path(__file__).resolve().parents[1] / "src" / "opsgym"
    pattern = re.compile(r"""echo\(f?["']error:|print\(f?["']\[[^]]*\]error:|Exit\((2|130)\)""")
    for path in [src / "cli.py", src / "evaluation" / "cli.py", *src.glob("training/cli*.py")]:
        assert not pattern.search(path.read_text()), path


TODAY = {
    "ppo": {"env": "release", "scenario": "mixed", "total_timesteps": 300_000, "seed": 1,
            "n_envs": 4, "curriculum": True, "mask": True, "eval_episodes": 200},
    "sft": {"env": "release", "scenario": "mixed", "episodes": 256, "eval_episodes": 32,
            "epochs": 1.0, "max_steps": -1, "batch_size": 2, "grad_accum": 8, "lora_r": 16,
            "lora_alpha": 32, "lora_dropout": 0.05, "lora_targets": "all-linear"},
    "grpo": {"env": "release", "scenario": "mixed", "episodes": 512, "steps": 200,
             "num_generations": 8, "max_tool_calls": None, "thinking": False, "vllm": False},
}  # fmt: skip
"""Options the training commands had before they were generated (a sample): still there, with
the same defaults."""


def test_train_options_are_generated_from_the_trainers_config_models():
    import typer.main

    from opsgym.training.cli import train_app
    from opsgym.training.job import KINDS

    commands = typer.main.get_command(train_app).commands
    for kind, trainer in KINDS.items():
        params = {p.name: p for p in commands[kind].params}
        fields = {}
        for name, field in trainer.config.model_fields.items():  # a nested model: lora_r...
            inner = field.annotation if name == "lora" else None
            for sub, f in inner.model_fields.items() if inner else [(None, field)]:
                fields[f"{name}_{sub}" if sub else name] = f
        assert set(params) == {*fields, "out", "name", "db"}, kind
        for name, field in fields.items():
            want = field.get_default(call_default_factory=True)
            if name == "model":  # a trainer's model is always named on the command line
                assert params[name].required and params[name].default is None
            else:
                assert params[name].default == want, (kind, name)
            assert params[name].help == " ".join(field.description.replace("``", "").split())
        for name, default in TODAY[kind].items():
            assert params[name].default == default, (kind, name)


def test_a_training_option_out_of_its_bounds_is_one_line_naming_the_option(tmp_path):
    out = opsgym("train", "ppo", "--n-envs", "0", "--out", str(tmp_path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == "error: --n-envs 0: Input should be greater than or equal to 1"
    out = opsgym("train", "sft", "--model", "tiny", "--lora-dropout", "1", "--out", str(tmp_path))
    assert out.returncode == 2 and out.stderr.startswith("error: --lora-dropout 1.0: ")
    out = opsgym("train", "ppo", "--sweep", "0.8", "--fade", "0.5", "--out", str(tmp_path))
    assert out.stderr.strip() == "error: sweep must be at most fade, got sweep=0.8, fade=0.5"
    assert list(tmp_path.iterdir()) == []
