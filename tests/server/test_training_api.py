"""``/api/training`` on a real server, with a stand-in trainer: a small Python script in the
job's place that records a run, writes files and log lines, and ends as each test needs (no
torch: each job takes about a second). What the real trainers do over HTTP is
``test_training_jobs.py``'s.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from opsgym.server import artifacts
from opsgym.server.supervisor import Supervisor, process_start
from opsgym.store import open_store
from tests.server.training_helpers import kill_leftovers, over, stream, wait_for

TOKEN = "operator-token-0123456789"
AGENT = "agent-token-0123456789ab"

STAND_IN = r"""
import json, os, signal, sys, time
from pathlib import Path

from opsgym.training.runs import Record

spec_path = Path(sys.argv[1])
spec = json.loads(spec_path.read_text())
mode = os.environ.get("STAND_IN", "ok")
folder = Path(spec["out"]) / spec["name"]
record = Record(None, spec["name"], kind=spec["kind"], env=spec["config"]["env"],
                config=spec["config"])
(folder / "checkpoints").mkdir(parents=True)
(folder / "model.zip").write_bytes(os.urandom(5000))
(folder / "checkpoints" / "ppo_64_steps.zip").write_bytes(b"checkpoint")
print("server token seen:", "OPSGYM_TOKEN" in os.environ or "OPSGYM_AGENT_TOKEN" in os.environ)
curves = {"return": []}
if mode == "deaf":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def end(status, run_status, code):
    # As opsgym.training.job does: the result is written whatever happened before it (a stop
    # that lands inside a store write must not leave the job without a result).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    error = None
    try:
        record.finish(run_status, curves, folder / "model.zip")
    except Exception as exc:
        error = repr(exc)
        print("could not mark the run:", error, flush=True)
    result = spec_path.with_name(spec["name"] + ".result.json")
    result.write_text(json.dumps({"status": status, "exit_code": code, "error": error}))
    sys.exit(code)


outcome = ("failed", "failed", 1)
try:
    for i in range(5 if mode == "ok" else 100_000):
        curves["return"].append([64 * (i + 1), float(i)])
        record.update(curves)
        print(f"rollout {i}", flush=True)
        if mode == "die" and i == 1:
            os._exit(3)
        time.sleep(0.3)
    outcome = ("succeeded", "done", 0)
except KeyboardInterrupt:
    outcome = ("stopped", "interrupted", 130)
finally:
    end(*outcome)
"""

SMALL = {"env": "release", "total_timesteps": 1000}


@pytest.fixture
def server(serve, tmp_path):
    """``server(mode, **settings)``: a live server whose jobs are the stand-in in ``mode``."""
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)

    def start(mode: str = "ok", **settings):
        os.environ["STAND_IN"] = mode  # the jobs' environment is the server's
        live = serve(**settings)
        live.app.state.training.command = (sys.executable, str(script))
        return live

    yield start
    os.environ.pop("STAND_IN", None)
    kill_leftovers(tmp_path)


def start(live, **body):
    body = {"kind": "ppo", "config": SMALL, **body}
    return live.client.post("/api/training/jobs", json=body)


# -- the live stream, the log, the curves ------------------------------------------------------


def test_a_stream_carries_status_metrics_and_log_lines_and_resumes_after_an_event(server):
    live = server()
    job = start(live, name="watched").json()
    assert job["status"] == "running" and job["pid"] > 0
    seen = stream(live.client, "watched")
    kinds = [e["event"] for e in seen]
    assert kinds[0] == "status" and kinds[-1] == "end"
    assert seen[-1]["data"]["status"] == "succeeded"
    final = next(i for i, e in enumerate(seen) if e["event"] == "status" and over(e["data"]))
    assert "metrics" in kinds[:final] and "log" in kinds[:final]  # both before the end
    lines = [line for e in seen if e["event"] == "log" for line in e["data"]["lines"]]
    assert [line for line in lines if line.startswith("rollout")] == [
        f"rollout {i}" for i in range(5)
    ]
    assert "server token seen: False" in lines
    last_metrics = [e for e in seen if e["event"] == "metrics"][-1]["data"]
    assert last_metrics["curves"]["return"][-1] == [320, 4.0]

    # Resumed after the first log event: the lines after it only, no metrics already had.
    first_log = next(e for e in seen if e["event"] == "log")
    again = stream(live.client, "watched", **{"last-event-id": seen[-1]["id"]})
    assert [e["event"] for e in again] == ["status", "end"]
    again = stream(live.client, "watched", **{"last-event-id": first_log["id"]})
    resumed = [line for e in again if e["event"] == "log" for line in e["data"]["lines"]]
    assert resumed == lines[len(first_log["data"]["lines"]) :]


def test_the_log_reads_in_whole_lines_from_an_offset(server):
    live = server()
    start(live, name="logged")
    wait_for(live.client, "logged", over, 60)
    whole = live.client.get("/api/training/jobs/logged/logs").json()
    assert whole["complete"] and whole["next_offset"] == whole["size"]
    part = live.client.get("/api/training/jobs/logged/logs", params={"limit": 40}).json()
    assert not part["complete"] and whole["lines"][: len(part["lines"])] == part["lines"]
    rest = live.client.get(
        "/api/training/jobs/logged/logs", params={"offset": part["next_offset"]}
    ).json()
    assert part["lines"] + rest["lines"] == whole["lines"]


def test_metrics_summary_plot_and_runs_show_the_curves(server):
    live = server()
    with open_store(live.app.state.settings.db) as store:  # a run of the CLI's, not a job
        store.start_training_run("by-cli", kind="ppo", env="fleet", config={})
    start(live, name="plotted")
    page = live.client.get("/api/training/jobs/plotted/plot")
    assert 'http-equiv="refresh"' in page.text and 'src="plot.png' in page.text
    wait_for(live.client, "plotted", over, 60)
    metrics = live.client.get("/api/training/jobs/plotted/metrics").json()
    assert len(metrics["curves"]["return"]) == 5
    summary = live.client.get("/api/training/jobs/plotted/summary").json()
    assert summary["curves"]["return"]["max"] == 4.0 and summary["model"] == "model.zip"
    assert summary["run"]["status"] == "done" and summary["job"]["exit_code"] == 0
    png = live.client.get("/api/training/jobs/plotted/plot.png")
    assert png.headers["content-type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert "refresh" not in live.client.get("/api/training/jobs/plotted/plot").text
    runs = live.client.get("/api/training/runs").json()
    assert {r["name"]: r["job"] for r in runs} == {"plotted": "succeeded", "by-cli": None}
    assert live.client.get("/api/training/runs/by-cli").json()["env"] == "fleet"
    assert live.client.get("/api/training/runs/nope").status_code == 404


# -- files ------------------------------------------------------------------------------------


def raw_get(live, path: str) -> int:
    """GET ``path`` exactly as written (httpx would resolve ``..`` before sending)."""
    host, port = live.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


def test_files_and_the_archive_stay_inside_the_job_folder(server, tmp_path):
    live = server()
    start(live, name="files")
    wait_for(live.client, "files", over, 60)
    folder = tmp_path / "runs" / "files"
    (tmp_path / "secret.txt").write_text("not the job's")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    (folder / "linked").symlink_to(tmp_path)

    listed = live.client.get("/api/training/jobs/files/artifacts").json()["files"]
    assert [f["path"] for f in listed] == ["checkpoints/ppo_64_steps.zip", "model.zip"]
    model = live.client.get("/api/training/jobs/files/files/model.zip")
    assert model.content == (folder / "model.zip").read_bytes()
    assert listed[1]["sha256"] == hashlib.sha256(model.content).hexdigest()

    base = "/api/training/jobs/files/files/"
    for path in (
        "../files.log",
        "..%2f..%2fsecret.txt",
        "%2e%2e/%2e%2e/secret.txt",
        "checkpoints/%2E%2E/%2E%2E/%2E%2E/secret.txt",
        "%2fetc%2fpasswd",
        "/etc/passwd",
        "link.txt",
        "linked/secret.txt",
        "./model.zip",
    ):
        assert raw_get(live, base + path) in (403, 404), path  # 404: a router that resolves ..
    assert raw_get(live, base + "link.txt") == 403
    assert raw_get(live, base + "%2e%2e/%2e%2e/secret.txt") == 403
    assert raw_get(live, base + "nothing.bin") == 404

    archive = live.client.get("/api/training/jobs/files/archive.tar.gz")
    assert archive.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(n for n, m in members.items() if m.isfile()) == [
            "files/checkpoints/ppo_64_steps.zip",
            "files/model.zip",
        ]
        packed = tar.extractfile("files/model.zip").read()
    assert hashlib.sha256(packed).digest() == hashlib.sha256(model.content).digest()

    (folder / "model.zip").write_bytes(b"rewritten")  # a file written again is hashed again
    os.utime(folder / "model.zip", ns=(1, 1))
    listed = live.client.get("/api/training/jobs/files/artifacts").json()["files"]
    assert listed[1]["sha256"] == hashlib.sha256(b"rewritten").hexdigest()


def test_a_path_is_refused_unless_it_names_a_file_inside_the_folder(tmp_path):
    root = tmp_path / "run"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "ok.txt").write_text("ok")
    (tmp_path / "outside.txt").write_text("no")
    (root / "escape").symlink_to(tmp_path / "outside.txt")
    assert artifacts.inside(root, "sub/ok.txt") == root / "sub" / "ok.txt"
    for bad in ("", "/etc/passwd", "../outside.txt", "sub/../../outside.txt", "sub/./ok.txt",
                "sub//ok.txt", "escape", "sub\\ok.txt", "a\0b"):  # fmt: skip
        with pytest.raises(artifacts.OutsideError):
            artifacts.inside(root, bad)
    with pytest.raises(FileNotFoundError):
        artifacts.inside(root, "sub")  # a folder is not a file
    linked = tmp_path / "linked-run"
    linked.symlink_to(root)
    with pytest.raises(artifacts.OutsideError):
        artifacts.inside(linked, "sub/ok.txt")
    assert artifacts.files_of(linked) == []


# -- one at a time, stopping, ending ------------------------------------------------------------


def test_one_job_at_a_time_and_a_stop_ends_it_stopped(server):
    live = server("long")
    assert start(live, name="first").status_code == 202
    second = start(live, name="second")
    assert second.status_code == 409 and "'first' is running" in second.json()["detail"]
    assert live.client.delete("/api/training/jobs/first").status_code == 409
    wait_for(live.client, "first", lambda j: j["run_status"] == "running", 60)
    stopped = live.client.post("/api/training/jobs/first/stop")
    assert stopped.status_code == 202 and stopped.json()["status"] == "stopping"
    job = wait_for(live.client, "first", over, 60)
    assert (job["status"], job["exit_code"], job["run_status"]) == ("stopped", 130, "interrupted")
    assert live.client.post("/api/training/jobs/first/stop").status_code == 409
    assert start(live, name="second").status_code == 202


def test_a_stop_ignored_escalates_to_sigterm_then_sigkill(server):
    live = server("deaf", training_stop_grace_s=0.5)
    start(live, name="deaf")
    wait_for(live.client, "deaf", lambda j: j["run_status"] == "running", 60)
    live.client.post("/api/training/jobs/deaf/stop")
    job = wait_for(live.client, "deaf", over, 60)
    assert job["status"] == "stopped" and job["exit_code"] == -signal.SIGKILL
    assert "may not have been saved" in job["error"]
    assert job["run_status"] == "interrupted"  # the server closed the run the process left open


def test_a_job_past_its_wall_time_is_stopped(server):
    live = server("long")
    start(live, name="timed", max_wall_s=1.5)
    job = wait_for(live.client, "timed", over, 60)
    assert job["status"] == "stopped" and "wall time of 1.5 s" in job["error"]


def test_a_job_whose_process_dies_is_failed_never_left_running(server):
    live = server("die")
    start(live, name="dying")
    job = wait_for(live.client, "dying", over, 60)
    assert (job["status"], job["exit_code"], job["run_status"]) == ("failed", 3, "failed")
    assert "exit code 3" in job["error"]


def test_deleting_a_finished_job_keeps_or_removes_its_files(server, tmp_path):
    live = server()
    for name in ("kept", "gone"):
        start(live, name=name)
        wait_for(live.client, name, over, 60)
    assert live.client.delete("/api/training/jobs/kept").json()["removed"] == []
    assert (tmp_path / "runs" / "kept" / "model.zip").is_file()
    removed = live.client.delete("/api/training/jobs/gone", params={"files": True}).json()
    assert len(removed["removed"]) == 4  # the run folder, the spec, the log, the result
    assert not (tmp_path / "runs" / "gone").exists()
    assert live.client.get("/api/training/jobs/gone").status_code == 404
    names = [j["name"] for j in live.client.get("/api/training/jobs").json()]
    assert names == []
    again = start(live, name="kept")  # its run is still in the store
    assert again.status_code == 409 and "training run named 'kept'" in again.json()["detail"]


# -- restarts -----------------------------------------------------------------------------------


def test_a_restarted_server_adopts_a_live_job_and_marks_the_rest_lost(tmp_path, monkeypatch):
    from tests.server.conftest import running

    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    monkeypatch.setenv("STAND_IN", "long")
    settings = {"db": str(tmp_path / "store.sqlite"), "runs_dir": str(tmp_path / "runs")}
    try:
        with running(**settings) as first:
            first.app.state.training.command = (sys.executable, str(script))
            pid = start(first, name="survivor").json()["pid"]
            wait_for(first.client, "survivor", lambda j: j["run_status"] == "running", 60)
        with open_store(settings["db"]) as store:  # a job whose pid now names another process
            store.add_training_job("reused", kind="ppo", env="release", config={}, folder="x")
            store.update_training_job("reused", status="running", pid=os.getpid(), pid_start=1)
            store.add_training_job("unstarted", kind="ppo", env="release", config={}, folder="y")
        with running(**settings) as second:
            job = second.client.get("/api/training/jobs/survivor").json()
            assert (job["status"], job["pid"]) == ("running", pid)
            for name in ("reused", "unstarted"):
                assert second.client.get(f"/api/training/jobs/{name}").json()["status"] == "lost"
            second.client.post("/api/training/jobs/survivor/stop")
            job = wait_for(second.client, "survivor", over, 60)
            assert (job["status"], job["exit_code"]) == ("stopped", 130)  # from its result file
    finally:
        kill_leftovers(tmp_path)


def test_process_start_tells_a_live_process_from_an_ended_one():
    assert process_start(os.getpid()) is not None
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    deadline = time.monotonic() + 30
    while process_start(child.pid) is not None:  # a zombie until reaped: ended all the same
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child.wait()
    assert started is None or started > 0
    assert process_start(child.pid) is None


# -- who may, and what -------------------------------------------------------------------------


def test_training_needs_the_operator_token(server):
    live = server(token=TOKEN, agent_token=AGENT)
    agent = {"authorization": f"Bearer {AGENT}"}
    for method, path in (
        ("GET", "/api/training"),
        ("POST", "/api/training/jobs"),
        ("GET", "/api/training/jobs"),
        ("GET", "/api/training/jobs/x/stream"),
        ("GET", "/api/training/jobs/x/files/model.zip"),
        ("GET", "/api/training/runs"),
    ):
        reply = live.client.request(method, path, headers=agent, json={})
        assert reply.status_code == 403, (method, path, reply.text)
    assert live.client.get("/api/training").status_code == 200
    assert (
        live.client.get("/api/training", headers={"authorization": "Bearer nope"}).status_code
        == 401
    )


def test_a_config_is_the_trainers_own_model_and_the_servers_caps(server):
    from opsgym.training.job import KINDS

    live = server(max_ppo_timesteps=5000, max_llm_steps=10, max_training_wall_s=600)
    kinds = {k["kind"]: k for k in live.client.get("/api/training").json()["kinds"]}
    assert set(kinds) == {"ppo", "sft", "grpo"}
    for kind, listed in kinds.items():  # the very schema opsgym train generates its options from
        assert listed["config_schema"] == KINDS[kind].config.model_json_schema()
    ppo = kinds["ppo"]["config_schema"]
    assert ppo["additionalProperties"] is False and ppo["properties"]["n_envs"]["default"] == 4
    assert ppo["properties"]["n_envs"]["minimum"] == 1  # bounds, with every description
    assert (ppo["properties"]["sweep"]["minimum"], ppo["properties"]["sweep"]["maximum"]) == (0, 1)
    assert all(field.get("description") for field in ppo["properties"].values())
    assert "Environment steps" in ppo["properties"]["total_timesteps"]["description"]
    lora = kinds["sft"]["config_schema"]["$defs"]["LoRA"]
    assert lora["additionalProperties"] is False and lora["properties"]["r"]["minimum"] == 0

    def refusal(status: int, **body) -> str:
        reply = start(live, **body)
        assert reply.status_code == status, reply.text
        return str(reply.json()["detail"])

    assert "bogus" in refusal(422, config={**SMALL, "bogus": 1})
    assert "'rank'" in refusal(422, kind="sft", config={"lora": {"r": 4, "rank": 8}})
    assert "'ppo', 'sft', 'grpo'" in refusal(422, kind="gym")
    assert "'nope'" in refusal(422, config={"env": "nope"})
    below = refusal(422, config={**SMALL, "n_envs": 0})  # the model's bound, naming the field
    assert "'n_envs'" in below and "greater than or equal to 1" in below
    assert "'dropout'" in refusal(422, kind="sft", config={"lora": {"dropout": 1.5}})
    assert "sweep must be at most fade" in refusal(422, config={**SMALL, "sweep": 0.9})
    assert "at most 5,000" in refusal(422, config={**SMALL, "total_timesteps": 6000})
    assert "at most 10 optimizer steps" in refusal(422, kind="sft", config={"episodes": 400})
    assert "at most 600" in refusal(422, max_wall_s=601)
    assert "never a path" in refusal(
        403, kind="sft", config={"model": "/tmp/model", "max_steps": 2}
    )
    assert "never a path" in refusal(403, kind="grpo", config={"model": "../runs/x", "steps": 2})
    assert refusal(404, kind="sft", config={"model": "runs:none", "max_steps": 2})
    assert "'name'" in refusal(422, name="../escape")

    off = server(training=False)
    reply = off.client.post("/api/training/jobs", json={"kind": "ppo", "config": SMALL})
    assert reply.status_code == 403 and "off on this server" in reply.json()["detail"]
    assert off.client.get("/api/training").json()["enabled"] is False


def test_the_job_environment_drops_the_server_settings(monkeypatch):
    from opsgym.server.supervisor import child_environment

    monkeypatch.setenv("OPSGYM_TOKEN", TOKEN)
    monkeypatch.setenv("opsgym_agent_token", AGENT)
    monkeypatch.setenv("OPSGYM_HF_MAX_NEW_TOKENS", "16")  # not a server setting: kept
    env = child_environment("sqlite:///x.sqlite")
    assert "OPSGYM_TOKEN" not in env and "opsgym_agent_token" not in env
    assert env["OPSGYM_DB"] == "sqlite:///x.sqlite" and env["OPSGYM_HF_MAX_NEW_TOKENS"] == "16"
    assert Supervisor.command[1:] == ("-m", "opsgym.training.job")
