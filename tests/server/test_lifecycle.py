"""How long sessions live and how many there may be: the idle reaper, and the capacity limit
over REST (a 503 with Retry-After) and over the WebSocket (CAPACITY_REACHED).
"""

from __future__ import annotations

from tests.server.wire import act, close_code, create, reset, state, wait_until, ws

IDLE = {"idle_timeout_s": 0.3, "reap_interval_s": 0.05}


def open_ids(live) -> set[str]:
    """The open sessions, as GET /api/sessions lists them (listing touches none)."""
    return {s["id"] for s in live.client.get("/api/sessions").json()}


# -- the reaper -------------------------------------------------------------------------------


def test_an_idle_rest_session_is_reaped_and_then_is_a_404(serve):
    live = serve(**IDLE)
    sid = create(live.client, env="release", seed=1)["id"]
    wait_until(lambda: sid not in open_ids(live), "the idle session is reaped")
    gone = live.client.get(f"/api/sessions/{sid}")
    assert gone.status_code == 404
    assert "idle for 0.3 s are closed" in gone.json()["detail"]
    assert live.client.post(f"/api/sessions/{sid}/step", json={"tool": "stage"}).status_code == 404
    assert live.manager.reaped == 1


def test_a_session_in_use_is_not_reaped(serve):
    live = serve(idle_timeout_s=1.0, reap_interval_s=0.05)
    idle = create(live.client, env="release", seed=1)["id"]
    busy = create(live.client, env="release", seed=2)["id"]

    def idle_reaped_while_busy_is_used() -> bool:
        assert live.client.get(f"/api/sessions/{busy}").status_code == 200  # a touch
        return idle not in open_ids(live)

    wait_until(idle_reaped_while_busy_is_used, "the idle session is reaped")
    assert open_ids(live) == {busy}


def test_an_idle_websocket_session_is_closed_with_1001(serve):
    live = serve(**IDLE)
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        assert close_code(sock) == 1001
    wait_until(lambda: len(live.manager) == 0, "the reaped session is gone")


def test_an_idle_websocket_that_never_reset_is_closed_too(serve):
    """Regression: a connection that held no session was never looked at by the reaper, so
    idle sockets could pile up without limit.
    """
    live = serve(**IDLE)
    with ws(live) as sock:
        assert close_code(sock) == 1001


def test_a_websocket_in_use_is_not_closed(serve):
    live = serve(idle_timeout_s=1.0, reap_interval_s=0.05)
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        idle = create(live.client, env="release", seed=2)["id"]
        wait_until(
            lambda: state(sock)["step_count"] == 0 and idle not in open_ids(live),
            "the idle REST session is reaped",
        )
        assert act(sock, "stage")["type"] == "observation"


# -- capacity ---------------------------------------------------------------------------------


def test_the_session_past_the_limit_is_a_503_with_retry_after(serve):
    live = serve(max_sessions=2)
    first = create(live.client, env="release", seed=1)["id"]
    create(live.client, env="release", seed=2)
    full = live.client.post("/api/sessions", json={"env": "release", "seed": 3})
    assert full.status_code == 503
    assert int(full.headers["retry-after"]) > 0
    assert "limit of 2 sessions" in full.json()["detail"]
    assert len(live.manager) == 2  # the refusal took no slot
    live.client.delete(f"/api/sessions/{first}")
    create(live.client, env="release", seed=3)


def test_a_reset_past_the_limit_is_capacity_reached_and_the_connection_stays(serve):
    live = serve(max_sessions=1)
    held = create(live.client, env="release", seed=1)["id"]
    with ws(live) as sock:
        refused = reset(sock, env="release", seed=2)
        assert refused["type"] == "error"
        assert refused["data"]["code"] == "CAPACITY_REACHED"
        assert (refused["data"]["active_sessions"], refused["data"]["max_sessions"]) == (1, 1)
        live.client.delete(f"/api/sessions/{held}")
        assert reset(sock, env="release", seed=2)["type"] == "observation"


def test_a_websocket_session_holds_a_slot_until_its_connection_closes(serve):
    live = serve(max_sessions=1)
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        assert live.client.post("/api/sessions", json={"env": "release"}).status_code == 503
        reset(sock, env="oversight", seed=1)  # a new episode in the same slot
        assert len(live.manager) == 1
    wait_until(
        lambda: live.client.post("/api/sessions", json={"env": "release"}).status_code == 201,
        "the slot is free once the connection is closed",
    )
