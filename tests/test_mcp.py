"""The MCP face, through the official SDK's own client: over stdio (``opsgym mcp`` spawned as a
client would spawn it) and over streamable HTTP (a real server on a free loopback port).

Every MCP answer is checked against the same calls made on a plain ``Episode``: the face adds
transport and episode ids, never knowledge.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mcp", reason="the MCP face needs the mcp extra: pip install -e '.[mcp]'")

import anyio  # noqa: E402
import uvicorn  # noqa: E402
from mcp import Client, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

import opsgym  # noqa: E402
from opsgym.adapters.mcp import ENDED, OpsgymMCP, http_app  # noqa: E402
from opsgym.adapters.toolcalls import render_text, result_text  # noqa: E402
from opsgym.audit.calls import argument_space, draw_args, malformed, takes_text, visible_strings  # noqa: E402
from opsgym.core.registry import catalogue, legal_actions, spec  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
"""The spawned servers' working directory: ``python -m`` imports the source under test."""
ENVS = tuple(opsgym.list_envs())
LIMIT_S = 60
"""No test here waits longer than this on the server."""


def run(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(LIMIT_S):
            return await fn(*args)

    try:
        return anyio.run(bounded)
    except BaseExceptionGroup as group:  # show the failure itself, not anyio's task groups
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]
        raise group from None


async def call(client: Client, name: str, **arguments: Any) -> tuple[list[str], bool]:
    """``(text blocks, is_error)`` of one tool call."""
    reply = await client.call_tool(name, arguments)
    return [block.text for block in reply.content], reply.is_error


async def start(client: Client, **arguments: Any) -> tuple[str, str]:
    """Start an episode: ``(episode_id, first observation)``."""
    (header, observation), error = await call(client, "start_episode", **arguments)
    assert not error, header
    return json.loads(header)["episode_id"], observation


def oracle_calls(env: str, scenario: str, seed: int) -> tuple[opsgym.Episode, list[dict]]:
    episode = opsgym.run(env, scenario, seed, "oracle")
    return episode, episode.record()["calls"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served():
    """Every world on one in-process streamable-HTTP server (``allow_overrides`` for the leak
    test): ``(face, url)``."""
    face = OpsgymMCP(allow_overrides=True)
    # IPPROTO_TCP named, or asyncio leaves Nagle on for the connections (40 ms a call).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(http_app(face), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + LIMIT_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    yield face, f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(LIMIT_S)
    sock.close()


# -- the tool list -----------------------------------------------------------------------


def test_every_world_tool_is_listed_with_its_own_schema_plus_an_episode_id(served):
    face, url = served

    async def listing() -> dict[str, Any]:
        async with Client(url) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = run(listing)
    assert {"start_episode", "observe_episode", "read_verdict"} <= set(tools)
    for env in ENVS:
        assert set(tools["start_episode"].input_schema["properties"]["env"]["enum"]) == set(ENVS)
        for name, tool in spec(env).world.tools.items():
            listed = tools[f"{env}_{name}"]
            schema = listed.input_schema
            assert schema["required"][0] == "episode_id"
            assert schema["properties"].pop("episode_id")["type"] == "string"
            own = tool.parameters
            assert schema["properties"] == own["properties"]
            assert schema["required"][1:] == own.get("required", [])
            assert schema["additionalProperties"] is False
            assert listed.description == tool.description
    assert len(tools) == 3 + sum(len(spec(e).world.tools) for e in ENVS)


def test_tool_names_are_prefixed_however_many_worlds_are_served():
    """One scheme: ``--env release`` and the default (every world) name a tool alike."""
    face = OpsgymMCP(["release"])
    names = [t.name for t in face.tools]
    assert names[3:] == [f"release_{t}" for t in spec("release").world.tools]
    assert set(names) <= {t.name for t in OpsgymMCP().tools}
    with pytest.raises(MCPError, match="Did you mean 'release_deploy'"):
        face.call("deploy", {"episode_id": "x"})
    start = face.tools[0].input_schema
    assert start["properties"]["env"]["default"] == "release"
    assert "env" not in start.get("required", [])
    assert "overrides" not in start["properties"]  # only a leak-test server may force facts


def test_a_call_says_what_it_paid_and_whether_it_ended_the_episode():
    """Structured content: the report, the reward the step paid, ``done``; the observation and
    the verdict are JSON."""
    face = OpsgymMCP(["release"])
    ended = []
    face.on_end = ended.append
    started = face.call("start_episode", {"scenario": "deploy_timeout", "seed": 1})
    episode_id = started.structured_content["episode_id"]
    assert json.loads(started.content[0].text) == started.structured_content
    _, calls = oracle_calls("release", "deploy_timeout", 1)
    twin = opsgym.make("release", "deploy_timeout", 1)
    for step, c in enumerate(calls, 1):
        reply = face.call(f"release_{c['tool']}", {"episode_id": episode_id, **c["args"]})
        expected = twin.step(c["tool"], c["args"])
        assert reply.structured_content == {
            "report": expected.report,
            "rejected": expected.rejected,
            "reward": expected.reward,
            "done": expected.done,
            "step": step,
        }
    assert reply.structured_content["done"] is True and ended == [face.episodes[episode_id]]
    observed = face.call("observe_episode", {"episode_id": episode_id})
    seen = json.loads(observed.content[0].text)
    assert seen == observed.structured_content
    assert seen == {"episode_id": episode_id, "done": True, "observation": twin.observe()}
    verdict = face.call("read_verdict", {"episode_id": episode_id})
    assert json.loads(verdict.content[0].text) == verdict.structured_content
    assert verdict.structured_content["outcome"] == twin.verdict.outcome


def test_a_drawn_seed_is_shown_only_after_the_end():
    """Issue 20: a seed is the episode's hidden facts, so one the client did not choose is not
    echoed at the start (nor in an observation); ``read_verdict`` names it after the end."""
    face = OpsgymMCP(["release"])
    started = face.call("start_episode", {"scenario": "mixed", "split": "test"})
    episode_id = started.structured_content["episode_id"]
    episode = face.episodes[episode_id]
    assert episode.seed % 10 == 9 and "seed" not in started.structured_content
    assert str(episode.seed) not in "".join(c.text for c in started.content)
    observed = face.call("observe_episode", {"episode_id": episode_id})
    assert str(episode.seed) not in observed.content[0].text
    while not episode.done:
        face.call("release_inspect", {"episode_id": episode_id})
    verdict = face.call("read_verdict", {"episode_id": episode_id})
    assert verdict.structured_content["seed"] == episode.seed
    chosen = face.call("start_episode", {"seed": 19})
    assert chosen.structured_content["seed"] == 19  # the client's own choice, echoed


def test_a_rejected_call_is_a_tool_error_that_still_says_what_it_cost():
    face = OpsgymMCP(["release"])
    episode_id = face.call("start_episode", {"seed": 3}).structured_content["episode_id"]
    reply = face.call("release_deploy", {"episode_id": episode_id})
    rejected = face.episodes[episode_id].events[-1]["rejected"]
    assert reply.is_error and reply.structured_content["rejected"] == rejected
    assert reply.structured_content["reward"] < 0 and reply.structured_content["done"] is False


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_arguments_nested_thousands_deep_are_a_tool_error_never_an_exception():
    """Regression (issue 20, item 6): a value nested 5,000 deep raised RecursionError out of
    the face (pydantic's message quotes it with repr); behind ``/mcp`` at 1,000 levels that was
    a 500. Within 64 levels a world tool's arguments are the episode's to reject (recorded)."""
    face = OpsgymMCP(["release"], allow_overrides=True)
    episode_id = face.call("start_episode", {"seed": 3}).structured_content["episode_id"]
    deep = _nested(5000)
    for name, arguments in (
        ("start_episode", {"scenario": deep}),
        ("start_episode", {"scenario": "mixed", "overrides": {"v2_broken": deep}}),
        ("observe_episode", {"episode_id": deep}),
        ("release_inspect", {"episode_id": episode_id, "target": deep}),
        ("read_verdict", {"episode_id": episode_id, "target": deep}),
    ):
        reply = face.call(name, arguments)
        assert reply.is_error and "nested deeper than 64 levels" in reply.content[0].text
    assert face.episodes[episode_id].steps == 0  # refused: nothing ran, nothing recorded
    reply = face.call("release_inspect", {"episode_id": episode_id, "target": _nested(40)})
    assert reply.structured_content["rejected"] == "arguments nested deeper than 32 levels"
    assert face.episodes[episode_id].steps == 1


# -- stdio: the command a client spawns --------------------------------------------------


def test_stdio_command_plays_an_episode_to_its_verdict(tmp_path):
    """``python -m opsgym.cli mcp --env release`` over stdio: start, every call of the oracle's
    episode answering as the plain episode did, the verdict refused before the end and read
    after it, and a step after the end refused."""
    direct, calls = oracle_calls("release", "deploy_timeout", 1)
    twin = opsgym.make("release", "deploy_timeout", 1)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "opsgym.cli", "mcp", "--env", "release", "--transport", "stdio"],
        cwd=SRC,
    )

    async def session() -> None:
        with (tmp_path / "server.err").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert "release_deploy" in names and "deploy" not in names
                episode_id, first = await start(
                    client, env="release", scenario="deploy_timeout", seed=1
                )
                assert first == render_text(twin)
                texts, error = await call(client, "read_verdict", episode_id=episode_id)
                assert error and "still running" in texts[0]
                for i, c in enumerate(calls):
                    texts, error = await call(
                        client, f"release_{c['tool']}", episode_id=episode_id, **c["args"]
                    )
                    expected = twin.step(c["tool"], c["args"])
                    assert texts[0] == result_text(expected)
                    assert error is (expected.rejected is not None)
                    assert (texts[1:] == [ENDED]) is (i == len(calls) - 1)
                texts, error = await call(client, "read_verdict", episode_id=episode_id)
                assert not error
                verdict = json.loads(texts[0])
                assert verdict["outcome"] == direct.verdict.outcome == "deployed_verified"
                assert verdict["failed"] == [] and verdict["steps"] == len(calls)
                texts, error = await call(client, "release_stage", episode_id=episode_id)
                assert error and "is over" in texts[0]

    run(session)


# -- streamable HTTP ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_answers_every_call_as_the_plain_episode_does(served, mode):
    """Each world's oracle episode replayed through MCP (``auto``: the 2026-07-28 protocol;
    ``legacy``: the initialize handshake older hosts speak); the verdict is the episode's."""
    face, url = served

    async def session() -> None:
        async with Client(url, mode=mode) as client:
            for env in ENVS:
                direct, calls = oracle_calls(env, "mixed", 8)
                twin = opsgym.make(env, "mixed", 8)
                episode_id, first = await start(client, env=env, scenario="mixed", seed=8)
                assert first == render_text(twin)
                for c in calls:
                    texts, _ = await call(
                        client, f"{env}_{c['tool']}", episode_id=episode_id, **c["args"]
                    )
                    assert texts[0] == result_text(twin.step(c["tool"], c["args"]))
                (observed,), _ = await call(client, "observe_episode", episode_id=episode_id)
                assert json.loads(observed)["observation"] == twin.observe()
                (text,), error = await call(client, "read_verdict", episode_id=episode_id)
                assert not error
                assert json.loads(text)["outcome"] == direct.verdict.outcome
                assert face.episodes[episode_id].record()["hash"] == direct.record()["hash"]

    run(session)


def test_bad_input_is_a_tool_error_and_the_server_goes_on(served):
    face, url = served

    async def session() -> None:
        async with Client(url) as client:
            episode_id, _ = await start(client, env="release", scenario="nominal", seed=3)
            episode = face.episodes[episode_id]
            # A call the world refuses: recorded, costs `invalid`, comes back as a tool error.
            (text,), error = await call(client, "release_deploy", episode_id=episode_id)
            assert error and json.loads(text) == {"rejected": episode.events[-1]["rejected"]}
            (text,), error = await call(
                client, "release_inspect", episode_id=episode_id, target="everything"
            )
            assert error and "bad arguments for 'inspect'" in text
            assert [e["rejected"] is not None for e in episode.events] == [True, True]
            # Nothing to act on: refused before any episode is touched.
            for name, arguments, says in [
                ("release_stage", {"episode_id": "release-000000000000"}, "unknown episode_id"),
                ("release_stage", {}, "episode_id must be"),
                ("release_stage", {"episode_id": 7}, "episode_id must be"),
                ("fleet_wait", {"episode_id": episode_id}, "runs the release world"),
                ("observe_episode", {"episode_id": episode_id, "x": 1}, "Extra inputs"),
                ("start_episode", {"env": "nope"}, "Unknown environment 'nope'"),
                ("start_episode", {"env": "release", "scenario": "nope"}, "Unknown scenario"),
                ("start_episode", {"env": "release", "seed": -1}, "seed"),
                ("start_episode", {"env": "release", "config": {"bogus": 1}}, "config key"),
                ("start_episode", {"env": "release", "overrides": "x"}, "overrides"),
            ]:
                (text,), error = await call(client, name, **arguments)
                assert error and says in text, (name, arguments, text)
            assert len(episode.events) == 2
            # An unknown tool is a protocol error, as MCP asks; the session survives it.
            with pytest.raises(MCPError, match="Unknown tool 'release_launch'"):
                await client.call_tool("release_launch", {"episode_id": episode_id})
            (text,), error = await call(client, "release_stage", episode_id=episode_id)
            assert not error and len(episode.events) == 3

    run(session)


def test_two_concurrent_clients_play_isolated_episodes(served):
    """Two clients on their own connections, same world, scenario and seed, different calls,
    interleaved: each sees exactly what its own plain episode would."""
    face, url = served
    plans = {
        "a": ["stage", "deploy", "inspect", "health_check", "retry", "inspect"],
        "b": ["inspect", "health_check", "stage", "inspect", "verify", "stage"],
    }
    seen: dict[str, list[str]] = {}
    ids: dict[str, str] = {}

    async def player(key: str) -> None:
        async with Client(url) as client:
            episode_id, _ = await start(client, env="release", scenario="deploy_timeout", seed=5)
            ids[key] = episode_id
            seen[key] = []
            for tool in plans[key]:
                (text, *_), _ = await call(client, f"release_{tool}", episode_id=episode_id)
                seen[key].append(text)
                await anyio.sleep(0)
            (text,), _ = await call(client, "observe_episode", episode_id=episode_id)
            seen[key].append(json.loads(text)["observation"])

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(player, "a")
            group.start_soon(player, "b")

    run(both)
    assert ids["a"] != ids["b"]
    for key, plan in plans.items():
        twin = opsgym.make("release", "deploy_timeout", 5)
        expected = [result_text(twin.step(tool)) for tool in plan] + [twin.observe()]
        assert seen[key] == expected
        assert [e["tool"] for e in face.episodes[ids[key]].events] == plan
    assert seen["a"] != seen["b"]


def test_the_oldest_episode_is_forgotten_past_max_episodes():
    face = OpsgymMCP(["release"], max_episodes=2)
    started = [
        json.loads(face.call("start_episode", {"seed": s}).content[0].text)["episode_id"]
        for s in range(3)
    ]
    assert list(face.episodes) == started[1:]
    reply = face.call("observe_episode", {"episode_id": started[0]})
    assert reply.is_error and "keeps the 2 most recently used" in reply.content[0].text


# -- the leak test, through MCP ----------------------------------------------------------

FACTS_PER_WORLD = 4
STEPS = 10


def _facts(env: str) -> list[tuple[str, dict]]:
    """``family`` first (what ``mixed`` hides), then the first others with two values or more."""
    facts = opsgym.hidden_facts(env, "mixed")
    order = ["family"] + [f for f in facts if f != "family"]
    return [(f, facts[f]) for f in order if len(facts[f]["values"]) > 1][:FACTS_PER_WORLD]


def _draw(episode: opsgym.Episode, avoid: set[str], rng: np.random.Generator) -> tuple[str, dict]:
    """A call to no tool in ``avoid``: legal, in any argument form, or malformed."""
    tools = episode.world.tools
    allowed = {n: t for n, t in tools.items() if n not in avoid}
    table = catalogue(episode.env)
    legal = [table[i] for i in legal_actions(episode) if table[i][0].name in allowed]
    r = rng.random()
    if r < 0.5 and legal:
        tool, args = legal[int(rng.integers(len(legal)))]
        return tool.name, args.model_dump(mode="json")
    if r < 0.85:
        tool = list(allowed.values())[int(rng.integers(len(allowed)))]
        strings = visible_strings(episode.observe()) if takes_text(tool) else ()
        return tool.name, draw_args(argument_space(tool, strings), rng)
    name, raw = malformed(allowed, rng)
    if name not in allowed or not isinstance(raw, dict):
        return next(iter(allowed)), {"unexpected": 1}  # MCP arguments are always an object
    return name, raw


def _without_reward(answer: str) -> str:
    reply = json.loads(answer)
    reply["structured_content"].pop("reward")
    return json.dumps(reply)


async def _lockstep(
    client: Client, face: OpsgymMCP, env: str, fact: str, info: dict, seed: int, avoid: set[str]
) -> tuple[int, str | None]:
    """Drive one episode per forced value with the same calls, comparing every response.

    Returns the steps taken and, if the episode ended before ``STEPS``, the tool that ended it.
    """
    values = info["values"][:2]
    ids, answers = [], []
    for value in values:
        reply = await client.call_tool(
            "start_episode",
            {"env": env, "scenario": "mixed", "seed": seed, "overrides": {fact: value}},
        )
        ids.append(json.loads(reply.content[0].text)["episode_id"])
        answers.append(reply.model_dump_json().replace(ids[-1], "ID"))
    assert answers[0] == answers[1], f"{fact}={values}: start_episode"
    rng = np.random.default_rng([seed, zlib.crc32(fact.encode())])
    first = face.episodes[ids[0]]
    for step in range(1, STEPS + 1):
        name, args = _draw(first, avoid, rng)
        answers = []
        for episode_id in ids:
            for tool, arguments in [
                (f"{env}_{name}", {**args, "episode_id": episode_id}),
                ("observe_episode", {"episode_id": episode_id}),
                ("read_verdict", {"episode_id": episode_id}),
            ]:
                reply = await client.call_tool(tool, arguments)
                answers.append(reply.model_dump_json().replace(episode_id, "ID"))
        if first.done:  # the verdict and the last reward are the truth's to tell at the end
            del answers[5], answers[2]
            answers[0], answers[2] = (_without_reward(a) for a in (answers[0], answers[2]))
        half = len(answers) // 2
        assert answers[:half] == answers[half:], f"{fact}={values}: step {step}, {name}({args})"
        if first.done:
            return step, name if step < STEPS else None
    return STEPS, None


@pytest.mark.parametrize("env", ENVS)
def test_no_mcp_response_depends_on_a_forced_fact_until_a_revealing_tool(served, env):
    """Force each fact both ways; drive both episodes with the same calls (none to a tool in
    the fact's ``revealed_by``); every MCP response (the start, each call, the observation, the
    refused verdict) must be identical, the episode ids aside.

    Random calls end many episodes at once (a reboot, a hold), and deeper states are where a
    leak hides: a tool that ends a sequence early is avoided from then on, and the fact is
    driven again (at most twice more).
    """
    face, url = served
    tools = spec(env).world.tools
    enders = {spec(env).terminal} if spec(env).terminal else set()

    async def session() -> None:
        async with Client(url) as client:
            for fact, info in _facts(env):
                quiet = set(info["revealed_by"])
                for seed in (2, 3, 4):
                    cornered = quiet | enders >= set(tools)  # every tool left ends it: so be it
                    avoid = quiet if cornered else quiet | enders
                    _, ender = await _lockstep(client, face, env, fact, info, seed, avoid)
                    if ender is None:
                        break
                    enders.add(ender)
                    if cornered:
                        break

    run(session)


def test_a_revealing_tool_does_show_the_fact_through_mcp(served):
    """The comparison above can fail: ``deploy`` reveals whether a deploy times out."""
    _, url = served

    async def session() -> list[str]:
        reports = []
        async with Client(url) as client:
            for value in (True, False):
                episode_id, _ = await start(
                    client,
                    env="release",
                    scenario="deploy_timeout",
                    seed=1,
                    overrides={"deploy_times_out": value},
                )
                await call(client, "release_stage", episode_id=episode_id)
                (text, *_), _ = await call(client, "release_deploy", episode_id=episode_id)
                reports.append(text)
        return reports

    timed_out, deployed = run(session)
    assert timed_out != deployed


# -- the command, over HTTP --------------------------------------------------------------


def test_http_command_serves_on_a_free_port_and_stops():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "opsgym.cli", "mcp", "--transport", "http"]
        + ["--env", "oversight", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=SRC,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + LIMIT_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)

        async def session() -> list[str]:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                episode_id, _ = await start(client, seed=4)
                texts, _ = await call(
                    client, "oversight_inspect_ticket", episode_id=episode_id, slot=0
                )
                return texts

        twin = opsgym.make("oversight", None, 4)
        assert run(session) == [result_text(twin.step("inspect_ticket", {"slot": 0}))]
    finally:
        proc.terminate()
        proc.wait(LIMIT_S)
    assert b"tools for oversight at http://127.0.0.1" in proc.stderr.read()
