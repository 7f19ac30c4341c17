"""Core integrity: settled rewards, the record header, caller-owned copies, token sources and
the Gym face's splits. Each test is a hole the integrity issue found, written as a regression."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.agents.base import legal_calls
from opsgym.core.errors import EpisodeDoneError, HeldOutFamilyError
from opsgym.core.registry import catalogue, specs
from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import seed_in_split, split_of
from tests.conftest import random_valid_rollout

ENVS = sorted(specs())


# -- the ledger --------------------------------------------------------------------------


def test_settled_components_are_held_until_the_final_step_and_the_total_is_unchanged():
    table = {"step": -0.1, "unsafe": -3.0, "terminal": 1.0}
    end = RewardLedger(table, settled={"unsafe"}, timing="end")
    dense = RewardLedger(table, settled={"unsafe"}, timing="dense")
    paid_end, paid_dense = [], []
    for final, adds in ((False, ["step", "unsafe"]), (False, ["step"]), (True, ["step"])):
        for ledger, paid in ((end, paid_end), (dense, paid_dense)):
            for name in adds:
                ledger.add(name)
            paid.append(ledger.close_step(final=final))
    assert paid_end[0] == {"step": -0.1}
    assert end.accrued == {} and paid_end[2] == {"step": -0.1, "unsafe": -3.0}
    assert paid_dense[0] == {"step": -0.1, "unsafe": -3.0}
    assert end.total == pytest.approx(dense.total)
    assert end.totals == pytest.approx(dense.totals)


def test_a_settled_name_must_be_a_component_and_the_timing_must_be_known():
    with pytest.raises(opsgym.OpsgymError, match="settled reward component"):
        RewardLedger({"step": -0.1}, settled={"unsafe"})
    with pytest.raises(opsgym.OpsgymError, match="reward timing"):
        RewardLedger({"step": -0.1}, timing="sparse")


@pytest.mark.parametrize("env", ENVS)
def test_settled_components_never_appear_before_the_last_step(env):
    settled = specs()[env].settled
    for seed in range(6):
        ep = random_valid_rollout(env, "mixed", seed, 200, action_seed=seed)
        for event in ep.events[:-1]:
            assert not set(event["reward"]) & settled, (seed, event["step"], event["reward"])
        paid = sum(sum(e["reward"].values()) for e in ep.events)
        assert paid == pytest.approx(ep.total_reward)


@pytest.mark.parametrize("env", ENVS)
def test_end_and_dense_timing_pay_the_same_return(env):
    for seed in range(4):
        calls = random_valid_rollout(env, "mixed", seed, 200, action_seed=seed).record()["calls"]
        dense = opsgym.make(env, "mixed", seed, reward_timing="dense")
        for call in calls:
            dense.step(call["tool"], call["args"])
        end = opsgym.make(env, "mixed", seed)
        for call in calls:
            end.step(call["tool"], call["args"])
        assert end.total_reward == pytest.approx(dense.total_reward)


# -- records -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field,value",
    [
        ("overrides", {"x": 1}),
        ("config", {"level": 3}),
        ("seed", 12),
        ("max_steps", 7),
        ("reward_timing", "dense"),
        ("token_source", "provider"),
    ],
)
def test_an_edited_header_is_found(field, value):
    record = opsgym.run("release", None, 3, "random").record()
    forged = json.loads(json.dumps(record))
    forged[field] = value
    try:
        result = opsgym.replay(forged)
    except opsgym.OpsgymError:
        return  # a header that cannot even be replayed (unknown override) is refused outright
    assert not result.match
    assert result.first_difference["field"] == "header"


def test_an_edited_header_with_its_root_recomputed_still_breaks_the_chain():
    from opsgym.core.episode import header_hash

    record = opsgym.run("release", None, 3, "random").record()
    forged = json.loads(json.dumps(record))
    forged["max_steps"] = 59
    forged["root"] = header_hash(forged)
    result = opsgym.replay(forged)
    assert not result.match
    assert (result.first_difference["step"], result.first_difference["field"]) == (1, "hash")


@pytest.mark.parametrize("env", ENVS)
def test_reports_and_observations_are_the_callers_own_copies(env):
    """Mutating anything handed out changes neither the world nor the record."""
    ep = opsgym.make(env, "mixed", 5)
    twin = opsgym.make(env, "mixed", 5)
    rng = np.random.default_rng(0)
    table = catalogue(env)

    def vandalise(value):
        if isinstance(value, dict):
            for k in list(value):
                vandalise(value[k])
            value["vandal"] = True
        elif isinstance(value, list):
            for v in value:
                vandalise(v)
            value.append("vandal")

    for _ in range(60):
        if ep.done:
            break
        legal = opsgym.core.registry.legal_actions(ep) or [len(table) - 1]
        tool, args = table[int(rng.choice(legal))]
        r = ep.step(tool.name, args.model_dump())
        twin.step(tool.name, args.model_dump())
        vandalise(r.report)
        vandalise(r.components)
        vandalise(ep.observe())
    assert ep.observe() == twin.observe()
    assert json.dumps(ep.record(), sort_keys=True) == json.dumps(twin.record(), sort_keys=True)


@pytest.mark.parametrize("env", ENVS)
def test_a_record_and_a_sealed_draft_are_the_same_and_share_nothing(env):
    """``seal`` of a draft read back from JSON (what the server's writer process does) is the
    record; changing a record, even the truth snapshots its events share in the world's
    bookkeeping, changes neither the next record nor the episode."""
    import orjson

    from opsgym.core.episode import seal

    ep = opsgym.run(env, "mixed", 7, "random")
    first = ep.record()
    assert seal(orjson.loads(orjson.dumps(ep.draft()))) == first
    assert all("hash" not in e for e in ep.events)  # sealing a copy leaves the episode alone
    for event in first["events"]:
        for value in event["truth"].values():
            if isinstance(value, list):
                value.append("vandal")
            elif isinstance(value, dict):
                value["vandal"] = True
    again = ep.record()
    assert opsgym.replay(again).match
    assert again == seal(orjson.loads(orjson.dumps(ep.draft())))
    assert "vandal" not in json.dumps(again)


def test_the_record_says_where_its_token_counts_came_from():
    played = opsgym.run("fleet", None, 0, "oracle").record()
    assert played["token_source"] == "fixed"
    ep = opsgym.make("fleet", None, 0)
    ep.step("check_telemetry", {}, tokens=0)
    assert ep.record()["token_source"] == "caller"
    ep = opsgym.make("fleet", None, 0, token_source="tokenizer")
    ep.step("check_telemetry", {}, tokens=12)
    record = ep.record()
    assert record["token_source"] == "tokenizer"
    assert opsgym.replay(json.loads(json.dumps(record))).match


# -- the Gym face's splits ---------------------------------------------------------------


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_gym_resets_draw_episode_seeds_from_their_split_only(split):
    env = gym.make(specs()["release"].gym_id, split=split, scenario="mixed")
    env.reset(seed=0)
    seen = set()
    for _ in range(300):
        env.reset()
        seen.add(split_of(env.unwrapped.episode.seed))  # the harness's view, not the agent's
    assert seen == {split}


def test_train_split_mixed_episodes_never_draw_a_held_out_family():
    for env in ENVS:
        held = {s.name for s in specs()[env].families() if s.held_out}
        if not held:
            continue
        genv = gym.make(specs()[env].gym_id, scenario="mixed")
        genv.reset(seed=0)
        drawn = set()
        for _ in range(300):
            genv.reset()
            drawn.add(genv.unwrapped.episode.family.name)
        assert not drawn & held, (env, drawn & held)


def test_a_held_out_family_needs_a_dev_or_test_split():
    for env in ENVS:
        held = [s.name for s in specs()[env].families() if s.held_out]
        if not held:
            continue
        with pytest.raises(HeldOutFamilyError, match="split='dev' or split='test'"):
            gym.make(specs()[env].gym_id, scenario=held[0])
        genv = gym.make(specs()[env].gym_id, scenario=held[0], split="test")
        genv.reset(seed=1)
        assert split_of(genv.unwrapped.episode.seed) == "test"


def test_an_episode_seed_from_another_split_is_refused():
    genv = gym.make(specs()["release"].gym_id)
    with pytest.raises(ValueError, match="'test' split"):
        genv.reset(options={"episode_seed": 9})
    genv.reset(options={"episode_seed": 10})
    assert genv.unwrapped.episode.seed == 10


def test_seed_in_split_lands_in_its_split():
    rng = np.random.default_rng(0)
    for split in ("train", "dev", "test"):
        assert {split_of(seed_in_split(split, i, rng)) for i in range(200)} == {split}


# -- mixed -------------------------------------------------------------------------------


@pytest.mark.parametrize("env", ENVS)
def test_mixed_draws_many_families_and_the_draw_is_the_seeds(env):
    families = [opsgym.make(env, "mixed", s).family.name for s in opsgym.seeds("test", 200)]
    assert len(set(families)) >= 3
    again = [opsgym.make(env, "mixed", s).family.name for s in opsgym.seeds("test", 200)]
    assert families == again


@pytest.mark.parametrize("env", ENVS)
def test_forcing_the_family_keeps_the_rest_of_the_seeds_stream(env):
    fams = [s.name for s in specs()[env].families()]
    ep = opsgym.make(env, "mixed", 19, overrides={"family": fams[0]})
    assert ep.family.name == fams[0]
    assert ep.record()["events"] == [] and ep.observe()["step"] == 0
    with pytest.raises(opsgym.OpsgymError, match="family"):
        opsgym.make(env, "mixed", 19, overrides={"family": "mixed"})


@pytest.mark.parametrize("env", ENVS)
def test_hidden_facts_lists_values_and_revealing_tools(env):
    facts = opsgym.hidden_facts(env, "mixed")
    assert "family" in facts
    assert set(facts["family"]["values"]) == {s.name for s in specs()[env].families()}
    tools = set(specs()[env].world.tools)
    for fact, entry in facts.items():
        assert entry["values"], fact
        assert set(entry["revealed_by"]) <= tools, (fact, set(entry["revealed_by"]) - tools)


def _nested(depth: int, kind: type) -> object:
    value: object = kind()
    for _ in range(depth):
        value = {"a": value} if kind is dict else [value]
    return value


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_arguments_nested_thousands_deep_are_a_rejected_step_not_an_exception(env):
    """Regression: Episode.step raised RecursionError on arguments nested 500 deep, though it
    promises never to raise on bad input (issue 20, item 6)."""
    ep = opsgym.make(env, None, 1)
    tool = next(iter(ep.world.tools))
    before = ep.observe()
    for args in (_nested(500, dict), {"x": _nested(3000, list)}, _nested(3000, list)):
        result = ep.step(tool, args)
        assert result.rejected == "arguments nested deeper than 32 levels"
    assert ep.steps == 3 and all(e["rejected"] for e in ep.events)
    assert {k: v for k, v in ep.observe().items() if k not in ("step", "steps_left", "last")} == {
        k: v for k, v in before.items() if k not in ("step", "steps_left", "last")
    }
    record = json.loads(json.dumps(ep.record()))
    assert opsgym.replay(record).match


class _Unprintable:
    def __repr__(self) -> str:
        raise ValueError("no repr")


def test_a_python_caller_s_deep_key_or_broken_repr_is_a_rejected_step_not_an_exception():
    """Regression: a dict key nested 5,000 deep (``str`` of it recurses) or a value whose
    ``repr`` raises escaped ``Episode.step``, which promises never to raise on bad input."""
    key: tuple = ()
    for _ in range(5000):
        key = (key,)
    ep = opsgym.make("release", None, 1)
    for args in ({key: 1}, {"target": _Unprintable()}, {_Unprintable(): 1}):
        assert ep.step("inspect", args).rejected
    assert ep.steps == 3 and opsgym.replay(json.loads(json.dumps(ep.record()))).match


def test_replay_labels_records_a_leaderboard_must_refuse_and_still_replays_them():
    """A record made with forced facts, dense timing or a held-out family on a train seed (made
    directly, as before the episode request refused it) replays, and says so (issue 20.6)."""
    from opsgym.core.episode import Episode
    from opsgym.core.registry import spec

    honest = opsgym.run("release", "mixed", 9, "oracle").record()
    result = opsgym.replay(json.loads(json.dumps(honest)))
    assert result.match and result.labels == () and result.admissible
    world = spec("release")
    old = Episode(world, world.scenario("flapping_health"), 0, reward_timing="dense")
    old.step("inspect", {"target": "all"})
    forced = opsgym.make("release", "deploy_timeout", 9, overrides={"v2_broken": True})
    forced.step("inspect", {"target": "all"})
    for ep, says in (
        (old, ["reward timing 'dense'", "held-out family 'flapping_health' on train seed 0"]),
        (forced, ["forced facts: v2_broken"]),
    ):
        result = opsgym.replay(json.loads(json.dumps(ep.record())))
        assert result.match and not result.admissible
        for phrase in says:
            assert any(phrase in label for label in result.labels), (phrase, result.labels)


def test_opsgym_replay_strict_exits_1_on_a_labelled_record(tmp_path):
    import subprocess
    import sys

    ep = opsgym.make("release", "deploy_timeout", 9, overrides={"v2_broken": True})
    ep.step("inspect", {"target": "all"})
    path = tmp_path / "forced.json"
    path.write_text(json.dumps(ep.record()))
    run = [sys.executable, "-m", "opsgym", "replay", str(path)]
    plain = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "forced facts: v2_broken" in plain.stdout
    strict = subprocess.run([*run, "--strict"], capture_output=True, text=True, timeout=120)
    assert strict.returncode == 1 and "not admissible" in strict.stdout


# -- a refused completion ends the episode (issue 20.5) -----------------------------------

TERMINAL = [
    (env, tool.name) for env in ENVS for tool in specs()[env].world.tools.values() if tool.terminal
]


def test_every_world_with_a_terminal_tool_is_covered():
    assert {"release", "fleet"} <= {env for env, _ in TERMINAL}


@pytest.mark.parametrize("env,tool", TERMINAL)
def test_a_refused_completion_ends_the_episode_with_its_verdict(env, tool):
    """``complete`` at once is refused in every world; the episode is then over, as after any
    end: the refusal is the final verdict (the judgement of the same truth and trajectory
    without the request to complete), ``premature`` is paid, the report says it is over, and
    a further step is refused. Were it to go on, the refusal would be a free probe of the
    truth: ship, ask, roll back if refused (ship_then_probe)."""
    ep = opsgym.make(env, "mixed", opsgym.seeds("test", 6)[5])
    while tool not in (name for name, _ in legal_calls(ep)):  # a precondition: meet it first
        ep.step(*[call for call in legal_calls(ep) if call[0] != tool][-1])  # (flag: enable)
    result = ep.step(tool)
    assert result.done and result.terminated and not result.truncated
    assert result.report == {
        "accepted": False,
        "message": "the judge did not accept completion; the episode is over",
    }
    assert result.components["premature"] < 0
    verdict = ep.verdict
    assert verdict is not None and not verdict.accepted
    assert ep.events[-1]["truth"]["judge"] == verdict.to_dict()
    again = specs()[env].judge.evaluate(ep.events[-1]["truth"], ep.events[:-1], completing=False)
    assert again.to_dict() == verdict.to_dict()
    assert ep.observe()["done"]
    with pytest.raises(EpisodeDoneError, match="is over"):
        ep.step(tool)
    assert opsgym.replay(ep.record()).match


def test_the_gym_face_terminates_on_a_refused_completion():
    env = gym.make(specs()["release"].gym_id)
    env.reset(seed=5)
    complete = [t.name for t, _ in catalogue("release")].index("complete")
    _, reward, terminated, truncated, info = env.step(complete)
    assert terminated and not truncated and info["verdict"]["outcome"] == "incomplete"
