"""Policies named over HTTP: no file a client names is loaded, trained models are runs in the
server's runs folder, and which token may name what (:mod:`opsgym.server.policies`).
"""

from __future__ import annotations

import os
import time

import pytest

from opsgym.agents import base
from opsgym.agents.base import get_policy, resolve_run
from opsgym.core.errors import PolicyRefusedError, UnknownNameError
from tests.server.wire import create

OPERATOR, AGENT = "o" * 20, "a" * 20
RUNNING = ("queued", "running")


@pytest.fixture
def loads(monkeypatch):
    """Every argument the ``ppo:`` and ``hf:`` loaders were called with (they play as the
    release oracle, so a call that reaches them can step).
    """
    called: list[tuple[str, str]] = []

    def recorder(kind):
        def factory(env, arg):
            called.append((kind, arg))
            return get_policy(env, "oracle")

        return factory

    for kind in ("ppo", "hf", "hf+constrained"):
        monkeypatch.setitem(base.PREFIXED, kind, recorder(kind))
    return called


def run_folder(runs, name="release__ppo__1__1"):
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    return folder


def step(live, sid, policy, token=None):
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return live.client.post(f"/api/sessions/{sid}/step", json={"policy": policy}, headers=headers)


@pytest.mark.parametrize(
    "policy",
    ["ppo:/tmp/x.zip", "ppo:runs/x/model.zip", "hf:/tmp/model", "hf+constrained:../../etc"],
)
def test_a_model_path_named_over_http_is_refused_before_any_loader_runs(serve, loads, policy):
    live = serve()
    sid = create(live.client, env="release", seed=1)["id"]
    reply = step(live, sid, policy)
    assert reply.status_code == 403, reply.text
    assert "names a run in the server's runs folder" in reply.json()["detail"]
    assert "never a path" in reply.json()["detail"]
    assert loads == []
    assert live.client.get(f"/api/sessions/{sid}").json()["steps"] == 0


def test_a_run_in_the_runs_folder_is_loaded_from_there(serve, loads, tmp_path):
    live = serve(runs_dir=str(tmp_path / "runs"))
    folder = run_folder(tmp_path / "runs")
    sid = create(live.client, env="release", seed=1)["id"]
    reply = step(live, sid, "ppo:runs:release__ppo__1__1")
    assert reply.status_code == 200, reply.text
    assert loads == [("ppo", str(folder))]


@pytest.mark.parametrize("name", ["../runs2", "a/b", "..", ".hidden", "x\\y", ""])
def test_a_run_name_that_is_not_one_folder_name_is_refused(serve, loads, tmp_path, name):
    live = serve(runs_dir=str(tmp_path / "runs"))
    run_folder(tmp_path / "runs2")
    sid = create(live.client, env="release", seed=1)["id"]
    reply = step(live, sid, f"ppo:runs:{name}")
    assert reply.status_code == 403, (name, reply.text)
    assert "one folder name" in reply.json()["detail"]
    assert loads == []


def test_a_run_that_is_or_holds_a_symbolic_link_is_refused(serve, loads, tmp_path):
    runs = tmp_path / "runs"
    live = serve(runs_dir=str(runs))
    outside = run_folder(tmp_path / "elsewhere")
    runs.mkdir()
    os.symlink(outside, runs / "linked")
    inner = runs / "inner"
    inner.mkdir()
    os.symlink(outside / "model.zip", inner / "model.zip")
    sid = create(live.client, env="release", seed=1)["id"]
    for name, says in (("linked", "is a symbolic link"), ("inner", "holds a symbolic link")):
        reply = step(live, sid, f"ppo:runs:{name}")
        assert reply.status_code == 403, reply.text
        assert says in reply.json()["detail"]
    assert loads == []


def test_a_missing_run_is_a_404_listing_the_runs(serve, loads, tmp_path):
    live = serve(runs_dir=str(tmp_path / "runs"))
    run_folder(tmp_path / "runs", "release__ppo__7__1")
    sid = create(live.client, env="release", seed=1)["id"]
    reply = step(live, sid, "ppo:runs:release__ppo__8__1")
    assert reply.status_code == 404
    assert "release__ppo__7__1" in reply.json()["detail"]


@pytest.mark.parametrize(
    ("policy", "says"),
    [
        ("ppo:runs:release__ppo__1__1", "loads a trained model"),
        ("hf:runs:release__ppo__1__1", "loads a trained model"),
        ("llm:gpt-5", "spends the server's model endpoint"),
    ],
)
def test_the_agent_token_may_not_name_models_or_llms(serve, loads, tmp_path, policy, says):
    live = serve(token=OPERATOR, agent_token=AGENT, runs_dir=str(tmp_path / "runs"))
    run_folder(tmp_path / "runs")
    sid = create(live.client, env="release", seed=1)["id"]
    reply = step(live, sid, policy, token=AGENT)
    assert reply.status_code == 403, reply.text
    assert "needs the operator token" in reply.json()["detail"]
    assert says in reply.json()["detail"]
    assert loads == []


def test_the_agent_token_gets_scripted_policies_and_planner(serve):
    live = serve(token=OPERATOR, agent_token=AGENT)
    sid = create(live.client, env="release", seed=1)["id"]
    for policy in ("oracle", "random"):
        assert step(live, sid, policy, token=AGENT).status_code == 200, policy
    # planner: passes the rule; a session then says it drives its own episodes (as llm: does)
    reply = step(live, sid, "planner:oracle", token=AGENT)
    assert reply.status_code == 422 and "drives its own episodes" in reply.json()["detail"]


def test_the_operator_may_name_runs_and_llms(serve, loads, tmp_path):
    live = serve(token=OPERATOR, agent_token=AGENT, runs_dir=str(tmp_path / "runs"))
    run_folder(tmp_path / "runs")
    sid = create(live.client, env="release", seed=1)["id"]
    assert step(live, sid, "ppo:runs:release__ppo__1__1").status_code == 200
    # llm: passes the rule; the LLM agent itself then asks for an endpoint (none set here)
    reply = step(live, sid, "llm:some-model")
    assert reply.status_code == 422 and "endpoint" in reply.json()["detail"]


def test_an_evaluation_over_http_takes_runs_not_paths_and_stores_the_run_name(
    serve, loads, tmp_path
):
    live = serve(runs_dir=str(tmp_path / "runs"))
    folder = run_folder(tmp_path / "runs")
    body = {"env": "release", "episodes": 2, "name": "by-run"}
    refused = live.client.post("/api/evaluations", json={**body, "policies": ["ppo:/tmp/x.zip"]})
    assert refused.status_code == 403 and "never a path" in refused.json()["detail"]
    started = live.client.post(
        "/api/evaluations", json={**body, "policies": ["ppo:runs:release__ppo__1__1"]}
    )
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 600  # a hang guard: two episodes take seconds
    while live.client.get("/api/evaluations/by-run").json()["job"]["status"] in RUNNING:
        assert time.monotonic() < deadline, "the evaluation did not finish"
        time.sleep(0.2)
    assert live.client.get("/api/evaluations/by-run").json()["job"]["status"] == "done"
    rows = live.client.get("/api/episodes", params={"evaluation": "by-run"}).json()
    rows = rows["episodes"] if isinstance(rows, dict) else rows
    assert {r["policy"] for r in rows} == {"ppo:runs:release__ppo__1__1"}
    assert set(loads) == {("ppo", str(folder))}


# -- the library and CLI keep paths ------------------------------------------------------------


def test_the_library_still_takes_paths_and_resolves_runs_in_a_given_folder(loads, tmp_path):
    get_policy("release", f"ppo:{tmp_path}/anywhere.zip")
    folder = run_folder(tmp_path / "mine")
    get_policy("release", "ppo:runs:release__ppo__1__1", runs_dir=tmp_path / "mine")
    assert loads == [("ppo", f"{tmp_path}/anywhere.zip"), ("ppo", str(folder))]


def test_resolve_run_refuses_what_could_reach_outside_the_folder(tmp_path):
    run_folder(tmp_path)
    assert resolve_run(tmp_path, "release__ppo__1__1") == tmp_path / "release__ppo__1__1"
    with pytest.raises(PolicyRefusedError, match="one folder name"):
        resolve_run(tmp_path, "../x")
    with pytest.raises(UnknownNameError, match="release__ppo__1__1"):
        resolve_run(tmp_path, "nope")


def test_the_agent_token_may_not_make_strict_calls_that_skip_the_invalid_cost(serve):
    live = serve(token=OPERATOR, agent_token=AGENT)
    sid = create(live.client, env="release", seed=1)["id"]
    body = {"tool": "shift_traffic", "args": {"percent": 150}, "strict": True}
    agent = {"Authorization": f"Bearer {AGENT}"}
    refused = live.client.post(f"/api/sessions/{sid}/step", json=body, headers=agent)
    assert refused.status_code == 403 and "strict" in refused.json()["detail"]
    # The same call without strict is recorded and costs `invalid`, as every agent's does.
    plain = {k: v for k, v in body.items() if k != "strict"}
    taken = live.client.post(f"/api/sessions/{sid}/step", json=plain, headers=agent)
    assert taken.status_code == 200 and taken.json()["session"]["steps"] == 1
    # The operator (the workbench's person) gets the 422 naming the field, and no step.
    operator = live.client.post(f"/api/sessions/{sid}/step", json=body)
    assert operator.status_code == 422 and "percent" in operator.text
    assert live.client.get(f"/api/sessions/{sid}").json()["steps"] == 1
