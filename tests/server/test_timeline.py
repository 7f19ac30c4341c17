"""A stored episode's timeline by replay (``GET /api/episodes/{id}/timeline``, ``POST
/api/timeline``) and the outcome of each lie it told, on a real server: what the agent saw after
each step is what a replay of the record shows, each lie is settled by the call the ledger
says, the stored record is never changed, the cache never answers for an edited record, and the
agent token reaches none of it.
"""

from __future__ import annotations

import copy

import pytest

import opsgym
from opsgym.evaluation.runner import lies_of
from tests.server.wire import (  # noqa: F401 -- shared_server: the fixture shared
    create,
    shared_server,
    stored,
)

TOKEN = "operator-token-0123456789"
AGENT = "agent-token-0123456789ab"
SEED = 1  # fleet seed 1: the oracle reconciles one lie and leaves one open; naive trusts one


def played(live, policy: str, env: str = "fleet", seed: int = SEED) -> dict:
    """A session played to the end by ``policy``; its stored row (the newest of that record:
    a shared server may hold the same episode twice)."""
    sid = create(live.client, env=env, scenario="mixed", seed=seed)["id"]
    body = {"policy": policy, "to_end": True}
    assert live.client.post(f"/api/sessions/{sid}/step", json=body).status_code == 200
    record = live.client.get(f"/api/sessions/{sid}/record").json()["record"]
    live.client.delete(f"/api/sessions/{sid}")
    live.flush()
    rows = stored(live.client, env=env, order="newest", limit=1000)
    return next(r for r in rows if r["record_hash"] == record["hash"])


def replayed(record: dict) -> tuple[opsgym.Episode, list[dict]]:
    """The record's calls played again here; the episode and what it showed after each."""
    episode = opsgym.make(
        record["env"], record["scenario"], record["seed"], token_source=record["token_source"]
    )
    seen = [episode.observe()]
    for call in record["calls"]:
        episode.step(call["tool"], call["args"], tokens=call["tokens"])
        seen.append(episode.observe())
    return episode, seen


def parsed(episode: opsgym.Episode, event: dict) -> object:
    """An accepted call's arguments as its tool reads them (what a lie's matches are given)."""
    return episode.world.tools[event["tool"]].parse(event["args"])


def test_a_timeline_shows_what_the_agent_saw_after_each_step(shared):
    row = played(shared, "oracle")
    record = shared.client.get(f"/api/episodes/{row['id']}").json()["record"]
    episode, seen = replayed(record)
    full = shared.client.get(f"/api/episodes/{row['id']}/timeline", params={"limit": 1000}).json()
    assert full["match"] is True and full["first_difference"] is None
    assert full["recorded_hash"] == full["replayed_hash"] == record["hash"]
    assert full["family"] == episode.family.name == row["family"]
    assert full["total_steps"] == len(record["events"]) == row["steps"]
    assert full["before"] == seen[0]
    assert [s["observation"] for s in full["steps"]] == seen[1:]
    for shown, event in zip(full["steps"], record["events"], strict=True):
        assert shown["step"] == event["step"] and shown["tool"] == event["tool"]
        assert shown["report"] == event["report"] and shown["components"] == event["reward"]
        assert "truth" not in shown

    part = shared.client.get(
        f"/api/episodes/{row['id']}/timeline", params={"start": 2, "limit": 3}
    ).json()
    assert (part["start"], part["limit"]) == (2, 3)
    assert [s["step"] for s in part["steps"]] == [3, 4, 5]
    assert part["before"] == seen[2] and part["steps"] == full["steps"][2:5]
    assert part["lies"] == full["lies"]
    past = shared.client.get(f"/api/episodes/{row['id']}/timeline", params={"start": 10_000})
    assert past.status_code == 200 and past.json()["steps"] == [] and past.json()["before"] is None


@pytest.mark.parametrize(("policy", "statuses"), [("oracle", {"reconciled", "open"}),
                                                  ("naive", {"trusted", "open"})])  # fmt: skip
def test_each_lie_names_the_step_and_call_that_trusted_or_reconciled_it(shared, policy, statuses):
    row = played(shared, policy)
    view = shared.client.get(f"/api/episodes/{row['id']}").json()
    record, lies = view["record"], view["lies"]
    episode, _ = replayed(record)
    ledger = episode.world.lies.told
    assert [lie["status"] for lie in lies["told"]] == [lie.status for lie in ledger]
    assert {lie["status"] for lie in lies["told"]} == statuses
    assert lies["summary"] == lies_of(episode)  # as an evaluation stores them
    for lie, told in zip(lies["told"], ledger, strict=True):
        assert (lie["kind"], lie["told_at"], lie["detail"]) == (told.kind, told.step, told.detail)
        if lie["status"] == "open":
            assert lie["settled_at"] is None and lie["settled_by"] is None
            continue
        event = record["events"][lie["settled_at"] - 1]
        assert lie["settled_at"] > lie["told_at"]
        assert lie["settled_by"] == {"tool": event["tool"], "args": event["args"]}
        match = told.reconciles if lie["status"] == "reconciled" else told.trusts
        assert match(event["tool"], parsed(episode, event)), lie
        for earlier in record["events"][lie["told_at"] : lie["settled_at"] - 1]:
            if earlier["rejected"] is None:  # nothing settled it before that call
                assert not told.reconciles(earlier["tool"], parsed(episode, earlier))
                assert not told.trusts(earlier["tool"], parsed(episode, earlier))

    # Derived, never written: the stored record and its chain are as they were.
    again = shared.client.get(f"/api/episodes/{row['id']}").json()["record"]
    assert again == record and again["hash"] == row["record_hash"]
    assert shared.client.get(f"/api/episodes/{row['id']}/replay").json()["match"] is True


def test_an_ended_sessions_record_carries_its_lie_outcomes(shared):
    sid = create(shared.client, env="oversight", scenario="mixed", seed=0)["id"]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "naive", "to_end": True})
    reply = shared.client.get(f"/api/sessions/{sid}/record").json()
    assert reply["lies"]["told"] and {x["status"] for x in reply["lies"]["told"]} == {"trusted"}
    assert reply["lies"]["summary"]["trusted"] == len(reply["lies"]["told"])


def test_a_posted_record_gets_its_timeline_and_an_edited_one_is_never_served_from_cache(shared):
    episode = opsgym.run("release", "mixed", 8, "naive")
    record = episode.record()
    cache = shared.app.state.timelines
    first = shared.client.post("/api/timeline", json={"record": record}).json()
    assert first["match"] is True and first["family"] == episode.family.name
    assert [x["status"] for x in first["lies"]["told"]] == ["trusted"]
    hits = cache.hits
    again = shared.client.post("/api/timeline", json={"record": record}).json()
    assert again == first and cache.hits == hits + 1

    edited = copy.deepcopy(record)
    edited["events"][1]["report"] = {"ok": True, "edited": True}  # the hashes stay the old ones
    shown = shared.client.post("/api/timeline", json={"record": edited}).json()
    assert shown["match"] is False and cache.hits == hits + 1
    assert (shown["first_difference"]["step"], shown["first_difference"]["field"]) == (
        2,
        "report",
    )
    assert shown["steps"][1]["report"] == {"ok": True, "edited": True}  # as recorded

    for bad in ({"env": "release"}, {**record, "env": "nowhere"}, {**record, "calls": [1]}):
        reply = shared.client.post("/api/timeline", json={"record": bad})
        assert reply.status_code == 422, reply.text
    missing = shared.client.get("/api/episodes/999999/timeline")
    assert missing.status_code == 404


def test_the_agent_token_reaches_no_timeline_and_no_stored_lies(serve):
    live = serve(token=TOKEN, agent_token=AGENT)
    row = played(live, "oracle", env="release", seed=7)
    agent = {"authorization": f"Bearer {AGENT}"}
    record = live.client.get(f"/api/episodes/{row['id']}").json()["record"]
    for method, url, body in (
        ("GET", f"/api/episodes/{row['id']}/timeline", None),
        ("GET", f"/api/episodes/{row['id']}", None),
        ("POST", "/api/timeline", {"record": record}),
    ):
        refused = live.client.request(method, url, json=body, headers=agent)
        assert refused.status_code == 403, (url, refused.text)
        assert live.client.request(method, url, json=body).status_code == 200, url
