"""TRL's face: environment classes for GRPOTrainer(environment_factory=...), and the rows.

The trainer test builds a GRPOTrainer as a user would, with a tiny model made here (no weights
downloaded) whose ``generate`` writes scripted tool calls, so that TRL's own code discovers the
methods, renders their schemas through the chat template, parses the calls, runs them and asks
``get_reward``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

trl = pytest.importorskip("trl")
pytest.importorskip("transformers")
pytest.importorskip("datasets")
pytestmark = pytest.mark.filterwarnings("ignore:`.*checkpointing.*` is deprecated:FutureWarning")

import opsgym  # noqa: E402
from opsgym.adapters.episodes import dataset, rows, settle  # noqa: E402
from opsgym.adapters.trl import (  # noqa: E402
    OpsgymEnvironment,
    environment_factory,
    episode,
    prompt,
)
from opsgym.core.errors import HeldOutFamilyError  # noqa: E402
from opsgym.core.registry import catalogue, legal_actions, spec  # noqa: E402

ENVS = opsgym.list_envs()


def public(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_"))


# -- the class TRL is given ---------------------------------------------------------------


@pytest.mark.parametrize("env", ENVS)
def test_the_public_methods_are_the_tools_reset_and_get_reward_and_nothing_else(env):
    cls = environment_factory(env, scenario="mixed")
    assert issubclass(cls, OpsgymEnvironment)
    assert public(cls) == sorted([*spec(env).world.tools, "reset", "get_reward"])
    assert environment_factory(env, scenario="mixed") is cls  # the same class each time
    cls()  # TRL builds it with no arguments


@pytest.mark.parametrize("env", ENVS)
def test_each_method_schema_as_transformers_builds_it_matches_the_tool_model(env):
    from transformers.utils import get_json_schema

    instance = environment_factory(env)()
    for tool in spec(env).world.tools.values():
        fn = get_json_schema(getattr(instance, tool.name))["function"]
        assert fn["name"] == tool.name
        assert fn["description"] == tool.description.strip()
        want, got = tool.parameters, fn["parameters"]
        assert list(got["properties"]) == list(want["properties"])
        assert sorted(got.get("required", [])) == sorted(want.get("required", []))
        for name, schema in want["properties"].items():
            options = [schema, *schema.get("anyOf", [])]
            types = {o.get("type") for o in options} - {None, "null"}
            enums = [o["enum"] for o in options if "enum" in o]
            assert got["properties"][name]["type"] in types, (tool.name, name)
            assert got["properties"][name].get("enum") == (enums[0] if enums else None)
            said = " ".join(schema["description"].split())
            assert got["properties"][name]["description"].startswith(said)
            assert got["properties"][name].get("nullable", False) == (
                "null" in {o.get("type") for o in options}
            )


def test_reset_takes_a_dataset_row_with_trl_extra_columns_and_returns_the_prompt():
    row = rows("oversight", "train", 3)[2] | {"prompt": [{"role": "user", "content": ""}]}
    env = environment_factory("oversight")()
    text = env.reset(**row)
    fresh = opsgym.make("oversight", row["scenario"], row["seed"])
    assert text == prompt(fresh)
    assert '"parameters"' not in text  # the schemas travel as TRL's tools, not in the prompt
    assert episode(env).seed == row["seed"] and episode(env).scenario.name == "mixed"


def test_reset_takes_config_as_json_text_or_a_mapping():
    env = environment_factory("fleet", scenario="easy")()
    env.reset(seed=1, config='{"coordination": true}')
    assert episode(env).config == {"coordination": True}
    env.reset(seed=1, config={"coordination": False})
    assert episode(env).config == {"coordination": False}
    with pytest.raises(ValueError, match="JSON object"):
        env.reset(seed=1, config="[1, 2]")


def test_reset_refuses_rows_it_must_not_play():
    cls = environment_factory("release", split="train")
    with pytest.raises(ValueError, match="seed 8 is in the 'dev' split"):
        cls().reset(seed=8)
    with pytest.raises(ValueError, match="not 'train'"):
        environment_factory("release")().reset(seed=9, split="train")
    with pytest.raises(ValueError, match="row is for 'fleet'"):
        cls().reset(seed=0, environment="fleet")
    held_out = next(f.name for f in spec("release").families() if f.held_out)
    with pytest.raises(HeldOutFamilyError):
        environment_factory("release")().reset(seed=0, scenario=held_out)
    with pytest.raises(RuntimeError, match="reset"):
        environment_factory("release")().get_reward()


@pytest.mark.parametrize("env", ENVS)
def test_methods_replay_the_oracle_to_the_same_record_and_reward(env):
    """Each method is exactly one step of the episode: the oracle's calls made through the
    methods give the record `opsgym.run` gives, hash for hash, and get_reward is its return."""
    scenario = spec(env).scenarios[0].name
    ran = opsgym.run(env, scenario, 3, "oracle").record()
    instance = environment_factory(env, scenario=scenario)()
    instance.reset(seed=3)
    for call in ran["calls"]:
        reply = getattr(instance, call["tool"])(**call["args"])
        assert isinstance(reply, str) and json.loads(reply)
    mine = episode(instance).record()
    assert mine["hash"] == ran["hash"]
    assert instance.get_reward() == pytest.approx(ran["return"])
    after = getattr(instance, ran["calls"][0]["tool"])(**ran["calls"][0]["args"])
    assert "episode is over" in after and episode(instance).record()["hash"] == ran["hash"]


def test_bad_arguments_are_a_recorded_rejection_not_an_exception():
    instance = environment_factory("release")()
    instance.reset(seed=1)
    said = json.loads(instance.deploy(force=True))
    assert "Extra inputs are not permitted" in said["rejected"]
    said = json.loads(instance.shift_traffic(percent="lots"))
    assert "percent" in said["rejected"]
    events = episode(instance).events
    assert [e["rejected"] is not None for e in events] == [True, True]
    assert episode(instance).rewards.totals["invalid"] < 0


@pytest.mark.parametrize("env", ENVS)
def test_an_unfinished_episode_is_settled_as_its_budget_ending_there_would_be(env):
    """get_reward on a rollout that stopped early: the judge's verdict and the full return
    (settled and terminal reward included) that the episode's budget ending there gives."""
    checked = 0
    for seed, k in [(1, 3), (2, 7), (5, 12)]:
        rng = np.random.default_rng(seed)
        ended = opsgym.make(env, "mixed", seed, max_steps=k)
        going = opsgym.make(env, "mixed", seed)
        table = catalogue(env)
        for _ in range(k):
            # Not the terminal tool: a refused complete ends the episode (issue 20), and the
            # point is an episode that has not ended.
            legal = [i for i in legal_actions(going) if not table[i][0].terminal]
            legal = legal or [i for i, (tool, _) in enumerate(table) if not tool.terminal]
            tool, args = table[int(rng.choice(legal))]
            ended.step(tool.name, args.model_dump())
            going.step(tool.name, args.model_dump())
            if going.done:
                break
        if going.done:
            continue
        assert ended.done and ended.truncated
        verdict, total = settle(going)
        # (Reasons may differ: a budget end is judged before the last call's event is
        # appended, while settle judges every event recorded.)
        assert (verdict.outcome, verdict.accepted) == (
            ended.verdict.outcome,
            ended.verdict.accepted,
        )
        assert total == pytest.approx(ended.total_reward)
        assert not going.done  # settling changes nothing
        checked += 1
    assert checked


# -- leaks --------------------------------------------------------------------------------


@pytest.mark.parametrize("env", ["release", "oversight"])
def test_prompt_and_method_returns_are_the_same_whatever_a_hidden_fact_is(env):
    """The forced-facts method through this face: force each hidden fact of `mixed` to each of
    its values, make the same calls through the methods (none to a tool that may reveal it),
    and every prompt and every return must be identical."""
    cls = environment_factory(env, scenario="mixed")
    table = catalogue(env)
    for fact, info in opsgym.hidden_facts(env, "mixed").items():
        quiet = set(info["revealed_by"])
        for seed in (8, 19):
            envs = {value: cls() for value in info["values"]}
            shown = {e.reset(seed=seed, overrides={fact: v}) for v, e in envs.items()}
            assert len(shown) == 1, f"{fact}: the first prompt differs"
            rng = np.random.default_rng([seed, len(fact)])
            first = episode(envs[info["values"][0]])
            for step in range(25):
                legal = [i for i in legal_actions(first) if table[i][0].name not in quiet]
                if not legal or rng.random() < 0.15:
                    name = str(rng.choice(sorted(set(spec(env).world.tools) - quiet)))
                    args = {"bogus": int(rng.integers(9))}
                else:
                    tool, parsed = table[int(rng.choice(legal))]
                    name, args = tool.name, parsed.model_dump(mode="json")
                said = {getattr(e, name)(**args) for e in envs.values()}
                assert len(said) == 1, f"{fact}: {name}({args}) returned {said} at step {step}"
                views = {prompt(episode(e)) for e in envs.values()}
                assert len(views) == 1, f"{fact}: the prompt differs after {name} at step {step}"
                if first.done:
                    break


# -- the rows -----------------------------------------------------------------------------


def test_rows_name_seeds_of_their_split_and_splits_never_share_one():
    seen = {}
    for split in ("train", "dev", "test"):
        table = rows("release", split, 30)
        assert [r["split"] for r in table] == [split] * 30
        assert all(opsgym.split_of(r["seed"]) == split for r in table)
        assert all(r["environment"] == "release" and r["config"] == "{}" for r in table)
        seen[split] = {r["seed"] for r in table}
    assert not (seen["train"] & seen["dev"] or seen["train"] & seen["test"])
    assert rows("release", "train", 2, start=100)[0]["seed"] == 100


def test_held_out_families_appear_only_in_dev_and_test_rows():
    held_out = {f.name for f in spec("release").families() if f.held_out}
    assert held_out
    train = {r["scenario"] for r in rows("release", "train", 40, scenario="all")}
    test = {r["scenario"] for r in rows("release", "test", 40, scenario="all")}
    assert not train & held_out and held_out <= test and "mixed" not in train | test
    with pytest.raises(HeldOutFamilyError):
        rows("release", "train", 4, scenario=sorted(held_out)[0])


def test_a_dataset_of_several_worlds_is_routable_by_its_environment_column():
    ds = dataset(["release", "oversight"], "dev", 3, config=None)
    assert ds.column_names == ["environment", "seed", "scenario", "split", "config"]
    assert ds["environment"] == ["release"] * 3 + ["oversight"] * 3
    factories = {env: environment_factory(env) for env in ("release", "oversight")}
    for row in ds:
        name = row.pop("environment")
        assert "State now" in factories[name]().reset(**row)


# -- TRL's own trainer ----------------------------------------------------------------------

SCRIPT = [
    '<tool_call>\n{"name": "stage", "arguments": {}}\n</tool_call>',
    '<tool_call>\n{"name": "deploy", "arguments": {"force": true}}\n</tool_call>',
    "I am done.",
]


@pytest.fixture(scope="module")
def tokenizer():
    """A byte-level BPE trained here on the worlds' own text, with Qwen3's chat template as
    TRL ships it (so TRL knows how to parse its tool calls)."""
    from transformers.utils import get_json_schema

    from opsgym.training.tiny import tiny_tokenizer

    instance = environment_factory("release")()
    corpus = [instance.reset(seed=0)] + [
        json.dumps(get_json_schema(getattr(instance, name))) for name in spec("release").world.tools
    ]
    return tiny_tokenizer(corpus * 2, vocab_size=1200)


def test_grpo_trainer_discovers_the_methods_runs_the_calls_and_takes_the_judged_reward(
    tokenizer, tmp_path, monkeypatch
):
    import torch
    from transformers import Qwen3ForCausalLM
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    from opsgym.training.tiny import tiny_config

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    seen: list[str] = []

    class Scripted(Qwen3ForCausalLM):
        """A tiny model whose generate writes the script's next turn (its forward is real)."""

        turn = 0

        def generate(self, input_ids=None, attention_mask=None, **kwargs):
            seen.append(tokenizer.decode(input_ids[0]))
            text = SCRIPT[min(Scripted.turn, len(SCRIPT) - 1)] + "<|im_end|>"
            Scripted.turn += 1
            ids = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
            return torch.cat([input_ids, ids.expand(input_ids.size(0), -1)], dim=1)

    model = Scripted(tiny_config(tokenizer))
    cls = environment_factory("release")
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=256,
            max_steps=1,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
        ),
        train_dataset=dataset("release", "train", 2),
        environment_factory=cls,
    )
    # TRL's own discovery: every tool became a tool of the prompt, and get_reward a reward.
    assert sorted(m.__name__ for m in trainer._env_tools[None]) == sorted(
        spec("release").world.tools
    )
    assert trainer.reward_func_names == ["ReleaseEnvironment"]
    trainer.train()

    first = seen[0]
    for name in spec("release").world.tools:
        instance = cls()
        assert json.dumps(get_json_schema(getattr(instance, name)), ensure_ascii=False) in first
    assert "State now:" in first
    pool = trainer._environment_pool[None]
    assert len(pool) == 2
    for instance in pool:
        events = episode(instance).events
        assert [(e["tool"], e["rejected"] is None) for e in events] == [
            ("stage", True),
            ("deploy", False),
        ]
        assert instance.get_reward() == settle(episode(instance))[1]
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == 2 and logged["tools/failure_frequency"] == 0
    assert logged["rewards/ReleaseEnvironment/mean"] == pytest.approx(pool[0].get_reward())
    assert os.environ["TRL_EXPERIMENTAL_SILENCE"] == "1"
