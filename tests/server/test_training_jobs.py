"""Training over HTTP with the real trainers in real child processes (``python -m
opsgym.training.job``), on a real server: a small PPO job to ``succeeded`` while its curves and
log stream in, its model downloaded and evaluated; a long one that outlives a server restart and
is stopped with its model saved; SFT on the tiny model.

Each job is small: on an idle two-core machine the first takes about 25 s (torch's import
among it), the second about 25 s, SFT about 45 s. Every wait is a hang guard, several times that.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time

import pytest

from opsgym.store import open_store
from tests.server.conftest import running
from tests.server.training_helpers import kill_leftovers, over, stream, wait_for

pytest.importorskip("sb3_contrib")
pytestmark = pytest.mark.slow  # real PPO and SFT children

PPO = {
    "env": "release",
    "scenario": "nominal",
    "n_envs": 2,
    "n_steps": 32,  # the run's curves are written every 8 rollouts: every 512 steps here
    "batch_size": 64,
    "n_epochs": 2,
    "curriculum": False,
    "eval_every": 0,
    "checkpoint_every": 0,
    "eval_episodes": 4,
}
"""A PPO config that trains in seconds (what it learns does not matter here)."""


@pytest.fixture(autouse=True)
def _no_job_left_behind(tmp_path):
    yield
    kill_leftovers(tmp_path)


def test_a_small_ppo_job_succeeds_streaming_its_curves_and_log_and_its_model_evaluates(serve):
    live = serve()
    body = {"kind": "ppo", "name": "small", "config": {**PPO, "total_timesteps": 2048}}
    started = live.client.post("/api/training/jobs", json=body)
    assert started.status_code == 202, started.text

    seen = stream(live.client, "small")
    final = next(i for i, e in enumerate(seen) if e["event"] == "status" and over(e["data"]))
    assert seen[final]["data"]["status"] == "succeeded", seen[final]
    before = [e for e in seen[:final] if e["event"] in ("metrics", "log")]
    assert any(e["event"] == "metrics" and e["data"]["curves"].get("return") for e in before)
    assert any(e["event"] == "log" and e["data"]["lines"] for e in before)
    lines = [line for e in seen if e["event"] == "log" for line in e["data"]["lines"]]
    assert any("run small: step" in line for line in lines), lines

    job = live.client.get("/api/training/jobs/small").json()
    assert (job["exit_code"], job["run_status"]) == (0, "done")
    model = live.client.get("/api/training/jobs/small/files/model.zip").content
    archive = live.client.get("/api/training/jobs/small/archive.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tar:
        packed = tar.extractfile("small/model.zip").read()
        assert "small/evaluation.json" in tar.getnames()
    on_disk = (live.app.state.training.runs_dir / "small" / "model.zip").read_bytes()
    assert hashlib.sha256(packed).hexdigest() == hashlib.sha256(on_disk).hexdigest()
    assert model == on_disk

    evaluation = {
        "env": "release",
        "policies": ["ppo:runs:small"],
        "scenarios": ["nominal"],
        "episodes": 2,
        "name": "small-eval",
    }
    assert live.client.post("/api/evaluations", json=evaluation).status_code == 202
    deadline = time.monotonic() + 600  # a hang guard: two episodes take seconds
    while (e := live.client.get("/api/evaluations/small-eval").json())["job"]["status"] != "done":
        assert e["job"]["status"] in ("queued", "running"), e
        assert time.monotonic() < deadline, e
        time.sleep(0.2)
    assert e["episodes"] == 2 and e["status"] == "done"


def test_a_long_ppo_job_outlives_a_server_restart_and_stops_with_its_model_saved(tmp_path):
    settings = {"db": str(tmp_path / "store.sqlite"), "runs_dir": str(tmp_path / "runs")}
    body = {"kind": "ppo", "name": "long", "config": {**PPO, "total_timesteps": 5_000_000}}
    with running(**settings) as first:
        job = first.client.post("/api/training/jobs", json=body).json()
        # Once the run has curves, the model exists: a stop saves it.
        wait_for(first.client, "long", lambda _: curves(first, "long"), 240)

    with running(**settings) as second:  # the job kept running while no server watched
        adopted = second.client.get("/api/training/jobs/long").json()
        assert (adopted["status"], adopted["pid"]) == ("running", job["pid"])
        other = second.client.post(
            "/api/training/jobs", json={**body, "name": "other", "config": PPO}
        )
        assert other.status_code == 409 and "'long' is running" in other.json()["detail"]
        assert second.client.post("/api/training/jobs/long/stop").status_code == 202
        stopped = wait_for(second.client, "long", over, 240)

    assert (stopped["status"], stopped["exit_code"]) == ("stopped", 130), stopped
    assert (tmp_path / "runs" / "long" / "model.zip").is_file()
    with open_store(settings["db"]) as store:
        run = store.training_run("long")
    assert run["status"] == "interrupted" and run["checkpoint"].endswith("model.zip")


def curves(live, name: str) -> bool:
    return bool(live.client.get(f"/api/training/jobs/{name}/metrics").json()["curves"])


def test_sft_on_the_tiny_model_for_two_steps_succeeds(serve, monkeypatch):
    for module in ("trl", "transformers", "datasets", "peft"):
        pytest.importorskip(module)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the job's environment is the server's
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    live = serve()
    config = {
        "model": "tiny",
        "episodes": 4,
        "eval_episodes": 0,
        "max_steps": 2,
        "batch_size": 2,
        "grad_accum": 1,
        "logging_steps": 1,
        "save_steps": 100,
        "device": "cpu",
        "torch_threads": 1,
        "lora": {"r": 4},
    }
    reply = live.client.post(
        "/api/training/jobs", json={"kind": "sft", "name": "sft", "config": config}
    )
    assert reply.status_code == 202, reply.text
    job = wait_for(live.client, "sft", over, 300)
    log = live.client.get("/api/training/jobs/sft/logs").json()["lines"]
    assert job["status"] == "succeeded", log[-30:]
    metrics = live.client.get("/api/training/jobs/sft/metrics").json()["curves"]
    assert [step for step, _ in metrics["loss"]] == [1, 2]
    files = [f["path"] for f in live.client.get("/api/training/jobs/sft/artifacts").json()["files"]]
    assert "model/opsgym.json" in files and "config.json" in files
