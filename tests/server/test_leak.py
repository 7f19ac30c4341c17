"""The leak test through the server (the method of :mod:`opsgym.audit.leak`): force a hidden fact
to each of its values, drive one REST session and one WebSocket per value with the same calls,
none to a tool that may reveal the fact, and compare every response an agent could get while
the episode runs: session create, each step, GET of the session and of the session list, the
WebSocket's reset, step and state replies. Only session ids and timestamps may differ; once the
episode has ended, what the truth pays for (verdict, family, return, the last reward) may too.
"""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

import numpy as np
import pytest

import opsgym
from opsgym.audit.calls import argument_space, draw_args, malformed, takes_text, visible_strings
from opsgym.core.registry import catalogue, legal_actions, spec
from tests.conftest import playable
from tests.server.wire import (  # noqa: F401 -- shared_server: the fixture shared
    ENVS,
    ask,
    reset,
    shared_server,
    state,
    ws,
)

SCENARIOS = {env: ("mixed", next(f.name for f in spec(env).families() if f.faults)) for env in ENVS}
"""Per world: ``mixed`` and its first family with a fault."""
FACTS, VALUES, SEEDS, STEPS = 3, 3, (2, 3, 4), 8
"""Per scenario: facts forced, values of each (at most), seeds, calls per sequence."""

TRUTH_PAID = ("verdict", "family", "return", "reward", "components")
"""What a session shows once its episode is over, computed from the truth by design (the
ending step's reward and its components pay the outcome and the settled components; earlier
rewards were compared step by step)."""


def facts(env: str, scenario: str) -> list[tuple[str, dict[str, Any]]]:
    """``family`` first where the scenario hides it, then the first others with two values."""
    hidden = opsgym.hidden_facts(env, scenario)
    order = sorted(hidden, key=lambda f: f != "family")
    return [(f, hidden[f]) for f in order if len(hidden[f]["values"]) > 1][:FACTS]


def draw(episode: opsgym.Episode, allowed: set[str], rng: np.random.Generator) -> tuple:
    """A call to an ``allowed`` tool: legal, in any argument form, or malformed."""
    tools = {n: t for n, t in episode.world.tools.items() if n in allowed}
    table = catalogue(episode.env)
    legal = [table[i] for i in legal_actions(episode) if table[i][0].name in tools]
    r = rng.random()
    if r < 0.5 and legal:
        tool, args = legal[int(rng.integers(len(legal)))]
        return tool.name, args.model_dump(mode="json")
    if r < 0.85:
        tool = list(tools.values())[int(rng.integers(len(tools)))]
        strings = visible_strings(episode.observe()) if takes_text(tool) else ()
        return tool.name, draw_args(argument_space(tool, strings), rng)
    name, raw = malformed(tools, rng)
    return (name, raw) if name in tools else (next(iter(tools)), raw)  # no unknown revealer


def blind(reply: Any, sid: str, ended: bool) -> str:
    """A reply as comparable across forced values: the session id and timestamps masked and,
    once the episode has ended, what the truth pays for taken out.
    """
    reply = _strip(reply, ended)
    return repr(reply).replace(sid, "<id>")


def _strip(value: Any, ended: bool) -> Any:
    if isinstance(value, list):
        return [_strip(v, ended) for v in value]
    if not isinstance(value, dict):
        return value
    hidden = {"created_at", *TRUTH_PAID} if ended else {"created_at"}
    return {k: _strip(v, ended) for k, v in value.items() if k not in hidden}


class Agent:
    """One forced value's REST session and WebSocket, sent the same calls as the others."""

    def __init__(self, live: Any, env: str, scenario: str, seed: int, forced: dict):
        self.live = live
        self.stack = contextlib.ExitStack()
        self.sock = self.stack.enter_context(ws(live))
        start = {"env": env, "scenario": scenario, "seed": seed, "overrides": forced}
        created = live.client.post("/api/sessions", json=start)
        assert created.status_code == 201, created.text
        self.sid = created.json()["id"]
        opened = reset(self.sock, **start)
        self.wsid = state(self.sock)["episode_id"]  # unlabelled: the episode's drawn id
        self.first = [self._rest(created.json(), False), self._ws(opened, False)]

    def _rest(self, reply: Any, ended: bool) -> str:
        return blind(reply, self.sid, ended)

    def _ws(self, reply: Any, ended: bool) -> str:
        return blind(reply, self.wsid, ended)

    def send(self, tool: Any, args: Any) -> tuple[list[str], bool]:
        """Every response to one call, and whether the episode has ended."""
        c = self.live.client
        stepped = c.post(f"/api/sessions/{self.sid}/step", json={"tool": tool, "args": args})
        over_ws = ask(self.sock, {"type": "step", "data": {"tool": tool, "args": args}})
        ended = stepped.status_code == 200 and stepped.json()["session"]["done"]
        listed = [s for s in c.get("/api/sessions").json() if s["id"] == self.sid]
        seen = [
            f"{stepped.status_code} {self._rest(stepped.json(), ended)}",
            self._rest(c.get(f"/api/sessions/{self.sid}").json(), ended),
            self._rest(listed, ended),
            self._ws(over_ws, ended),
            self._ws(ask(self.sock, {"type": "state"}), ended),
        ]
        return seen, ended

    def close(self) -> None:
        self.stack.close()
        self.live.client.delete(f"/api/sessions/{self.sid}")


def lockstep(
    live: Any, env: str, scenario: str, fact: str, info: dict, seed: int, enders: set[str]
) -> int:
    """Drive one agent per forced value with the same calls; assert every response matches the
    first value's. Returns the calls made.

    Calls avoid ``enders`` where they can (the states deeper in are where a leak hides); a tool
    that ends a sequence joins them.
    """
    values = info["values"][:VALUES]
    seed = playable(env, scenario, seed, values if fact == "family" else ())
    agents = [Agent(live, env, scenario, seed, {fact: v}) for v in values]
    try:
        where = f"{env}/{scenario} seed {seed}: {fact} forced to {values}"
        for agent in agents[1:]:
            assert agent.first == agents[0].first, f"{where}, at the start"
        quiet = set(spec(env).world.tools) - set(info["revealed_by"])
        allowed = quiet - enders or quiet
        if not allowed:
            return 0
        twin = opsgym.make(env, scenario, seed, overrides={fact: values[0]})
        rng = np.random.default_rng([seed, zlib.crc32(fact.encode())])
        for step in range(1, STEPS + 1):
            tool, args = draw(twin, allowed, rng)
            answers = [agent.send(tool, args) for agent in agents]
            for seen, _ in answers[1:]:
                assert seen == answers[0][0], f"{where}, call {step}: {tool}({args!r})"
            if isinstance(tool, str) and isinstance(args, dict) and 0 < len(tool) <= 128:
                twin.step(tool, args)  # the server took it (else all answered 422 alike)
            if answers[0][1]:
                enders.add(tool)
                return step
        return STEPS
    finally:
        for agent in agents:
            agent.close()


@pytest.mark.parametrize("env", ENVS)
def test_no_response_of_any_route_depends_on_a_forced_fact_until_a_revealing_tool(shared, env):
    enders = {spec(env).terminal} if spec(env).terminal else set()
    calls = 0
    for scenario in SCENARIOS[env]:
        for fact, info in facts(env, scenario):
            for seed in SEEDS:
                calls += lockstep(shared, env, scenario, fact, info, seed, enders)
    assert calls >= len(SCENARIOS[env]) * len(SEEDS) * 2  # the sequences did play


def test_a_revealing_tool_does_show_the_fact_so_the_comparison_can_fail(shared):
    """``deploy`` reveals whether a deploy times out: the lockstep above would catch it."""
    seen = []
    for value in (True, False):
        agent = Agent(shared, "release", "deploy_timeout", 1, {"deploy_times_out": value})
        try:
            agent.send("stage", {})
            seen.append(agent.send("deploy", {})[0])
        finally:
            agent.close()
    (step, got, _, ws_step, _), (step_, got_, _, ws_step_, _) = seen
    assert step != step_ and got != got_ and ws_step != ws_step_
