"""OpenEnv's WebSocket protocol on a real server: reset, step, state and close, the replies, the
error codes, and the store that every ended episode reaches.
"""

from __future__ import annotations

import logging
import socket
import time
import typing
from typing import Any

import pytest

import opsgym
from opsgym.core.registry import spec
from opsgym.server.models import WSMessage
from tests.server.wire import (  # noqa: F401 -- *_server: the fixtures shared, plain
    ENVS,
    KNOWN,
    act,
    alone,
    as_served,
    ask,
    calls_of,
    close_code,
    plain_server,
    reset,
    shared_server,
    state,
    stored,
    stored_as,
    verdict_of,
    wait_until,
    ws,
)


def test_reset_starts_the_episode_its_data_names(shared):
    with ws(shared) as sock:
        reply = reset(
            sock,
            env="fleet",
            scenario="easy",
            seed=11,
            config={"level": 2},
            split="train",
            episode_id="run-7",
        )
        assert reply["type"] == "observation"
        data = reply["data"]
        assert (data["reward"], data["done"]) == (None, False)
        assert "verdict" not in data
        twin = opsgym.make("fleet", "easy", 11, config={"level": 2})
        assert {k: v for k, v in data["observation"].items() if k != "tools"} == twin.observe()
        assert [t["function"]["name"] for t in data["observation"]["tools"]] == list(
            spec("fleet").world.tools
        )
        assert state(sock) == {
            "episode_id": "run-7",
            "step_count": 0,
            "env": "fleet",
            "scenario": "easy",
            "done": False,
            "steps_left": twin.max_steps,
        }


def test_reset_without_data_starts_the_default_world_on_a_drawn_train_seed(shared):
    with ws(shared) as sock:
        assert reset(sock)["type"] == "observation"
        now = state(sock)
        assert (now["env"], now["step_count"]) == ("release", 0)
        (session,) = [  # unlabelled: the episode's drawn id, not the session's handle
            s for s in list(shared.manager.sessions.values()) if s.state() == now
        ]
        assert (session.kind, session.split, session.seed_given) == ("ws", "train", False)


def test_a_step_answers_observation_reward_and_done_and_state_counts_it(shared):
    with ws(shared) as sock:
        reset(sock, env="release", scenario="nominal", seed=3)
        reply = act(sock, "stage")
        twin = opsgym.make("release", "nominal", 3)
        result = twin.step("stage")
        assert reply == {
            "type": "observation",
            "data": {"observation": twin.observe(), "reward": result.reward, "done": False},
        }
        assert state(sock)["step_count"] == 1


@pytest.mark.parametrize("env", ENVS)
def test_the_oracles_calls_over_the_websocket_reach_the_oracles_verdict(shared, env):
    """Every reply shows what the same call showed alone; the ending step carries the verdict;
    the ended episode is in the store, replays, and was counted by the server's estimator.
    """
    seed = 4
    solo = alone(env, "mixed", seed)
    with ws(shared) as sock:
        reset(sock, env=env, scenario="mixed", seed=seed)
        for event in solo.events:
            reply = act(sock, event["tool"], event["args"])
            assert reply["type"] == "observation", reply
            data = reply["data"]
            assert data["observation"]["last"]["report"] == event["report"]
            assert data["done"] is event["done"]
            assert ("verdict" in data) is event["done"]
        assert data["verdict"] == verdict_of(solo)
        assert state(sock)["done"] is True
    served = as_served(env, "mixed", seed, calls_of(solo.events))
    (row,) = stored_as(shared, served)  # the tokens differ from solo's: counted, not fixed
    assert (row["outcome"], row["seed"], row["steps"]) == (solo.verdict.outcome, seed, solo.steps)
    assert (row["policy"], row["token_source"], row["split"]) == ("client", "estimate", "train")
    record = shared.client.get(f"/api/episodes/{row['id']}").json()["record"]
    assert calls_of(record["events"]) == calls_of(solo.events)
    assert record["verdict"] == solo.verdict.to_dict()
    assert [e["report"] for e in record["events"]] == [e["report"] for e in solo.events]
    assert shared.client.get(f"/api/episodes/{row['id']}/replay").json()["match"] is True


def test_a_step_before_any_reset_is_an_error_and_the_connection_lives_on(shared):
    with ws(shared) as sock:
        reply = act(sock, "stage")
        assert reply["type"] == "error"
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert "reset" in reply["data"]["message"]
        assert reset(sock, seed=1)["type"] == "observation"
        assert state(sock)["step_count"] == 0


def test_state_before_any_reset_is_an_empty_state(live):
    with ws(live) as sock:
        assert state(sock) == {
            "episode_id": None,
            "step_count": 0,
            "env": None,
            "scenario": None,
            "done": False,
            "steps_left": None,
        }
    assert len(live.manager) == 0  # asking opens no session


BAD = [
    ("{not json", "INVALID_JSON", None),
    ("[1, 2]", "UNKNOWN_TYPE", None),
    ({"data": {"tool": "stage"}}, "UNKNOWN_TYPE", None),
    ({"type": "dance"}, "UNKNOWN_TYPE", None),
    ({"type": "step"}, "VALIDATION_ERROR", ["step", "data"]),
    ({"type": "step", "data": {"tool": "stage", "force": True}}, "VALIDATION_ERROR", ["force"]),
    ({"type": "step", "data": {"tool": 5}}, "VALIDATION_ERROR", ["tool"]),
    ({"type": "step", "data": {"tool": ""}}, "VALIDATION_ERROR", ["tool"]),
    ({"type": "step", "data": {"tool": "stage", "args": [1]}}, "VALIDATION_ERROR", ["args"]),
    ({"type": "step", "data": {"tool": "stage"}, "id": 1}, "VALIDATION_ERROR", ["step", "id"]),
    ({"type": "step", "data": ["stage"]}, "VALIDATION_ERROR", ["step", "data"]),
    ({"type": "close", "data": {}}, "VALIDATION_ERROR", ["close", "data"]),
    ({"type": None}, "UNKNOWN_TYPE", None),
    ({"type": "state", "data": {}}, "VALIDATION_ERROR", ["state", "data"]),
    ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR", ["seed"]),
    ({"type": "reset", "data": {"colour": "red"}}, "VALIDATION_ERROR", ["colour"]),
    ({"type": "reset", "data": {"split": "holdout"}}, "VALIDATION_ERROR", ["split"]),
    ({"type": "reset", "data": {"overrides": {}}}, "VALIDATION_ERROR", ["overrides"]),
]


@pytest.mark.parametrize(
    ("message", "code", "loc"), BAD, ids=[f"{i}-{c}" for i, (_, c, _) in enumerate(BAD)]
)
def test_a_malformed_message_gets_its_openenv_error_code_and_costs_nothing(
    plain, message, code, loc
):
    with ws(plain) as sock:  # overrides refused, as on any real server
        reset(sock, env="release", scenario="nominal", seed=2)
        act(sock, "stage")
        reply = ask(sock, message)
        assert reply["type"] == "error"
        assert reply["data"]["code"] == code
        if loc is not None:
            assert [list(e["loc"]) for e in reply["data"]["errors"]] == [loc]
        now = state(sock)
        assert (now["step_count"], now["scenario"]) == (1, "nominal")
        assert act(sock, "deploy")["data"]["observation"]["step"] == 2


@pytest.mark.parametrize(
    ("message", "named"),
    [
        ({"type": "dance"}, "'dance'"),
        ({"type": "STEP", "data": {"tool": "stage"}}, "'STEP'"),
        ({"type": ["step"]}, "['step']"),
        ({"data": {"tool": "stage"}}, "None"),
        ("[1, 2]", "None"),
        ('"step"', "None"),
    ],
)
def test_a_message_of_no_known_type_is_refused_as_unknown_type_naming_it(plain, message, named):
    """The reply OpenEnv's server gives: its code and message, no field errors (whatever the
    parser says about the union's tag stays inside).
    """
    with ws(plain) as sock:
        reply = ask(sock, message)
        assert reply == {
            "type": "error",
            "data": {"message": f"Unknown message type: {named}", "code": "UNKNOWN_TYPE"},
        }
        assert state(sock)["step_count"] == 0  # the connection serves on


def test_every_message_type_of_the_union_is_answered(plain):
    """Each member of ``WSMessage`` (OpenEnv's incoming union) has its reply, ``close`` ends the
    connection: a type added to the union and not to the server would fail here.
    """
    members = typing.get_args(typing.get_args(WSMessage)[0])
    kinds = {m.model_fields["type"].annotation.__args__[0] for m in members}
    assert kinds == {"reset", "step", "state", "close"}
    with ws(plain) as sock:
        assert reset(sock, env="release", seed=1)["type"] == "observation"
        assert act(sock, "inspect")["type"] == "observation"
        assert ask(sock, {"type": "state"})["type"] == "state"
        sock.send('{"type": "close"}')
        assert close_code(sock) == 1000
    wait_until(lambda: len(plain.manager) == 0, "the closed connection's session is closed")


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"env": "nowhere"}, KNOWN),
        ({"env": "release", "scenario": "sunny"}, "nominal"),
        ({"env": "release", "seed": 1, "split": "test"}, "'train' split"),
        ({"env": "oversight", "config": {"mood": 1}}, "Known: archetype_mix, difficulty"),
    ],
)
def test_a_reset_the_server_cannot_start_is_an_execution_error_naming_what_exists(
    shared, data, named
):
    with ws(shared) as sock:
        reset(sock, env="release", seed=5)
        act(sock, "stage")
        reply = reset(sock, **data)
        assert reply["type"] == "error"
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert named in reply["data"]["message"]
        assert state(sock)["step_count"] == 1  # the running episode is untouched


def test_an_unknown_tool_or_bad_arguments_are_recorded_rejected_steps(shared):
    solo = alone("release", "nominal", 6)
    with ws(shared) as sock:
        reset(sock, env="release", scenario="nominal", seed=6)
        unknown = act(sock, "stagee")["data"]
        assert unknown["observation"]["last"]["rejected"].startswith("unknown tool 'stagee'")
        bad = act(sock, "shift_traffic", {"percent": "most"})["data"]
        assert bad["observation"]["last"]["rejected"]
        assert bad["reward"] < 0 and not bad["done"]
        assert state(sock)["step_count"] == 2
        for event in solo.events:  # then played out by the oracle's calls
            data = act(sock, event["tool"], event["args"])["data"]
        assert data["done"]
    rejected = [("stagee", {}), ("shift_traffic", {"percent": "most"})]
    (row,) = stored_as(shared, as_served("release", "nominal", 6, rejected + calls_of(solo.events)))
    record = shared.client.get(f"/api/episodes/{row['id']}").json()["record"]
    assert [e["rejected"] is not None for e in record["events"][:3]] == [True, True, False]
    assert row["steps"] == solo.steps + 2


def test_a_step_after_the_end_is_an_error_and_reset_starts_the_next_episode(shared):
    solo = alone("oversight", "mixed", 2)
    with ws(shared) as sock:
        reset(sock, env="oversight", scenario="mixed", seed=2, episode_id="first")
        for event in solo.events:
            act(sock, event["tool"], event["args"])
        over = act(sock, "inspect_ticket", {"slot": 0})
        assert over["data"]["code"] == "EXECUTION_ERROR"
        assert "is over" in over["data"]["message"]
        reply = reset(sock, env="release", seed=9, episode_id="second")
        assert reply["data"]["observation"]["step"] == 0
        assert state(sock)["episode_id"] == "second"
        mine = [s for s in shared.manager.sessions.values() if s.label == "second"]
        assert len(mine) == 1 and mine[0].kind == "ws"  # one connection, one session
    served = as_served("oversight", "mixed", 2, calls_of(solo.events))
    (row,) = stored_as(shared, served)  # saved once, at its end, not again on reset or close
    assert row["outcome"] == solo.verdict.outcome


def test_an_episode_left_unfinished_is_not_saved(live):
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        act(sock, "stage")
    wait_until(lambda: len(live.manager) == 0, "the session closes with its connection")
    live.flush()
    assert stored(live.client) == []


def test_close_ends_the_connection_normally_and_frees_the_session(live):
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        assert len(live.manager) == 1
        sock.send('{"type": "close"}')
        assert close_code(sock) == 1000
    wait_until(lambda: len(live.manager) == 0, "the session closes")


def test_a_connection_whose_session_was_closed_gets_a_session_error(live):
    with ws(live) as sock:
        reset(sock, env="release", seed=1)
        (sid,) = live.manager.sessions
        live.manager.close(sid)  # as the reaper does, between two messages
        reply = act(sock, "stage")
        assert reply["data"]["code"] == "SESSION_ERROR"
        assert close_code(sock) == 1001


def test_every_reset_on_one_connection_gives_the_new_episode_a_new_id(shared):
    """Rollouts keyed on ``state().episode_id`` must not merge a connection's episodes."""
    with ws(shared) as sock, ws(shared) as other:
        drawn = []
        for seed in (1, 2, 1):  # the same seed again is another episode all the same
            reset(sock, env="release", seed=seed)
            drawn.append(state(sock)["episode_id"])
            assert state(sock)["episode_id"] == drawn[-1]  # stable within the episode
        act(sock, "stage")
        assert state(sock)["episode_id"] == drawn[-1]
        reset(other, env="release", seed=1)
        drawn.append(state(other)["episode_id"])
        assert all(isinstance(i, str) and i for i in drawn)
        assert len(set(drawn)) == len(drawn), drawn
        for _ in range(2):  # a label the client chose is kept as it was given
            reset(sock, env="release", seed=3, episode_id="mine")
            assert state(sock)["episode_id"] == "mine"
        reset(sock, env="release", seed=3)
        assert state(sock)["episode_id"] not in {*drawn, "mine"}


def test_a_validation_error_names_the_field_and_the_reason_in_its_message(plain):
    """OpenEnv's client shows only ``message`` and ``code``: the details must be in the text."""
    with ws(plain) as sock:
        reply = ask(sock, {"type": "reset", "data": {"split": "holdout", "colour": "red"}})
        data = reply["data"]
        assert data["code"] == "VALIDATION_ERROR"
        assert len(data["errors"]) == 2  # the structured details stay
        for error in data["errors"]:
            assert error["loc"][-1] in data["message"]
            assert error["msg"] in data["message"]
        assert data["message"].startswith("Invalid message: ")
        many = ask(sock, {"type": "reset", "data": {f"x{i}": i for i in range(6)}})["data"]
        assert many["message"].endswith("and 3 more") and len(many["errors"]) == 6


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _leave(sock: Any, how: str) -> None:
    """Send what ``how`` names, then leave without a reset having ended anything."""
    if how == "state-then-close":
        state(sock)
    elif how == "state-unread-then-close":
        sock.send('{"type": "state"}')
    elif how == "step-before-reset":
        assert act(sock, "stage")["data"]["code"] == "EXECUTION_ERROR"
    elif how == "step-unread-before-reset":
        sock.send('{"type": "step", "data": {"tool": "stage"}}')
    elif how == "reset-unread-then-drop":  # no close frame: the TCP connection just ends
        sock.send('{"type": "reset", "data": {"env": "release"}}')
        sock.socket.shutdown(socket.SHUT_RDWR)
    sock.close()


LEAVING = [
    "close-after-connect",
    "state-then-close",
    "state-unread-then-close",
    "step-before-reset",
    "step-unread-before-reset",
    "reset-unread-then-drop",
]


@pytest.mark.parametrize("how", LEAVING)
def test_a_client_leaving_without_a_reset_logs_no_error(live, how):
    """Regression: the server logged ``Exception in ASGI application`` with a traceback when
    a client left (10 of 10 after state-then-close); leaving is normal: a debug line at most.
    """
    handler = _Records()
    # Added after the server started: uvicorn's logging config replaces handlers set before.
    watched = [logging.getLogger(name) for name in ("uvicorn.error", "opsgym.server")]
    for logger in watched:
        logger.addHandler(handler)
    try:
        for _ in range(10):
            with ws(live) as sock:
                _leave(sock, how)
        wait_until(lambda: len(live.manager) == 0, "every connection's session closes")
        with ws(live) as sock:  # the server is still well
            assert reset(sock, env="release", seed=1)["type"] == "observation"
            sock.close()
        wait_until(lambda: len(live.manager) == 0, "the last session closes")
        time.sleep(0.2)  # a late log line from the last close
    finally:
        for logger in watched:
            logger.removeHandler(handler)
    loud = [
        f"{r.name} {r.levelname}: {r.getMessage()}"
        for r in handler.records
        if r.levelno > logging.DEBUG or r.exc_info
    ]
    assert loud == []
