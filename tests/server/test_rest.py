"""The REST face on a real server: sessions (create, step, policies, read, close, record), the
store every ended episode reaches, and the stateless OpenEnv routes beside them.
"""

from __future__ import annotations

import pytest

import opsgym
from opsgym.adapters.mcp import OpsgymMCP
from opsgym.core.registry import spec
from opsgym.server.sessions import call_tokens
from tests.server.wire import (  # noqa: F401 -- shared_server: the fixture shared
    ENVS,
    alone,
    as_served,
    call,
    calls_of,
    create,
    shared_server,
    stored,
    stored_as,
    verdict_of,
    wait_until,
)

# -- sessions ---------------------------------------------------------------------------------


def test_create_is_a_201_with_an_id_and_only_what_the_agent_may_see(live):
    body = {"env": "fleet", "scenario": "medium", "seed": 21, "config": {"level": 2}}
    session = create(live.client, **body)
    twin = opsgym.make("fleet", "medium", 21, config={"level": 2})
    assert len(session["id"]) >= 16
    assert {k: session[k] for k in ("kind", "env", "scenario", "seed", "split", "config")} == {
        "kind": "rest",
        "env": "fleet",
        "scenario": "medium",
        "seed": 21,
        "split": "train",
        "config": {"level": 2},
    }
    assert (session["steps"], session["done"], session["verdict"]) == (0, False, None)
    assert (session["history"], session["max_steps"]) == ([], twin.max_steps)
    assert session["observation"] == twin.observe()
    assert [t["function"]["name"] for t in session["tools"]] == list(spec("fleet").world.tools)
    assert "family" not in session and "record" not in session


def test_a_drawn_seed_is_hidden_until_the_episode_ends(shared):
    session = create(shared.client, env="release", scenario="nominal", split="dev")
    assert (session["seed"], session["split"]) == (None, "dev")
    sid = session["id"]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    ended = shared.client.get(f"/api/sessions/{sid}").json()
    assert ended["done"] and opsgym.split_of(ended["seed"]) == "dev"


def test_a_tool_call_answers_the_step_and_the_session_after_it(live):
    sid = create(live.client, env="release", scenario="nominal", seed=3)["id"]
    reply = call(live.client, sid, "stage")
    twin = opsgym.make("release", "nominal", 3)
    result = twin.step("stage")
    assert reply["steps"] == [
        {
            "step": 1,
            "tool": "stage",
            "args": {},
            "rejected": None,
            "report": result.report,
            "reward": result.reward,
            "components": result.components,
            "done": False,
        }
    ]
    assert reply["session"]["observation"] == twin.observe()
    assert reply["session"]["steps"] == 1 and "history" not in reply["session"]


@pytest.mark.parametrize("env", ENVS)
def test_a_policy_plays_one_call_or_every_call_to_the_end_as_it_plays_alone(shared, env):
    seed = 5
    solo = alone(env, "mixed", seed)
    sid = create(shared.client, env=env, scenario="mixed", seed=seed)["id"]
    one = shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle"}).json()
    assert calls_of(one["steps"]) == calls_of(solo.events[:1])
    rest = shared.client.post(
        f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True}
    ).json()
    assert calls_of(rest["steps"]) == calls_of(solo.events[1:])
    assert rest["session"]["done"] and rest["steps"][-1]["done"]
    assert rest["session"]["verdict"] == verdict_of(solo)
    assert rest["session"]["family"] == solo.family.name


@pytest.mark.parametrize(
    ("env", "policy", "seed"),
    [("fleet", "oracle", 1), ("fleet", "oracle", 3), ("release", "random", 2)],
)
def test_a_policy_played_one_call_per_request_plays_as_it_plays_alone(shared, env, policy, seed):
    """Regression: each request used to make (and reset) a fresh policy, so the fleet oracle,
    which remembers what it has learnt, forgot it between calls (seed 1 ended destroyed), and
    ``random`` drew from the same fresh generator every time.
    """
    solo = alone(env, "mixed", seed, policy)
    sid = create(shared.client, env=env, scenario="mixed", seed=seed)["id"]
    played = []
    for _ in range(solo.steps):
        reply = shared.client.post(f"/api/sessions/{sid}/step", json={"policy": policy})
        played += reply.json()["steps"]
    assert calls_of(played) == calls_of(solo.events)
    assert shared.client.get(f"/api/sessions/{sid}").json()["verdict"] == verdict_of(solo)


def test_get_one_session_shows_its_history_and_get_all_lists_every_open_one(live):
    a = create(live.client, env="release", scenario="nominal", seed=1)["id"]
    b = create(live.client, env="oversight", seed=2)["id"]
    call(live.client, a, "stage")
    call(live.client, a, "deploy")
    one = live.client.get(f"/api/sessions/{a}").json()
    assert (one["id"], one["steps"]) == (a, 2)
    assert [h["tool"] for h in one["history"]] == ["stage", "deploy"]
    listed = {s["id"]: s for s in live.client.get("/api/sessions").json()}
    assert set(listed) == {a, b}
    assert {k: listed[a][k] for k in ("kind", "env", "scenario", "steps", "done")} == {
        "kind": "rest",
        "env": "release",
        "scenario": "nominal",
        "steps": 2,
        "done": False,
    }


def test_each_step_shows_the_reward_components_paid_on_it_and_no_settled_one_before_the_end(
    shared,
):
    """A settled component (computed from hidden facts) accrues out of sight: the history shows
    what the agent was paid on each step, so it appears only on the last one.
    """
    env, seed = "fleet", 1
    settled = spec(env).settled
    solo = alone(env, "mixed", seed)
    accrued_early = [e["step"] for e in solo.events[:-1] if e["truth"].get("accrued")]
    assert accrued_early, "the seed must accrue a settled component before its last step"
    twin = as_served(env, "mixed", seed, [])
    sid = create(shared.client, env=env, scenario="mixed", seed=seed)["id"]
    entries = []
    while True:
        reply = shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle"})
        assert reply.status_code == 200, reply.text
        (entry,) = reply.json()["steps"]
        tokens = call_tokens(entry["tool"], entry["args"])
        result = twin.step(entry["tool"], entry["args"], tokens=tokens)
        assert entry["components"] == result.components, entry["step"]
        assert entry["reward"] == pytest.approx(sum(entry["components"].values()))
        assert entry["reward"] == result.reward
        entries.append(entry)
        if entry["done"]:
            break
    history = shared.client.get(f"/api/sessions/{sid}").json()["history"]
    assert [{k: v for k, v in e.items() if k != "done"} for e in entries] == history
    for entry in history[:-1]:
        assert not set(entry["components"]) & settled, entry
    assert set(history[-1]["components"]) & settled  # paid on the last step, all at once
    assert sum(e["reward"] for e in history) == pytest.approx(twin.total_reward)


def test_delete_closes_a_session_and_then_it_is_gone(live):
    sid = create(live.client, env="release", seed=1)["id"]
    assert live.client.delete(f"/api/sessions/{sid}").json() == {
        "id": sid,
        "closed": True,
        "saved": False,
    }
    assert live.client.get(f"/api/sessions/{sid}").status_code == 404
    assert live.client.delete(f"/api/sessions/{sid}").status_code == 404
    assert live.client.get("/api/sessions").json() == []


def test_the_record_is_a_409_while_the_episode_runs_and_holds_the_truth_after(shared):
    sid = create(shared.client, env="release", scenario="stale_health", seed=2)["id"]
    call(shared.client, sid, "stage")
    early = shared.client.get(f"/api/sessions/{sid}/record")
    assert early.status_code == 409
    assert "still running (step 1)" in early.json()["detail"]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    late = shared.client.get(f"/api/sessions/{sid}/record").json()
    assert late["truth_included"] is True
    assert late["verdict"]["outcome"] == late["record"]["verdict"]["outcome"]
    assert all("truth" in e for e in late["record"]["events"])
    assert late["record"]["token_source"] == "estimate"


def test_an_ended_session_s_record_replays_on_the_server_and_not_before_it_ends(shared):
    sid = create(shared.client, env="release", scenario="deploy_timeout", seed=4)["id"]
    call(shared.client, sid, "stage")
    early = shared.client.get(f"/api/sessions/{sid}/replay")
    assert early.status_code == 409 and "still running" in early.json()["detail"]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    checked = shared.client.get(f"/api/sessions/{sid}/replay").json()
    record = shared.client.get(f"/api/sessions/{sid}/record").json()["record"]
    assert checked["match"] and checked["admissible"] and checked["first_difference"] is None
    assert checked["recorded_hash"] == record["hash"] == checked["replayed_hash"]
    assert checked["verdict"] == record["verdict"]


def test_every_finished_episode_is_saved_once_and_replays_and_no_unfinished_one_is(live):
    c = live.client
    by_policy = create(c, env="release", scenario="mixed", seed=7)["id"]
    c.post(f"/api/sessions/{by_policy}/step", json={"policy": "oracle", "to_end": True})
    solo = alone("oversight", "mixed", 8)
    by_client = create(c, env="oversight", scenario="mixed", seed=8)["id"]
    for event in solo.events:
        call(c, by_client, event["tool"], event["args"])
    mixed = create(c, env="fleet", scenario="easy", seed=9)["id"]
    call(c, mixed, "check_telemetry")
    c.post(f"/api/sessions/{mixed}/step", json={"policy": "oracle", "to_end": True})
    dropped = create(c, env="release", seed=10)["id"]
    call(c, dropped, "stage")
    assert c.delete(f"/api/sessions/{by_client}").json()["saved"] is True
    assert c.delete(f"/api/sessions/{dropped}").json()["saved"] is False
    live.flush()
    rows = {r["env"]: r for r in stored(c)}
    assert set(rows) == {"release", "oversight", "fleet"}
    assert {env: r["policy"] for env, r in rows.items()} == {
        "release": "oracle",
        "oversight": "client",
        "fleet": "client",  # one call of its own makes the whole episode the client's
    }
    assert rows["oversight"]["outcome"] == solo.verdict.outcome
    assert rows["oversight"]["steps"] == solo.steps
    for r in rows.values():
        assert r["token_source"] == "estimate"
        replay = c.get(f"/api/episodes/{r['id']}/replay").json()
        assert replay["match"] is True and replay["recorded_hash"] == r["record_hash"]
        assert replay["verdict"]["outcome"] == r["outcome"]
    served = c.get(f"/api/episodes/{rows['oversight']['id']}").json()
    assert served["truth_included"] is True
    assert calls_of(served["record"]["events"]) == calls_of(solo.events)
    assert [r["env"] for r in stored(c, policy="oracle")] == ["release"]
    assert len(stored(c, limit=2)) == 2


def test_stored_episodes_come_newest_first_on_request_filtered_by_acceptance_and_counted(live):
    c = live.client
    played = [("release", "oracle", 1), ("release", "random", 2), ("fleet", "oracle", 1),
              ("release", "random", 3), ("oversight", "oracle", 4)]  # fmt: skip
    for env, policy, seed in played:
        sid = create(c, env=env, scenario="mixed", seed=seed)["id"]
        c.post(f"/api/sessions/{sid}/step", json={"policy": policy, "to_end": True})
        live.flush()  # one at a time: the store's order is the order played
    reply = c.get("/api/episodes")
    oldest = reply.json()
    assert reply.headers["x-total-count"] == str(len(played))
    assert [(r["env"], r["policy"], r["seed"]) for r in oldest] == played  # the default, as before
    ids = [r["id"] for r in oldest]
    newest = c.get("/api/episodes", params={"order": "newest", "limit": 2})
    assert [r["id"] for r in newest.json()] == ids[::-1][:2]
    assert newest.headers["x-total-count"] == str(len(played))  # every match, not the page
    accepted = [r["id"] for r in oldest if r["accepted"]]
    assert 0 < len(accepted) < len(ids)
    for value, expected in (("true", accepted), ("false", [i for i in ids if i not in accepted])):
        page = c.get("/api/episodes", params={"accepted": value, "order": "newest"})
        assert [r["id"] for r in page.json()] == expected[::-1]
        assert page.headers["x-total-count"] == str(len(expected))
    narrow = c.get("/api/episodes", params={"env": "release", "accepted": "false", "limit": 1})
    assert len(narrow.json()) == 1
    assert narrow.headers["x-total-count"] == str(
        sum(1 for r in oldest if r["env"] == "release" and not r["accepted"])
    )
    for bad in ({"order": "upwards"}, {"accepted": "perhaps"}):
        assert c.get("/api/episodes", params=bad).status_code == 422


def test_an_episode_holding_an_integer_beyond_64_bits_is_saved_and_replays(live):
    """The writer's draft cannot go through orjson then (regression: the fallback path)."""
    c = live.client
    sid = create(c, env="release", scenario="mixed", seed=17)["id"]
    huge = 2**70
    rejected = call(c, sid, "shift_traffic", {"percent": huge})
    assert rejected["steps"][0]["rejected"]
    c.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    live.flush()
    rows = [r for r in stored(c, env="release", limit=1000) if r["seed"] == 17]
    assert len(rows) == 1
    replay = c.get(f"/api/episodes/{rows[0]['id']}/replay").json()
    assert replay["match"] is True and replay["recorded_hash"] == rows[0]["record_hash"], replay
    record = c.get(f"/api/episodes/{rows[0]['id']}").json()["record"]
    assert record["events"][0]["args"] == {"percent": huge}


def test_a_curriculum_session_takes_its_config_from_the_curriculum_and_reports_back(shared):
    session = create(shared.client, env="fleet", curriculum=True, seed=4)
    before = shared.client.get("/api/envs/fleet/curriculum").json()["state"]
    assert session["config"] == before["config"]
    shared.client.post(
        f"/api/sessions/{session['id']}/step", json={"policy": "oracle", "to_end": True}
    )
    after = shared.client.get("/api/envs/fleet/curriculum").json()["state"]
    assert after["episodes"] == before["episodes"] + 1


# -- worlds, grading, evaluations -------------------------------------------------------------


def test_the_worlds_are_listed_with_their_scenarios_policies_and_tools(live):
    worlds = {w["name"]: w for w in live.client.get("/api/envs").json()}
    assert set(worlds) == set(ENVS)
    for name, world in worlds.items():
        assert [t["function"]["name"] for t in world["tools"]] == list(spec(name).world.tools)
        assert "oracle" in world["policies"]
        assert {s["name"] for s in world["scenarios"]} >= set(opsgym.scenarios(name, "test"))
        assert live.client.get(f"/api/envs/{name}").json() == world
    tasks = live.client.get("/api/envs/release/tasks", params={"split": "train"}).json()
    assert [t["name"] for t in tasks] == opsgym.scenarios("release", "train")


def test_grade_replays_a_record_and_tells_a_tampered_one(live):
    record = alone("release", "deploy_timeout", 4).record()
    graded = live.client.post("/api/grade", json={"record": record}).json()
    assert graded["match"] is True and graded["verdict"] == record["verdict"]
    assert graded["admissible"] is True and graded["labels"] == []
    forced = opsgym.run("release", "deploy_timeout", 4, "oracle", overrides={"v2_broken": True})
    forced = forced.record()
    labelled = live.client.post("/api/grade", json={"record": forced}).json()
    assert labelled["match"] is True and labelled["admissible"] is False
    assert labelled["labels"] == ["forced facts: v2_broken"]
    record["events"][2]["report"] = {"status": "ok"}
    tampered = live.client.post("/api/grade", json={"record": record}).json()
    assert tampered["match"] is False and tampered["verdict"] is None
    assert tampered["first_difference"]["step"] == 3


def test_compose_describes_a_generated_fleet_challenge(live):
    made = live.client.post("/api/envs/fleet/compose", json={"faults": ["oom", "version"]}).json()
    assert made["faults"] == ["oom", "version"]
    assert made["hidden_facts"] and made["name"] == "oom+version"


def test_an_evaluation_runs_in_the_background_and_lands_in_the_store(serve):
    live = serve(max_eval_episodes=4)
    c = live.client
    too_big = c.post("/api/evaluations", json={"env": "release", "policies": ["oracle"]})
    assert too_big.status_code == 422 and "at most 4 episodes" in too_big.json()["detail"]
    body = {
        "env": "release",
        "policies": ["oracle"],
        "scenarios": ["nominal"],
        "episodes": 2,
        "name": "tiny",
    }
    started = c.post("/api/evaluations", json=body)
    assert started.status_code == 202 and started.json()["name"] == "tiny"
    wait_until(
        lambda: c.get("/api/evaluations/tiny").json().get("status") in ("done", "failed"),
        "the evaluation ends",
        limit=60,
    )
    done = c.get("/api/evaluations/tiny").json()
    assert done["job"]["status"] == "done", done["job"]
    assert done["job"]["done"] == done["job"]["total"] == 2
    assert [e["name"] for e in c.get("/api/evaluations").json()] == ["tiny"]
    assert len(stored(c, evaluation="tiny")) == 2


def test_an_evaluation_that_fails_over_http_is_stored_failed_and_a_restart_resumes_it(
    serve, monkeypatch
):
    """Regression: a failed evaluation stayed ``running`` in the store for ever."""
    from opsgym.evaluation import harness

    real = harness.execute

    def failing(*args, **kwargs):
        for i, item in enumerate(real(*args, **kwargs)):
            if i == 1:
                raise RuntimeError("the worker was lost")
            yield item

    monkeypatch.setattr(harness, "execute", failing)
    live = serve()
    c = live.client
    body = {"env": "release", "policies": ["oracle"], "scenarios": ["nominal"], "episodes": 3}
    name = c.post("/api/evaluations", json={**body, "name": "flaky"}).json()["name"]

    def ended() -> dict:
        row = c.get(f"/api/evaluations/{name}").json()
        return row if row["job"]["status"] in ("done", "failed") else {}

    failed = wait_until(ended, "the evaluation fails", limit=60)
    assert failed["status"] == "failed"  # the store's own status, not only the job's
    assert failed["aggregates"]["error"] == "RuntimeError: the worker was lost"
    assert failed["episodes"] == failed["aggregates"]["stored"] == 1
    assert "same name ('flaky')" in failed["aggregates"]["resume"]
    assert [e["status"] for e in c.get("/api/evaluations").json()] == ["failed"]
    monkeypatch.setattr(harness, "execute", real)
    assert c.post("/api/evaluations", json={**body, "name": "flaky"}).status_code == 202
    done = wait_until(ended, "the resumed evaluation ends", limit=60)
    assert (done["status"], done["episodes"], done["job"]["total"]) == ("done", 3, 2)


def test_an_evaluation_s_job_is_read_before_the_store_so_done_means_stored_done():
    """Regression (a CI flake of the test above): the route read the store, then serialised the
    job's live dict, so a job that ended in between showed ``done`` beside the store's
    ``running``. The job is copied before the store is read."""
    import datetime
    import json
    from types import SimpleNamespace

    from opsgym.server.routes.evaluations import get_evaluation, list_evaluations

    job = {"name": "e", "status": "running", "done": 2, "total": 3, "error": None}
    now = datetime.datetime.now(datetime.UTC)
    stored = {"name": "e", "status": "running", "created_at": now, "updated_at": now}

    class Store:
        def evaluation(self, name):
            job["status"] = "done"  # the job ends while the store is read
            return dict(stored)

        def evaluations(self):
            return [self.evaluation("e")]

    for read in (
        lambda jobs: json.loads(get_evaluation("e", Store(), jobs).body),
        lambda jobs: json.loads(list_evaluations(Store(), jobs).body)[0],
    ):
        job["status"] = "running"
        row = read(SimpleNamespace(jobs={"e": job}, verifications={}))
        assert (row["status"], row["job"]["status"]) == ("running", "running")


# -- OpenEnv over plain HTTP (stateless, as in OpenEnv) ---------------------------------------


def test_stateless_reset_and_step_act_on_fresh_episodes(live):
    reset = live.client.post("/reset", json={"env": "oversight", "seed": 3}).json()
    twin = opsgym.make("oversight", None, 3)
    assert {k: v for k, v in reset["observation"].items() if k != "tools"} == twin.observe()
    assert (reset["reward"], reset["done"]) == (None, False)
    step = live.client.post(
        "/step",
        json={"action": {"tool": "inspect_ticket", "args": {"slot": 0}}, "env": "oversight"}
        | {"seed": 3},
    ).json()
    result = twin.step("inspect_ticket", {"slot": 0})
    assert step["observation"] == twin.observe() and step["reward"] == result.reward
    assert live.client.post("/reset").json()["observation"]["step"] == 0  # empty body: defaults
    assert live.manager.sessions == {}  # nothing kept


def test_state_schema_metadata_and_health_describe_the_server(live):
    assert live.client.get("/state").json()["step_count"] == 0
    schema = live.client.get("/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    assert schema["action"]["required"] == ["tool"]
    meta = live.client.get("/metadata").json()
    assert (meta["name"], meta["version"]) == ("opsgym", opsgym.__version__)
    assert live.client.get("/health").json() == {"status": "healthy"}


def test_mcp_is_the_mcp_face_over_plain_json_rpc(live):
    """OpenEnv's ``POST /mcp``: no handshake, HTTP 200 always; the catalogue, the validation
    and the results are ``opsgym mcp``'s own, and an episode a call ends is saved."""

    def rpc(body):
        reply = live.client.post("/mcp", json=body)
        assert reply.status_code == 200
        return reply.json()

    def tool(name, rid=1, **arguments):
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
        return rpc({**body, "params": {"name": name, "arguments": arguments}})

    listed = rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [t["name"] for t in listed["result"]["tools"]] == [t.name for t in OpsgymMCP().tools]
    started = tool("start_episode", env="release", scenario="deploy_timeout", seed=1)
    episode_id = started["result"]["structuredContent"]["episode_id"]
    twin = opsgym.make("release", "deploy_timeout", 1)
    for c in alone("release", "deploy_timeout", 1).record()["calls"]:
        called = tool(f"release_{c['tool']}", "a", episode_id=episode_id, **c["args"])
        expected = twin.step(c["tool"], c["args"])
        assert called["id"] == "a" and called["result"]["isError"] is False
        assert called["result"]["structuredContent"]["reward"] == expected.reward
    assert called["result"]["structuredContent"]["done"] is True
    assert len(stored_as(live, twin)) == 1
    verdict = tool("read_verdict", episode_id=episode_id)["result"]["structuredContent"]
    assert verdict["outcome"] == twin.verdict.outcome
    refused = tool("release_deploy", episode_id="release-000000000000")["result"]
    assert refused["isError"] is True and "unknown episode_id" in refused["content"][0]["text"]
    assert tool("fly")["error"]["code"] == -32602  # an unknown tool: a protocol error, as MCP asks
    assert rpc({"jsonrpc": "2.0", "id": 3, "method": "dance"})["error"]["code"] == -32601
    assert rpc({"id": 4, "method": "tools/list"})["error"]["code"] == -32600
    raw = live.client.post("/mcp", content=b"{nope")
    assert raw.json()["error"]["code"] == -32700
