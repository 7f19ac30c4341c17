"""No face hands the agent the episode's seed, the episode or its family before the end.

The seed is the episode's hidden truth: a policy that holds it can play twins of the episode
and keep the best calls (issue 20). Each test plays an episode through one face with an agent
that records everything it is given, and searches all of it, nested, for the seed as an
integer and as text. The seeds are large (``SEED``), so that no step count or percentage can
pass for them.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.agents import Seat, play, policy_rng
from opsgym.agents.base import PREFIXED, RandomPolicy, legal_calls
from opsgym.core.episode import Episode
from opsgym.core.exploits import Privileged
from opsgym.core.registry import spec

SEED = 987_654_329
"""A test-split seed (it ends in 9) no counter of an episode reaches."""
TRAIN_SEED = 987_654_321
"""A train-split seed, for the faces that play the train split."""
ENVS = ("release", "oversight", "fleet")


def mentions(value: Any, seed: int, path: str = "$") -> list[str]:
    """Where ``seed`` appears in ``value``: as a number, or within any text (keys included)."""
    text = str(seed)
    if isinstance(value, Episode):
        return [f"{path}: the Episode itself"]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | np.integer):
        return [path] if int(value) == seed else []
    if isinstance(value, float | np.floating):
        return [path] if float(value) == float(seed) else []
    if isinstance(value, str | bytes):
        return (
            [path] if text in (value if isinstance(value, str) else value.decode("latin-1")) else []
        )
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return mentions(value.tolist(), seed, path)
        return [path] if value.size and bool((value == seed).any()) else []
    if isinstance(value, np.random.Generator):
        found = mentions(value.bit_generator.seed_seq.entropy, seed, f"{path}.seed_seq")
        return found + mentions(value.bit_generator.seed_seq.spawn_key, seed, f"{path}.spawn")
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            out += mentions(k, seed, f"{path}[key {k!r}]") + mentions(v, seed, f"{path}[{k!r}]")
        return out
    if isinstance(value, list | tuple | set | frozenset):
        return [m for i, v in enumerate(value) for m in mentions(v, seed, f"{path}[{i}]")]
    if isinstance(value, Seat):
        public = {n: getattr(value, n) for n in dir(value) if not n.startswith("_")}
        return mentions({n: v for n, v in public.items() if not callable(v)}, seed, path)
    if hasattr(value, "__dict__"):
        return mentions(vars(value), seed, path)
    return mentions(repr(value), seed, path)


class Spy:
    """A policy that keeps everything it is handed: ``reset``'s arguments, each observation and
    legal list, each result. It plays the first legal call (``complete`` when none is).
    """

    name = "spy"
    deterministic = True

    def __init__(self) -> None:
        self.given: list[Any] = []

    def reset(self, *args: Any, **kwargs: Any) -> None:
        self.given.append(("reset", args, kwargs))

    def act(self, obs: dict[str, Any], legal: list[Any]) -> Any:
        self.given.append(("act", obs, legal))
        return legal[0] if legal else ("complete", {})

    def feedback(self, result: Any) -> None:
        self.given.append(("feedback", result))


class SeatSpy(Spy):
    """A policy that steps the episode itself: it is handed a seat, and keeps it."""

    def drive(self, seat: Any) -> None:
        self.given.append(("drive", seat))
        assert isinstance(seat, Seat) and not isinstance(seat, Episode)
        for hidden in ("seed", "family", "world", "events", "record", "truth", "scenario"):
            assert not hasattr(seat, hidden), hidden
        while not seat.done:
            obs, legal = seat.observe(), legal_calls(seat)
            self.given.append(("seat", obs, legal, seat.steps, seat.max_steps, seat.tools))
            seat.step(*(legal[0] if legal else ("complete", {})))


# -- the policy's own randomness --------------------------------------------------------------


def test_a_policys_generator_draws_the_old_numbers_but_cannot_name_the_seed():
    ours = policy_rng(SEED)
    old = np.random.default_rng([0x0B5, SEED])
    assert mentions(old, SEED), "the search must see a seed a generator carries"
    assert mentions(ours, SEED) == []
    assert np.array_equal(ours.integers(1 << 30, size=50), old.integers(1 << 30, size=50))


def test_random_policy_is_reset_with_a_generator_not_a_seed():
    a, b = RandomPolicy(), RandomPolicy()
    played = [play(opsgym.make("release", "mixed", SEED), p) for p in (a, b)]
    assert [e["tool"] for e in played[0].events] == [e["tool"] for e in played[1].events]
    assert mentions(a._rng, SEED) == []


# -- play and opsgym eval -----------------------------------------------------------------------


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("kind", [Spy, SeatSpy])
def test_play_hands_a_policy_no_seed_and_no_episode(env, kind):
    policy = kind()
    episode = play(opsgym.make(env, "mixed", SEED, max_steps=12), policy)
    assert episode.done and episode.seed == SEED
    assert policy.given and mentions(policy.given, SEED) == []
    assert not any(isinstance(g, Episode) for entry in policy.given for g in entry)


@pytest.mark.parametrize("kind", [Spy, SeatSpy])
def test_an_evaluation_hands_a_policy_no_seed(kind, monkeypatch):
    from opsgym.evaluation.runner import EvalConfig, Task, play_task

    made: list[Spy] = []

    def factory(env: str, arg: str) -> Spy:
        made.append(kind())
        return made[-1]

    monkeypatch.setitem(PREFIXED, "spy", factory)
    cfg = EvalConfig("release", ("spy:x",), max_steps=12)
    for trial in (0, 1):
        episode = play_task(cfg, Task("spy:x", "mixed", SEED, trial))
        assert episode.seed == SEED
    assert len(made) == 2 and all(p.given for p in made)
    assert mentions([p.given for p in made], SEED) == []
    trial_seed = SEED + (1 << 32)  # the second trial's generator is seeded from it
    assert mentions(made[1].given, trial_seed) == []


def test_the_oracle_and_the_exploits_are_agents_and_only_family_priors_are_privileged():
    for env in ENVS:
        for name, factory in spec(env).policies.items():
            assert not getattr(factory(), "privileged", False), (env, name)
        for exploit in spec(env).exploits:
            policy = exploit.policy()
            told = bool(getattr(policy, "privileged", False))
            assert told == exploit.family_aware, (env, exploit.name)
            if told:
                assert isinstance(policy, Privileged)


def test_the_audit_tells_a_family_aware_exploit_its_family_and_no_seed():
    from opsgym.audit.exploits import play_many

    class Told(Spy):
        privileged = True

    policy = Told()
    play_many(spec("release"), policy, "mixed", [SEED], family_aware=True)
    (_, args, kwargs) = policy.given[0]
    assert set(kwargs) == {"family"} and isinstance(args[0], np.random.Generator)
    assert mentions(policy.given, SEED) == []


# -- Gym and the batched twins ------------------------------------------------------------------


@pytest.mark.parametrize("env", ENVS)
def test_gym_infos_never_hold_the_seed(env):
    genv = gym.make(spec(env).gym_id, scenario="mixed", split="test", max_steps=15)
    seen: list[Any] = []
    obs, info = genv.reset(seed=3, options={"episode_seed": SEED})
    seen += [obs, info]
    done = False
    while not done:
        mask = genv.unwrapped.action_masks()
        obs, reward, terminated, truncated, info = genv.step(int(np.flatnonzero(mask)[0]))
        seen += [obs, reward, info]
        done = terminated or truncated
    assert "verdict" in info
    assert mentions(seen, SEED) == []
    assert genv.unwrapped.episode.seed == SEED  # the harness's, after the end


@pytest.mark.parametrize("env", ["release", "oversight", "fleet"])
def test_vector_infos_name_a_lanes_seed_only_on_the_step_that_ends_it(env):
    from opsgym.vector import BatchedVectorEnv

    venv = BatchedVectorEnv(4, env, scenario="mixed", split="test", max_steps=6)
    _, info = venv.reset(seed=5)
    assert info == {}
    ends = 0
    for _ in range(20):
        running = venv.world.seeds.copy()  # the harness's view: the lanes' episodes now
        masks = venv.action_masks()
        _, _, terminated, truncated, info = venv.step(masks.argmax(axis=1))
        ended = terminated | truncated
        assert np.array_equal(info.get("_seed", np.zeros(4, bool)), ended)
        if ended.any():
            assert np.array_equal(info["seed"][ended], running[ended])
            ends += int(ended.sum())
        for lane in np.flatnonzero(~ended):  # a running lane's seed is nowhere in the infos
            assert mentions(info, int(running[lane])) == []
    assert ends >= 4


def test_sb3_reset_infos_hold_no_seed():
    pytest.importorskip("stable_baselines3")
    from opsgym.vector.sb3 import ReleaseSB3VecEnv

    venv = ReleaseSB3VecEnv(3, scenario="mixed", max_steps=4)
    venv.seed(11)
    venv.reset()
    assert venv.reset_infos == [{}, {}, {}]
    seeds = venv.world.seeds.copy()
    for _ in range(4):
        _, _, dones, infos = venv.step(np.zeros(3, int))
    assert dones.all() and [i["seed"] for i in infos] == seeds.tolist()
    assert venv.reset_infos == [{}, {}, {}]


# -- the server's sessions, MCP and Inspect ------------------------------------------------------


def test_a_server_session_shows_a_drawn_seed_only_at_the_end():
    from opsgym.server.sessions import SessionManager

    sessions = SessionManager(8, 600.0)
    session = sessions.create("release", "mixed", split="test")
    seed = session.episode.seed
    seen = [session.public(), session.state()]
    results = session.play("oracle", to_end=False)
    seen += [session.public(), results]
    assert session.public()["seed"] is None
    assert mentions(seen, seed) == []
    (agent,) = session.agents.values()
    session.play("oracle", to_end=True)
    assert session.public()["seed"] == seed  # over: the record names it too
    chosen = sessions.create("release", "mixed", SEED)
    assert chosen.public()["seed"] == SEED  # the client's own choice, echoed


def test_a_session_resets_its_named_policy_with_a_generator(monkeypatch):
    from opsgym.server import sessions as module

    spies: list[Spy] = []

    def get(env: str, name: str, **_: Any) -> Spy:
        spies.append(Spy())
        return spies[-1]

    monkeypatch.setattr(module, "get_policy", get)
    session = module.SessionManager(8, 600.0).create("release", "mixed", split="test")
    session.play("spy", to_end=True)
    assert spies[0].given and mentions(spies[0].given, session.episode.seed) == []


def test_mcp_answers_name_no_seed_but_the_one_the_client_chose():
    pytest.importorskip("mcp")
    from opsgym.adapters.mcp import OpsgymMCP

    face = OpsgymMCP()
    started = face.call("start_episode", {"env": "release", "scenario": "mixed", "seed": SEED})
    header = json.loads(started.content[0].text)
    assert header["seed"] == SEED  # chosen by the client that started it
    seen: list[Any] = [[c.text for c in started.content[1:]]]
    ident = header["episode_id"]
    for tool, args in [("health_check", {"target": "green"}), ("stage", {}), ("deploy", {})]:
        reply = face.call(f"release_{tool}", {"episode_id": ident, **args})
        seen.append([c.text for c in reply.content] + [reply.structured_content])
    seen.append(face.call("observe_episode", {"episode_id": ident}).structured_content)
    assert mentions(seen, SEED) == []


def test_inspect_shows_the_model_no_seed(tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from opsgym.adapters import inspect as face

    shown: list[Any] = []

    def reply(messages, tools, tool_choice, config):
        shown.append([m.text for m in messages] + [t.name for t in tools])
        out = ModelOutput.for_tool_call("mockllm/model", "health_check", {"target": "green"})
        if len(shown) > 3:
            out = ModelOutput.from_content("mockllm/model", "done")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    task = face.episode_task("release", n=1, start=SEED - 9, max_steps=4)
    seed = task.dataset[0].metadata["seed"]
    assert seed >= SEED - 9  # a seed no counter of the episode reaches
    (log,) = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=reply, memoize=False),
        display="none",
    )
    assert log.status == "success", log.error
    assert shown and mentions(shown, seed) == []
