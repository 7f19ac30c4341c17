"""What the server refuses, and what a refusal costs: the token, every 4xx path, body and
message limits, malformed-message strikes, and one session's trouble never reaching another.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from pydantic import ValidationError
from websockets.exceptions import InvalidStatus

from opsgym.core.episode import MAX_DEPTH, MAX_MESSAGE_DEPTH
from opsgym.server import ServerSettings
from tests.server.wire import (  # noqa: F401 -- *_server: the fixtures shared, plain
    KNOWN,
    act,
    alone,
    as_served,
    ask,
    call,
    close_code,
    create,
    plain_server,
    reset,
    shared_server,
    state,
    verdict_of,
    wait_until,
    ws,
)

TOKEN = "s3cret-token-for-tests"


# -- the token --------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.org"])
def test_a_bind_off_loopback_without_a_token_is_refused(host):
    with pytest.raises(ValidationError, match="is not loopback: set a token"):
        ServerSettings(host=host)
    assert ServerSettings(host=host, token=TOKEN).token == TOKEN


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.8.8", "::1", "[::1]", "localhost"])
def test_a_loopback_bind_needs_no_token(host):
    assert ServerSettings(host=host).token is None


def test_the_token_may_come_from_the_environment_and_must_be_long(monkeypatch):
    monkeypatch.setenv("OPSGYM_TOKEN", TOKEN)
    assert ServerSettings(host="0.0.0.0").token == TOKEN
    with pytest.raises(ValidationError, match="at least 16 characters"):
        ServerSettings(host="0.0.0.0", token="short")


def concrete(path: str) -> str:
    """A route's path with its parameters filled in."""
    for name, value in (("episode_id", "1"), ("env", "fleet")):
        path = path.replace(f"{{{name}}}", value)
    return path.replace("{", "").replace("}", "")


def test_with_a_token_every_route_but_health_is_a_401_without_it_or_with_a_wrong_one(serve):
    live = serve(token=TOKEN)
    documented = live.app.openapi()["paths"]
    routes = [(m.upper(), path) for path, ops in documented.items() for m in ops]
    routes += [("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/redoc")]
    assert len(routes) > 20
    with httpx.Client(base_url=live.url, timeout=30) as anyone:
        for method, path in routes:
            for headers in ({}, {"authorization": "Bearer wrong-token-of-16-chars"}):
                reply = anyone.request(method, concrete(path), headers=headers, json={})
                expected = 200 if path == "/health" else 401
                assert reply.status_code == expected, (method, path, headers, reply.text)
                if expected == 401:
                    assert reply.headers["www-authenticate"] == "Bearer"
        assert anyone.get("/health", headers={"authorization": "Bearer wrong"}).status_code == 200
    for method, path in routes:  # the token's holder gets past the door everywhere
        reply = live.client.request(method, concrete(path), json={})
        assert reply.status_code not in (401, 403), (method, path, reply.text)
        if method == "GET" and "{" not in path:
            assert reply.status_code == 200, (path, reply.text)
    assert live.client.post("/api/sessions", json={"env": "release"}).status_code == 201
    assert live.client.post("/reset", json={}).status_code == 200


def test_with_a_token_the_websocket_handshake_needs_it(serve):
    live = serve(token=TOKEN)
    for token in (None, "wrong-token-of-16-chars"):
        with pytest.raises(InvalidStatus) as refused:
            ws(live, token=token)
        assert refused.value.response.status_code == 403
    assert len(live.manager) == 0
    with ws(live, token=TOKEN) as sock:
        assert reset(sock, env="release", seed=1)["type"] == "observation"


def test_cors_stays_closed_unless_origins_are_configured(serve):
    preflight = {"origin": "http://ui.example", "access-control-request-method": "POST"}
    closed = serve().client.options("/api/sessions", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    opened = serve(cors_origins=["http://ui.example"]).client.options(
        "/api/sessions", headers=preflight
    )
    assert opened.headers["access-control-allow-origin"] == "http://ui.example"


# -- 422: the body names the field ------------------------------------------------------------

UNPROCESSABLE = [
    ("POST", "/api/sessions", {"env": "release", "colour": "red"}, ["body", "colour"]),
    (
        "POST",
        "/api/sessions",
        {"env": "release", "overrides": {"v2_broken": True}},
        ["body", "overrides"],
    ),
    ("POST", "/api/sessions", {}, ["body", "env"]),
    ("POST", "/api/sessions", {"env": 5}, ["body", "env"]),
    ("POST", "/api/sessions", {"env": "release", "seed": "soon"}, ["body", "seed"]),
    ("POST", "/api/sessions", {"env": "release", "seed": -1}, ["body", "seed"]),
    # Regression: an integer past 64 bits, echoed in the 422, broke its JSON: the reply was
    # {"detail": "Integer exceeds 64-bit range"}, naming no field.
    ("POST", "/api/sessions", {"env": "release", "seed": 2**64}, ["body", "seed"]),
    ("POST", "/api/sessions", {"env": "release", "config": [1]}, ["body", "config"]),
    ("POST", "/api/sessions", {"env": "release", "split": "holdout"}, ["body", "split"]),
    ("POST", "/api/evaluations", {"env": "release", "policies": []}, ["body", "policies"]),
    ("POST", "/api/evaluations", {"env": "release", "policies": ["oracle"], "x": 1}, ["body", "x"]),
    ("POST", "/api/grade", {}, ["body", "record"]),
    ("POST", "/api/envs/fleet/compose", {"faults": []}, ["body", "faults"]),
    # Regression: nonsense task parameters were passed through to the world unchecked (200).
    (
        "POST",
        "/api/envs/fleet/compose",
        {"faults": ["oom"], "params": {"max_steps": "x"}},
        ["body", "params", "max_steps"],
    ),
    (
        "POST",
        "/api/envs/fleet/compose",
        {"faults": ["oom"], "params": {"presence": -1}},
        ["body", "params", "presence"],
    ),
    (
        "POST",
        "/api/envs/fleet/compose",
        {"faults": ["oom"], "params": {"slo_minutes": []}},
        ["body", "params", "slo_minutes"],
    ),
    ("POST", "/reset", {"seed": "x"}, ["body", "seed"]),
    ("POST", "/step", {"action": {"tool": "stage"}, "speed": 2}, ["body", "speed"]),
    ("POST", "/step", {"action": {"tool": "stage", "x": 1}}, ["x"]),
    ("GET", "/api/episodes?limit=0", None, ["query", "limit"]),
    ("GET", "/api/episodes?split=holdout", None, ["query", "split"]),
    ("GET", "/api/envs/release/tasks?split=holdout", None, ["query", "split"]),
    # Regression: an id past 64 bits reached the database and overflowed there (a 500).
    ("GET", "/api/episodes/99999999999999999999", None, ["path", "episode_id"]),
    ("GET", "/api/episodes/99999999999999999999/replay", None, ["path", "episode_id"]),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "loc"),
    UNPROCESSABLE,
    ids=[f"{m} {p} {json.dumps(b)}" for m, p, b, _ in UNPROCESSABLE],
)
def test_a_malformed_request_is_a_422_naming_the_field(plain, method, path, body, loc):
    before = len(plain.manager)  # a real server's settings: overrides are an unknown field
    reply = plain.client.request(method, path, json=body)
    assert reply.status_code == 422, reply.text
    errors = reply.json()["detail"]
    assert [e["loc"] for e in errors] == [loc]
    assert len(plain.manager) == before


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"tool": "stage", "force": True}, "Extra inputs are not permitted"),
        ({"tool": "stage", "args": [1]}, "valid dictionary"),
        ({"tool": ""}, "at least 1 character"),
        ({"tool": 5}, "valid string"),
        ({}, "give either tool (with args) or policy"),
        ({"tool": "stage", "policy": "oracle"}, "not both"),
        ({"policy": "oracle", "args": {"a": 1}}, "args go with tool"),
        ({"tool": "stage", "to_end": True}, "to_end goes with policy"),
    ],
)
def test_a_malformed_step_is_a_422_and_costs_the_episode_nothing(plain, body, says):
    sid = create(plain.client, env="release", scenario="nominal", seed=4)["id"]
    call(plain.client, sid, "stage")
    before = plain.client.get(f"/api/sessions/{sid}").json()
    reply = plain.client.post(f"/api/sessions/{sid}/step", json=body)
    assert reply.status_code == 422
    assert says in json.dumps(reply.json()["detail"])
    assert plain.client.get(f"/api/sessions/{sid}").json() == before


@pytest.mark.parametrize(
    ("body", "loc", "says"),
    [
        (
            {"tool": "inspect", "args": {"target": "bogus"}},
            ["body", "args", "target"],
            "Input should be 'all', 'deploy', 'migration' or 'router'",
        ),
        (
            {"tool": "shift_traffic", "args": {"percent": 150}},
            ["body", "args", "percent"],
            "less than or equal to 100",
        ),
        ({"tool": "stage", "args": {"x": 1}}, ["body", "args", "x"], "Extra inputs"),
        ({"tool": "stag", "args": {}}, ["body", "tool"], "no tool 'stag'"),
    ],
)
def test_a_strict_call_its_schema_refuses_is_a_422_naming_the_field_and_costs_nothing(
    plain, body, loc, says
):
    sid = create(plain.client, env="release", scenario="nominal", seed=4)["id"]
    call(plain.client, sid, "stage")
    before = plain.client.get(f"/api/sessions/{sid}").json()
    reply = plain.client.post(f"/api/sessions/{sid}/step", json={**body, "strict": True})
    assert reply.status_code == 422, reply.text
    (error,) = reply.json()["detail"]
    assert error["loc"] == loc and says in error["msg"]
    assert plain.client.get(f"/api/sessions/{sid}").json() == before
    # Without strict the same call is the agent's: a rejected step that costs `invalid`.
    loose = plain.client.post(f"/api/sessions/{sid}/step", json=body).json()["steps"]
    assert loose[0]["rejected"] and loose[0]["components"]["invalid"] < 0


def test_a_strict_call_that_fits_its_schema_steps_as_any_call_does(plain):
    sid = create(plain.client, env="release", scenario="nominal", seed=4)["id"]
    body = {"tool": "inspect", "args": {"target": "deploy"}}
    strict = plain.client.post(f"/api/sessions/{sid}/step", json={**body, "strict": True})
    twin = as_served("release", "nominal", 4, [("inspect", body["args"])])
    assert strict.status_code == 200
    assert strict.json()["session"]["observation"] == twin.observe()
    refused = plain.client.post(
        f"/api/sessions/{sid}/step", json={"policy": "oracle", "strict": True}
    )
    assert refused.status_code == 422 and "strict goes with tool" in refused.text


def test_a_record_that_cannot_be_replayed_is_a_422_not_a_server_error(shared):
    """Regression: a call that is not an object made replay raise AttributeError (a 500)."""
    record = alone("release", "nominal", 1).record()
    for calls in ([1], [None], ["stage"]):
        reply = shared.client.post("/api/grade", json={"record": {**record, "calls": calls}})
        assert reply.status_code == 422, reply.text
        assert "cannot be replayed" in reply.json()["detail"]


# -- 404: the reply says what exists ----------------------------------------------------------

NOT_FOUND = [
    ("POST", "/api/sessions", {"env": "nowhere"}, KNOWN),
    ("POST", "/api/sessions", {"env": "release", "scenario": "sunny"}, "nominal"),
    ("POST", "/api/sessions", {"env": "oversight", "config": {"mood": 1}}, "Known: archetype_mix"),
    ("POST", "/reset", {"env": "nowhere"}, KNOWN),
    ("GET", "/api/envs/nowhere", None, KNOWN),
    ("GET", "/api/envs/nowhere/tasks", None, KNOWN),
    ("GET", "/api/sessions/nope", None, "GET /api/sessions lists them"),
    ("DELETE", "/api/sessions/nope", None, "no open session 'nope'"),
    ("GET", "/api/sessions/nope/record", None, "GET /api/sessions lists them"),
    ("POST", "/api/sessions/nope/step", {"tool": "stage"}, "GET /api/sessions lists them"),
    ("GET", "/api/episodes/12345", None, "No episode 12345"),
    ("GET", "/api/episodes/12345/replay", None, "No episode 12345"),
    ("GET", "/api/evaluations/nope", None, "No evaluation named 'nope'"),
    ("POST", "/api/evaluations", {"env": "release", "policies": ["genius"]}, "llm:"),
    ("POST", "/api/envs/fleet/compose", {"faults": ["gremlins"]}, "Known: congestion"),
    # Regression: a world without levels answered 422 to its curriculum, not 404.
    ("GET", "/api/envs/release/curriculum", None, "has no curriculum"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "says"),
    NOT_FOUND,
    ids=[f"{m} {p} {json.dumps(b)}" for m, p, b, _ in NOT_FOUND],
)
def test_an_unknown_name_is_a_404_saying_what_exists(plain, method, path, body, says):
    reply = plain.client.request(method, path, json=body)
    assert reply.status_code == 404, reply.text
    assert says in reply.json()["detail"]


def test_an_unknown_policy_is_a_404_naming_the_worlds_policies(plain):
    sid = create(plain.client, env="oversight", seed=1)["id"]
    reply = plain.client.post(f"/api/sessions/{sid}/step", json={"policy": "genius"})
    assert reply.status_code == 404
    assert "Known: approve_all" in reply.json()["detail"]
    assert plain.client.get(f"/api/sessions/{sid}").json()["steps"] == 0


# -- 409: well formed, but not now -------------------------------------------------------------


def test_stepping_an_ended_session_is_a_409_that_points_at_the_record(shared):
    sid = create(shared.client, env="release", scenario="nominal", seed=3)["id"]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    for body in ({"tool": "stage"}, {"policy": "oracle"}, {"policy": "oracle", "to_end": True}):
        reply = shared.client.post(f"/api/sessions/{sid}/step", json=body)
        assert reply.status_code == 409
        assert f"/api/sessions/{sid}/record" in reply.json()["detail"]
    assert shared.client.get(f"/api/sessions/{sid}/record").status_code == 200


def test_a_websocket_session_cannot_be_stepped_over_rest(live):
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        (sid,) = live.manager.sessions
        reply = live.client.post(f"/api/sessions/{sid}/step", json={"tool": "stage"})
        assert reply.status_code == 409 and "belongs to its WebSocket" in reply.json()["detail"]
        assert state(sock)["step_count"] == 0


# -- size limits --------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413(serve):
    live = serve(max_body_bytes=1024)
    padded = json.dumps({"env": "release", "config": {"pad": "x" * 2000}})
    for path in ("/api/sessions", "/mcp", "/step", "/api/grade"):
        reply = live.client.post(path, content=padded, headers={"content-type": "application/json"})
        assert reply.status_code == 413, (path, reply.text)
        assert reply.json()["detail"] == "request body over 1024 bytes"
    assert len(live.manager) == 0


def test_a_chunked_body_over_the_limit_is_a_413_too(serve):
    """Regression: with no Content-Length the limit was found while FastAPI read the body, which
    made it a 400 ("error parsing the body") on every route with a body model.
    """
    live = serve(max_body_bytes=1024)

    def chunks(size):
        yield b'{"env": "release", "config": {"pad": "'
        yield b"x" * size
        yield b'"}}'

    headers = {"content-type": "application/json"}
    for path in ("/api/sessions", "/mcp"):
        reply = live.client.post(path, content=chunks(2000), headers=headers)
        assert reply.status_code == 413, (path, reply.text)
    assert len(live.manager) == 0
    small = live.client.post("/api/sessions", content=chunks(0), headers=headers)
    assert small.status_code == 404 and "config key 'pad'" in small.json()["detail"]
    whole = live.client.post(
        "/api/sessions", content=iter([b'{"env": ', b'"release"}']), headers=headers
    )
    assert whole.status_code == 201


def test_a_websocket_message_over_the_limit_closes_the_connection_with_1009(serve):
    live = serve(max_message_bytes=1024)
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        sock.send(json.dumps({"type": "step", "data": {"tool": "x" * 2000}}))
        assert close_code(sock) == 1009


def test_malformed_messages_past_the_limit_within_the_window_close_with_1008(serve):
    live = serve(malformed_limit=3, malformed_window_s=60)
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        for bad in ("{", '{"type": "dance"}', '{"type": "step", "data": {"tool": 5}}'):
            assert ask(sock, bad)["type"] == "error"
            assert state(sock)["step_count"] == 0  # valid messages do not count
        assert act(sock, "stage")["type"] == "observation"  # nor do rejected tool calls
        assert act(sock, "fly")["data"]["observation"]["last"]["rejected"]
        assert ask(sock, "[]")["data"]["code"] == "UNKNOWN_TYPE"  # the 4th: told, then closed
        assert close_code(sock) == 1008
    wait_until(lambda: len(live.manager) == 0, "the closed connection's session is closed")


def test_malformed_messages_spread_wider_than_the_window_are_tolerated(serve):
    live = serve(malformed_limit=1, malformed_window_s=0.05)
    with ws(live) as sock:
        for _ in range(4):
            assert ask(sock, "{")["data"]["code"] == "INVALID_JSON"
            time.sleep(0.1)  # let the window pass: the window itself is what is tested
        assert reset(sock, seed=1)["type"] == "observation"


# -- rejected calls, and isolation ------------------------------------------------------------


def test_an_unknown_tool_or_bad_arguments_are_recorded_rejected_steps_not_http_errors(shared):
    sid = create(shared.client, env="release", scenario="nominal", seed=2)["id"]
    unknown = call(shared.client, sid, "launch")["steps"][0]
    assert unknown["rejected"].startswith("unknown tool 'launch'")
    bad = call(shared.client, sid, "shift_traffic", {"percent": "most"})["steps"][0]
    assert bad["rejected"] and bad["reward"] < 0
    assert [
        h["rejected"] is not None
        for h in shared.client.get(f"/api/sessions/{sid}").json()["history"]
    ] == [True, True]
    shared.client.post(f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True})
    events = shared.client.get(f"/api/sessions/{sid}/record").json()["record"]["events"]
    assert [e["tool"] for e in events[:2]] == ["launch", "shift_traffic"]
    assert events[0]["rejected"] and events[1]["rejected"]


def test_one_sessions_failures_never_touch_another(serve):
    """While one REST session and one WebSocket fail every way they can, another session plays
    the oracle's calls and sees, call for call, what it sees alone.
    """
    live = serve(max_body_bytes=1024, malformed_limit=2)
    c = live.client
    solo = alone("fleet", "mixed", 6)
    good = create(c, env="fleet", scenario="mixed", seed=6)["id"]
    bad = create(c, env="fleet", scenario="mixed", seed=6)["id"]
    with ws(live) as sock:
        reset(sock, env="fleet", scenario="mixed", seed=6)
        for i, event in enumerate(solo.events):
            failures = [
                c.post(f"/api/sessions/{bad}/step", json={"tool": "x", "policy": "oracle"}),
                c.post(f"/api/sessions/{bad}/step", json={"policy": "genius"}),
                c.post(f"/api/sessions/{bad}/step", content=b"{" * 2048),
                c.post(f"/api/sessions/{bad}/step", content=b"{]"),
            ]
            assert [r.status_code for r in failures] == [422, 404, 413, 422]
            call(c, bad, "reboot_everything", {"now": True})
            if i < 3:
                assert ask(sock, "nonsense")["data"]["code"] == "INVALID_JSON"
            step = call(c, good, event["tool"], event["args"])["steps"][0]
            assert (step["report"], step["done"]) == (event["report"], event["done"])
        assert close_code(sock) == 1008
    ended = c.get(f"/api/sessions/{good}").json()
    assert ended["verdict"] == verdict_of(solo)
    assert c.get(f"/api/sessions/{bad}").json()["steps"] == solo.steps  # rejected, recorded


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [40, 100, 1000, 2000])
def test_deeply_nested_json_is_a_rejected_call_or_a_4xx_naming_the_nesting(shared, depth):
    """Regression (issue 20, item 6): 1 KB of nested brackets in a body was a 500 on the REST
    step, /step and /mcp; 1,000 levels, which orjson reads, closed the WebSocket on a server
    error and made /mcp's start_episode a 500 (Python's repr of the bad value recursed).

    Arguments nested past 32 levels inside a shallow message are a rejected call (recorded,
    nothing runs); a message past 64 levels is refused where it is read, naming the field or
    the nesting.
    """
    c, inner = shared.client, _nested(depth)
    as_call = depth + 3 <= MAX_MESSAGE_DEPTH  # {"tool", "args": {"target": ...}}: 3 levels more
    cut = f"arguments nested deeper than {MAX_DEPTH} levels"
    too_deep = ("nested deeper than 64 levels", "depth limit exceeded")
    json_type = {"content-type": "application/json"}
    sid = create(c, env="release", seed=4)["id"]
    body = '{"tool": "inspect", "args": {"target": ' + inner + "}}"
    rest = c.post(f"/api/sessions/{sid}/step", content=body, headers=json_type)
    if as_call:
        assert rest.status_code == 200 and rest.json()["steps"][0]["rejected"] == cut
    else:
        assert rest.status_code == 422 and too_deep[0] in rest.json()["detail"], rest.text[:300]
    stateless = c.post("/step", content='{"action": ' + body + "}", headers=json_type)
    if as_call:
        assert stateless.json()["observation"]["last"]["rejected"] == cut
    else:
        assert stateless.status_code == 422 and too_deep[0] in stateless.json()["detail"]

    def rpc(name: str, arguments: str) -> dict:
        params = f'{{"name": "{name}", "arguments": {arguments}}}'
        reply = c.post(
            "/mcp",
            content=f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {params}}}',
            headers=json_type,
        )
        assert reply.status_code == 200, reply.text[:300]
        return reply.json()

    started = rpc("start_episode", '{"env": "release", "seed": 4}')["result"]
    episode_id = started["structuredContent"]["episode_id"]
    for name, arguments in (
        ("start_episode", '{"env": "release", "scenario": ' + inner + "}"),
        ("observe_episode", '{"episode_id": ' + inner + "}"),
        ("release_inspect", f'{{"episode_id": "{episode_id}", "target": {inner}}}'),
    ):
        answer = rpc(name, arguments)
        if depth + 4 <= MAX_MESSAGE_DEPTH:  # the request's own 4 levels around the value
            assert answer["result"]["isError"] is True, answer
        else:
            assert any(why in answer["error"]["message"] for why in too_deep), answer
    if as_call:
        assert answer["result"]["structuredContent"]["rejected"] == cut
    with ws(shared) as sock:
        reset(sock, env="release", seed=4)
        reply = ask(sock, '{"type": "step", "data": ' + body + "}")
        if as_call:
            assert reply["data"]["observation"]["last"]["rejected"] == cut
        else:
            assert reply["type"] == "error"
            assert any(why in reply["data"]["message"] for why in too_deep), reply
        assert act(sock, "inspect", {"target": "all"})["type"] == "observation"  # still served
