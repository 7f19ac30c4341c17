"""Twins over the server (issue 20, item 3): with the agent token a client could start any seed,
so a copy of the episode it was being scored on, and try calls there (a twin's CI report read
while the real session sat at step 0), and could move the fleet curriculum every client shares.
The agent token now gets train seeds of its choosing, drawn seeds of any split, and no
curriculum; the operator keeps both.
"""

from __future__ import annotations

import pytest

from tests.server.wire import ask, ws

OPERATOR, AGENT = "o" * 20, "a" * 20
AS_AGENT = {"authorization": f"Bearer {AGENT}"}
TWIN = "may not choose a"


@pytest.fixture
def guarded(serve):
    return serve(token=OPERATOR, agent_token=AGENT)


@pytest.mark.parametrize("seed", [9, 8, 19])
def test_the_agent_token_cannot_start_a_dev_or_test_seed_of_its_choosing(guarded, seed):
    c = guarded.client
    made = c.post("/api/sessions", json={"env": "release", "seed": seed}, headers=AS_AGENT)
    assert made.status_code == 403 and TWIN in made.json()["detail"], made.text
    for path, body in (("/reset", {"seed": seed}), ("/step", {"action": {"tool": "inspect"}})):
        body = {**body, "seed": seed}
        refused = c.post(path, json=body, headers=AS_AGENT)
        assert refused.status_code == 403 and TWIN in refused.json()["detail"], (path, refused)
    assert len(guarded.manager) == 0


def test_drawn_seeds_and_train_seeds_stay_open_to_the_agent(guarded):
    c = guarded.client
    for body in ({"seed": 3}, {"split": "test"}, {"split": "dev"}, {}):
        made = c.post("/api/sessions", json={"env": "release", **body}, headers=AS_AGENT)
        assert made.status_code == 201, (body, made.text)
        assert "seed" not in made.json() or body.get("seed") == made.json()["seed"]
    assert c.post("/reset", json={"seed": 3}, headers=AS_AGENT).status_code == 200
    assert c.post("/step", json={"action": {"tool": "inspect"}}, headers=AS_AGENT).status_code == (
        200
    )


def test_the_operator_may_still_choose_any_seed(guarded):
    c = guarded.client
    assert c.post("/api/sessions", json={"env": "release", "seed": 9}).status_code == 201
    assert c.post("/reset", json={"seed": 9}).status_code == 200


def test_a_websocket_reset_with_a_test_seed_is_refused_for_the_agent(guarded):
    with ws(guarded, token=AGENT) as sock:
        reply = ask(sock, {"type": "reset", "data": {"env": "release", "seed": 9}})
        assert reply["type"] == "error" and TWIN in reply["data"]["message"]
        drawn = ask(sock, {"type": "reset", "data": {"env": "release", "split": "test"}})
        assert drawn["type"] == "observation"


def test_mcp_start_episode_with_a_test_seed_is_refused_for_the_agent(guarded):
    pytest.importorskip("mcp")
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "start_episode", "arguments": {"env": "release", "seed": 9}},
    }
    refused = guarded.client.post("/mcp", json=call, headers=AS_AGENT).json()
    assert refused["error"]["code"] == -32602 and TWIN in refused["error"]["message"]
    operator = guarded.client.post("/mcp", json=call).json()
    assert "error" not in operator


def test_the_agent_token_cannot_move_the_shared_curriculum(guarded):
    c = guarded.client
    body = {"env": "fleet", "curriculum": True}
    refused = c.post("/api/sessions", json=body, headers=AS_AGENT)
    assert refused.status_code == 403 and "curriculum" in refused.json()["detail"]
    assert c.post("/api/sessions", json=body).status_code == 201
