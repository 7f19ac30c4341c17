"""The episode request (:mod:`opsgym.core.request`): its rules, and the same refusal on every face.

A held-out family on a train seed was refused by the Gym face, TRL, the row builders and the
evaluation harness, each in its own words, and ran through ``opsgym.make``, REST sessions, the
WebSocket and MCP. Every face now parses its input into one request; these tests ask each face
for the same illegal episode and expect the same message.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.core.errors import HeldOutFamilyError, InvalidSeedError, UnknownNameError
from opsgym.core.registry import spec
from opsgym.core.request import (
    EpisodeRequest,
    NestingError,
    OverrideError,
    SplitError,
    held_out_refusal,
)
from opsgym.core.rewards import LeakingConfigError

HELD_OUT = {
    name: next(s.name for s in spec(name).families() if s.held_out) for name in opsgym.list_envs()
}
MESSAGE = str(held_out_refusal("release", spec("release").scenario(HELD_OUT["release"])))


def test_the_message_names_the_family_the_world_and_what_to_do():
    assert MESSAGE == (
        f"Scenario {HELD_OUT['release']!r} of 'release' is a held-out family: it is never in "
        "the train split. Use a dev or test seed (split='dev' or split='test') to play it."
    )


# -- the faces ------------------------------------------------------------------------------


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_make_and_run_refuse_it_and_play_it_on_a_test_seed(env):
    with pytest.raises(HeldOutFamilyError) as refused:
        opsgym.make(env, HELD_OUT[env], 0)
    assert str(refused.value) == str(held_out_refusal(env, spec(env).scenario(HELD_OUT[env])))
    with pytest.raises(HeldOutFamilyError):
        opsgym.run(env, HELD_OUT[env], 10, "random")
    assert opsgym.make(env, HELD_OUT[env], 9).scenario.name == HELD_OUT[env]


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_a_mixed_episode_forced_to_a_held_out_family_on_a_train_seed_is_refused(env):
    with pytest.raises(HeldOutFamilyError, match="is a held-out family"):
        opsgym.make(env, "mixed", 0, overrides={"family": HELD_OUT[env]})
    assert (
        opsgym.make(env, "mixed", 8, overrides={"family": HELD_OUT[env]}).family.name
        == (HELD_OUT[env])
    )


def test_the_gym_face_refuses_it_at_make_and_at_reset():
    with pytest.raises(HeldOutFamilyError) as refused:
        gym.make("opsgym/Release-v5", scenario=HELD_OUT["release"])
    assert str(refused.value) == MESSAGE
    env = gym.make("opsgym/Release-v5", scenario="mixed")
    with pytest.raises(HeldOutFamilyError) as refused:
        env.reset(seed=0, options={"scenario": HELD_OUT["release"]})
    assert str(refused.value) == MESSAGE
    with pytest.raises(HeldOutFamilyError):
        env.reset(seed=0, options={"overrides": {"family": HELD_OUT["release"]}})
    with pytest.raises(HeldOutFamilyError):
        gym.make("opsgym/Release-v5", scenario="mixed", overrides={"family": HELD_OUT["release"]})
    test = gym.make("opsgym/Release-v5", scenario=HELD_OUT["release"], split="test")
    assert test.reset(seed=0)[1]["scenario"] == HELD_OUT["release"]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("overrides", {"scenario": "mixed", "overrides": {"v2_broken": _nested(5000)}}),
        ("overrides", {"scenario": "mixed", "overrides": {"family": _nested(5000)}}),
        ("config", {"config": {"level": _nested(5000)}}),
        ("seed", {"seed": _nested(5000)}),
        ("scenario", {"scenario": _nested(5000)}),
    ],
)
def test_a_field_nested_thousands_deep_is_refused_naming_it_on_every_face(field, kwargs):
    """Regression: a value nested 5,000 deep in the overrides, the config, the seed or the
    scenario raised RecursionError (the refusal's message quoted it with ``repr``)."""
    with pytest.raises(NestingError, match=f"^{field}: nested deeper than 32 levels"):
        EpisodeRequest("release", **kwargs).resolve()
    if field != "seed":  # make() checks the seed itself first
        request = dict(kwargs)
        with pytest.raises(NestingError, match=f"^{field}: nested deeper than 32 levels"):
            opsgym.make("release", request.pop("scenario", None), 0, **request)
    if field in ("overrides", "config"):
        with pytest.raises(NestingError, match=f"^{field}: nested deeper"):
            gym.make("opsgym/Release-v5", scenario="mixed", **{field: kwargs[field]})


def test_the_row_builders_and_trl_refuse_it():
    from opsgym.adapters.episodes import rows

    with pytest.raises(HeldOutFamilyError) as refused:
        rows("release", "train", 4, scenario=HELD_OUT["release"])
    assert str(refused.value) == MESSAGE
    assert len(rows("release", "test", 4, scenario=HELD_OUT["release"])) == 4
    pytest.importorskip("trl")
    from opsgym.adapters.trl import environment_factory

    env = environment_factory("release", HELD_OUT["release"])()
    with pytest.raises(HeldOutFamilyError) as refused:
        env.reset(seed=0)
    assert str(refused.value) == MESSAGE


def test_an_evaluation_refuses_it_on_train_and_refuses_leaking_settings(tmp_path):
    from opsgym.evaluation.runner import EvalConfig, check

    with pytest.raises(HeldOutFamilyError) as refused:
        check(EvalConfig("release", ("oracle",), (HELD_OUT["release"],), "train", 2))
    assert str(refused.value) == MESSAGE
    with pytest.raises(LeakingConfigError):
        EpisodeRequest("release", seed=9, overrides={"v2_broken": True}).resolve(evaluation=True)
    with pytest.raises(LeakingConfigError):
        EpisodeRequest("release", seed=9, reward_timing="dense").resolve(evaluation=True)


def test_ppo_refuses_to_train_on_it():
    pytest.importorskip("sb3_contrib")
    from opsgym.training.ppo import PPOConfig

    with pytest.raises(HeldOutFamilyError) as refused:
        PPOConfig(env="release", scenario=HELD_OUT["release"]).check()
    assert str(refused.value) == MESSAGE


def test_mcp_refuses_it_with_the_same_message():
    pytest.importorskip("mcp")
    from opsgym.adapters.mcp import OpsgymMCP

    face = OpsgymMCP(["release"])
    result = face.call("start_episode", {"scenario": HELD_OUT["release"], "seed": 0})
    assert result.is_error
    assert MESSAGE in result.content[0].text


def test_the_server_refuses_it_over_rest_the_websocket_and_stateless_reset(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server.conftest import running
    from tests.server.wire import ask, ws

    with running(db=str(tmp_path / "store.sqlite")) as live:
        made = live.client.post(
            "/api/sessions", json={"env": "release", "scenario": HELD_OUT["release"], "seed": 0}
        )
        assert made.status_code == 422 and made.json()["detail"] == MESSAGE
        drawn = live.client.post(
            "/api/sessions", json={"env": "release", "scenario": HELD_OUT["release"]}
        )
        assert drawn.status_code == 422 and drawn.json()["detail"] == MESSAGE  # drawn on train
        reset = live.client.post(
            "/reset", json={"env": "release", "scenario": HELD_OUT["release"], "seed": 0}
        )
        assert reset.status_code == 422 and reset.json()["detail"] == MESSAGE
        with ws(live) as sock:
            reply = ask(
                sock,
                {"type": "reset", "data": {"env": "release", "scenario": HELD_OUT["release"]}},
            )
            assert reply["type"] == "error" and MESSAGE in reply["data"]["message"]
        ok = live.client.post(
            "/api/sessions",
            json={"env": "release", "scenario": HELD_OUT["release"], "split": "test"},
        )
        assert ok.status_code == 201


# -- the other rules ------------------------------------------------------------------------


def test_a_seed_must_lie_in_its_split_and_a_drawn_one_does():
    with pytest.raises(SplitError, match="seed 10 is in the 'train' split, not 'test'"):
        EpisodeRequest("release", seed=10, split="test").resolve()
    with pytest.raises(InvalidSeedError, match="got -3"):
        EpisodeRequest("release", seed=-3).resolve()
    rng = np.random.default_rng(5)
    for split in ("train", "dev", "test"):
        resolved = EpisodeRequest("release", split=split).resolve(rng)
        assert opsgym.split_of(resolved.seed) == split and resolved.drawn
    again = EpisodeRequest("release", split="test").resolve(np.random.default_rng(5))
    first = EpisodeRequest("release", split="test").resolve(np.random.default_rng(5))
    assert again.seed == first.seed  # a seeded draw repeats


def test_overrides_are_checked_against_the_declared_facts_kinds():
    with pytest.raises(OverrideError, match="v2_broken='yes'"):
        opsgym.make("release", "deploy_timeout", 0, overrides={"v2_broken": "yes"})
    with pytest.raises(OverrideError, match="only a mixed scenario draws its family"):
        opsgym.make("release", "deploy_timeout", 0, overrides={"family": "nominal"})
    with pytest.raises(UnknownNameError, match="Unknown family"):
        opsgym.make("release", "mixed", 0, overrides={"family": "mixed"})


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_config_is_checked_by_the_worlds_own_model(env):
    model = spec(env).config
    assert model.model_json_schema()["additionalProperties"] is False
    with pytest.raises(UnknownNameError, match="config key 'colour'"):
        opsgym.make(env, None, 0, config={"colour": "red"})
