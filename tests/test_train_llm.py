"""SFT and GRPO on LLMs, and the ``hf:`` policies that evaluate what they write.

Everything runs offline on the tiny Qwen3-style model (``--model tiny``: random weights, a
tokenizer trained in-process): ``opsgym train sft`` for a few steps, ``opsgym train grpo`` from
what it wrote for two steps with the environment's rewards, then ``opsgym eval --policy hf:...``
and ``hf+constrained:...`` on the results. The tiny model learns nothing useful; the tests check
the machinery: the data, the loss going down, the reward being the judge's, the records
replaying, the constrained mode's validity, one-line errors and Ctrl-C.
"""

from __future__ import annotations

import inspect
import json
import statistics

import pytest

pytest.importorskip("trl")
pytest.importorskip("transformers")
pytest.importorskip("datasets")
pytest.importorskip("peft")
# TRL's trainers still call Transformers' gradient_checkpointing names, deprecated in 5.x.
pytestmark = [
    pytest.mark.filterwarnings("ignore:`.*checkpointing.*` is deprecated:FutureWarning"),
    # One worker plays the whole module: its fixtures train the tiny model once (SFT, then GRPO).
    pytest.mark.xdist_group("tiny_llm"),
    pytest.mark.slow(minutes=2),
]

from typer.testing import CliRunner  # noqa: E402

import opsgym  # noqa: E402
from opsgym.adapters.chat import tool_schemas  # noqa: E402
from opsgym.adapters.episodes import settle  # noqa: E402
from opsgym.adapters.trl import environment_factory, prompt  # noqa: E402
from opsgym.cli import app  # noqa: E402
from opsgym.core.errors import HeldOutFamilyError  # noqa: E402
from opsgym.core.registry import spec  # noqa: E402
from opsgym.store import open_store  # noqa: E402
from opsgym.training.data import FINAL, reference_rows  # noqa: E402
from opsgym.training.grpo import read_ledger  # noqa: E402

ENV = "release"


@pytest.fixture(scope="module", autouse=True)
def offline_and_one_thread():
    """Nothing is downloaded; one torch thread (the CI machine is small and shared, and torch's
    threads fight over its cores)."""
    import huggingface_hub.constants
    import torch

    patch = pytest.MonkeyPatch()
    patch.setenv("HF_HUB_OFFLINE", "1")
    patch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at its import
    patch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    patch.setenv("OPSGYM_HF_MAX_NEW_TOKENS", "16")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    patch.undo()


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("llm")


@pytest.fixture(scope="module")
def db(work):
    return str(work / "runs.sqlite")


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


# -- the reference conversations ---------------------------------------------------------------


def test_a_reference_conversation_is_the_oracle_episode_through_the_trl_methods():
    row = reference_rows(ENV, "train", 3)[2]
    oracle = opsgym.run(ENV, "mixed", row["seed"], "oracle")
    messages = row["messages"]
    first = prompt(opsgym.make(ENV, "mixed", row["seed"]))
    assert messages[0] == {"role": "user", "content": first}
    calls = [m["tool_calls"][0]["function"] for m in messages if m.get("tool_calls")]
    tools = [m for m in messages if m["role"] == "tool"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        (c["tool"], c["args"]) for c in oracle.record()["calls"]
    ]
    instance = environment_factory(ENV)()
    instance.reset(seed=row["seed"])
    said = [getattr(instance, c["tool"])(**c["args"]) for c in oracle.record()["calls"]]
    assert [t["content"] for t in tools] == said
    assert messages[-1] == {"role": "assistant", "content": FINAL}
    assert (row["outcome"], row["return"], row["family"]) == (
        oracle.verdict.outcome,
        oracle.total_reward,
        oracle.family.name,
    )


def test_the_tools_are_the_schemas_trl_shows_the_model_in_trl_order():
    from transformers.utils import get_json_schema

    instance = environment_factory(ENV)()
    listed = [  # GRPOTrainer's own discovery of an environment's tools
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    assert tool_schemas(ENV) == [get_json_schema(m) for m in listed]
    assert json.loads(reference_rows(ENV, "dev", 1)[0]["tools"]) == tool_schemas(ENV)


def test_the_splits_never_share_a_seed_and_held_out_families_appear_only_in_dev_and_test():
    held_out = {f.name for f in spec(ENV).families() if f.held_out}
    seeds, families = {}, {}
    for split in ("train", "dev", "test"):
        table = reference_rows(ENV, split, 24, scenario="all") + reference_rows(ENV, split, 24)
        seeds[split] = {r["seed"] for r in table}
        families[split] = {r["family"] for r in table}
        assert all(r["split"] == split and opsgym.split_of(r["seed"]) == split for r in table)
    assert not seeds["train"] & seeds["dev"] and not seeds["train"] & seeds["test"]
    assert not seeds["dev"] & seeds["test"]
    assert not families["train"] & held_out
    assert held_out <= families["dev"] and held_out <= families["test"]
    with pytest.raises(HeldOutFamilyError):
        reference_rows(ENV, "train", 2, scenario=sorted(held_out)[0])


# -- the tiny model --------------------------------------------------------------------------


def test_the_tiny_model_is_built_offline_the_same_for_the_same_seed_and_saves(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from opsgym.training.tiny import tiny_model, tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(ENV, seed=3)
    again, same = tiny_model_and_tokenizer(ENV, seed=3)
    other = tiny_model(tokenizer, seed=4)
    assert tokenizer.get_vocab() == same.get_vocab()
    pairs = list(zip(model.parameters(), again.parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in pairs)
    differ = zip(model.parameters(), other.parameters(), strict=True)
    assert not all(torch.equal(a, b) for a, b in differ)
    text = tokenizer.apply_chat_template(
        reference_rows(ENV, "train", 1)[0]["messages"], tools=tool_schemas(ENV), tokenize=False
    )
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.chat_template == tokenizer.chat_template
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    weights = AutoModelForCausalLM.from_pretrained(tmp_path).state_dict()
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


# -- SFT -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sft_run(work, db):
    result = invoke(
        "train", "sft", "--model", "tiny", "--env", ENV, "--episodes", 6, "--eval-episodes", 2,
        "--max-steps", 6, "--batch-size", 2, "--grad-accum", 1, "--learning-rate", 1e-2,
        "--lora-r", 8, "--lora-alpha", 16, "--lora-dropout", 0, "--logging-steps", 1,
        "--eval-steps", 3, "--save-steps", 3, "--device", "cpu",
        "--out", work, "--name", "sft", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return work / "sft"


def test_sft_lowers_the_loss_on_the_reference_conversations_and_records_the_run(sft_run, db):
    with open_store(db) as store:
        run = store.training_run("sft")
    assert (run["kind"], run["env"], run["status"]) == ("sft", ENV, "done")
    assert run["checkpoint"] == str(sft_run / "model")
    assert run["config"]["lora"]["r"] == 8 and run["config"]["model"] == "tiny"
    dev = run["curves"]["eval_loss"]
    assert dev[0][0] == 0 and dev[-1][0] == 6
    assert dev[-1][1] < dev[0][1] - 0.02  # on dev seeds, never trained on
    train = [loss for _, loss in run["curves"]["loss"]]
    assert len(train) == 6 and train[-1] < train[0] - 0.02
    meta = json.loads((sft_run / "model" / "opsgym.json").read_text())
    assert meta["env"] == ENV and meta["kind"] == "sft"
    assert (sft_run / "checkpoints").is_dir()
    assert json.loads((sft_run / "config.json").read_text())["episodes"] == 6


# -- GRPO ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grpo_run(work, db, sft_run):
    result = invoke(
        "train", "grpo", "--model", sft_run, "--env", ENV, "--episodes", 4, "--steps", 2,
        "--num-generations", 2, "--batch-size", 2, "--max-completion-length", 32,
        "--lora-r", 8, "--device", "cpu", "--out", work, "--name", "grpo", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return work / "grpo"


def judged(entry: dict) -> float:
    """The return the judge gives the episode a ledger entry describes, replayed from scratch."""
    episode = opsgym.make(ENV, entry["scenario"], entry["seed"])
    for call in entry["calls"]:
        episode.step(call["tool"], call["args"])
    return settle(episode)[1]


def assert_paid_the_judged_return(folder, curves) -> list[dict]:
    ledger = read_ledger(folder)
    assert ledger
    for entry in ledger:
        assert entry["return"] == pytest.approx(judged(entry))
        assert opsgym.split_of(entry["seed"]) == "train"
    for step, logged in curves["reward"]:
        returns = [e["return"] for e in ledger if e["step"] == step]
        assert len(returns) == 2 and logged == pytest.approx(statistics.mean(returns))
    judged_curve = curves["judged/return"]
    assert [s for s, _ in judged_curve] == [s for s, _ in curves["reward"]]
    assert [v for _, v in judged_curve] == pytest.approx([v for _, v in curves["reward"]])
    return ledger


def test_grpo_from_the_sft_model_is_paid_the_judged_return_and_records_the_run(grpo_run, db):
    with open_store(db) as store:
        run = store.training_run("grpo")
    assert (run["kind"], run["status"], run["checkpoint"]) == (
        "grpo",
        "done",
        str(grpo_run / "model"),
    )
    assert [step for step, _ in run["curves"]["reward"]] == [1, 2]
    assert run["curves"]["rewards/ReleaseEnvironment/mean"] == run["curves"]["reward"]
    assert_paid_the_judged_return(grpo_run, run["curves"])
    assert json.loads((grpo_run / "model" / "opsgym.json").read_text())["base"] == str(
        grpo_run.parent / "sft"
    )


def test_grpo_on_the_tiny_model_runs_two_steps_on_the_environments_reward(work, db):
    result = invoke(
        "train", "grpo", "--model", "tiny", "--env", "oversight", "--episodes", 2, "--steps", 2,
        "--num-generations", 2, "--batch-size", 2, "--max-completion-length", 16,
        "--lora-r", 4, "--device", "cpu", "--out", work, "--name", "grpo-tiny", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with open_store(db) as store:
        run = store.training_run("grpo-tiny")
    assert (run["env"], run["status"]) == ("oversight", "done")
    assert [step for step, _ in run["curves"]["rewards/OversightEnvironment/mean"]] == [1, 2]
    assert len(read_ledger(work / "grpo-tiny")) == 4


SCRIPTS = {
    # Two ways to answer the same prompt, so a group's returns differ.
    "stage": ['{"name": "stage", "arguments": {}}', '{"name": "complete", "arguments": {}}'],
    "deploy": ['{"name": "deploy", "arguments": {"force": true}}'],
}


def test_grpo_rollouts_that_call_tools_are_paid_what_the_judge_gives_their_episodes(
    work, db, monkeypatch
):
    """A tiny model whose generate writes tool calls (its forward pass is real): the episodes
    get steps, accepted and rejected, and the logged reward is their judged return."""
    import torch
    from transformers import Qwen3ForCausalLM

    from opsgym.training import grpo, hf
    from opsgym.training.tiny import corpus, tiny_config, tiny_tokenizer

    tokenizer = tiny_tokenizer(corpus(ENV, 2))

    class Scripted(Qwen3ForCausalLM):
        def generate(self, input_ids=None, attention_mask=None, **kwargs):
            rows = []
            for i, ids in enumerate(input_ids):
                seen = tokenizer.decode(ids)
                turn = seen.count("<tool_response>")
                key = "stage" if '<tool_call>\n{"name": "stage"' in seen else "deploy"
                if turn == 0:
                    key = "stage" if i % 2 == 0 else "deploy"
                script = SCRIPTS[key]
                text = f"<tool_call>\n{script[turn]}\n</tool_call>" if turn < len(script) else "Ok."
                rows.append(tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"])
            width = max(len(r) for r in rows)
            pad = tokenizer.eos_token_id
            new = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
            return torch.cat([input_ids, new.to(input_ids.device)], dim=1)

    monkeypatch.setattr(hf, "load", lambda *a, **k: (Scripted(tiny_config(tokenizer)), tokenizer))
    cfg = grpo.GRPORunConfig(
        env=ENV, model="scripted", episodes=4, steps=2, num_generations=2, batch_size=2,
        max_completion_length=256, device="cpu", lora=hf.LoRA(r=0), learning_rate=1e-3,
    )  # fmt: skip
    folder = grpo.train(cfg, out=work, db=db, name="grpo-scripted")
    with open_store(db) as store:
        run = store.training_run("grpo-scripted")
    ledger = assert_paid_the_judged_return(folder, run["curves"])
    assert {len(e["calls"]) for e in ledger} == {1, 2}
    assert {e["calls"][0]["tool"] for e in ledger} == {"stage", "deploy"}
    by_script = {
        tool: {e["return"] for e in ledger if e["calls"][0]["tool"] == tool} for tool in SCRIPTS
    }
    assert not by_script["stage"] & by_script["deploy"]
    assert min(std for _, std in run["curves"]["reward_std"]) > 0


# -- evaluation --------------------------------------------------------------------------------


def stored(db: str, name: str) -> list[dict]:
    with open_store(db) as store:
        return [store.episode_record(e["id"]) for e in store.episodes(evaluation=name)]


def test_eval_hf_plays_the_trained_model_by_free_generation_and_its_records_replay(grpo_run, db):
    result = invoke(
        "eval", "--env", ENV, "--policy", f"hf:{grpo_run}", "--episodes", 1, "--db", db,
        "--name", "hf-free",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"hf:{grpo_run}"[:20] in result.output
    (record,) = stored(db, "hf-free")
    assert record["token_source"] == "tokenizer" and record["verdict"] is not None
    setup = record["transcript"][0]
    assert setup["mode"] == "free" and setup["schemas"] == tool_schemas(ENV)
    assert opsgym.replay(record).match
    verified = invoke("eval", "--verify", "hf-free", "--db", db)
    assert verified.exit_code == 0 and "1/1 match" in verified.output


def test_eval_constrained_only_makes_valid_calls_and_is_labelled_constrained(sft_run, db):
    result = invoke(
        "eval", "--env", ENV, "--policy", f"hf+constrained:{sft_run}", "--episodes", 1,
        "--db", db, "--name", "hf-constrained",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "hf+constrained:" in result.output
    (record,) = stored(db, "hf-constrained")
    with open_store(db) as store:
        assert {e["policy"] for e in store.episodes(evaluation="hf-constrained")} == {
            f"hf+constrained:{sft_run}"
        }
    assert record["events"] and all(e["rejected"] is None for e in record["events"])
    assert record["transcript"][0]["mode"].startswith("constrained")
    assert opsgym.replay(record).match


def test_constrained_scores_are_the_likelihood_a_full_forward_pass_gives(sft_run):
    import torch

    from opsgym.agents.hf import HFPolicy

    policy = HFPolicy(ENV, str(sft_run), constrained=True)
    tok = policy.backend.tokenizer
    prefix = tok("State now: ready", add_special_tokens=False)["input_ids"]
    suffixes = [tok(t, add_special_tokens=False)["input_ids"] for t in ("stage", "deploy now", "x")]
    scores = policy.backend.score(prefix, suffixes)
    for suffix, score in zip(suffixes, scores, strict=True):
        with torch.no_grad():
            logits = policy.backend.model(torch.tensor([prefix + suffix])).logits[0]
        logp = torch.log_softmax(logits.float(), dim=-1)
        want = sum(logp[len(prefix) - 1 + j, t].item() for j, t in enumerate(suffix))
        assert score == pytest.approx(want, abs=1e-4)


def test_every_hf_kind_is_a_policy_name():
    from opsgym.agents import policy_names

    kinds = {"hf:", "hf+constrained:", "hf+snapshot:", "hf+constrained+snapshot:"}
    assert kinds <= set(policy_names(ENV))


def test_a_local_model_plays_in_the_llm_policies_format_as_hf_snapshot(sft_run, monkeypatch):
    """The same backend in the snapshot format: each turn the ``[system, user]`` pair the
    ``llm:`` policies are sent, the episode's tools in the chat template's list."""
    from opsgym.adapters.toolcalls import state_text
    from opsgym.agents import get_policy, play

    monkeypatch.setenv("OPSGYM_HF_MAX_DECISIONS", "2")
    assert get_policy(ENV, f"hf+snapshot:{sft_run}").name == f"hf+snapshot:{sft_run}"
    policy = get_policy(ENV, f"hf+constrained+snapshot:{sft_run}")
    assert policy.name == f"hf+constrained+snapshot:{sft_run}" and policy.format == "snapshot"
    episode = play(opsgym.make(ENV, "mixed", 9), policy)
    setup, first, second = episode.transcript[:3]
    assert setup["format"] == "snapshot" and setup["mode"].startswith("constrained")
    assert setup["schemas"] == episode.tools and "first_message" not in setup
    assert first["user"] == state_text(opsgym.make(ENV, "mixed", 9).observe())
    assert "Your last turn:" in second["user"]
    assert episode.steps == 2 and all(e["rejected"] is None for e in episode.events)
    assert episode.record()["token_source"] == "tokenizer"


# -- bad input and Ctrl-C ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sft", "grpo"])
def test_bad_input_is_a_one_line_error(kind, work, sft_run):
    base = ["train", kind, "--device", "cpu", "--out", work, "--db", str(work / "bad.sqlite")]
    assert "Unknown environment 'nope'" in one_line_error(
        invoke(*base, "--model", "tiny", "--env", "nope")
    )
    missing = work / "no" / "such" / "model"
    assert "cannot load model" in one_line_error(invoke(*base, "--model", missing, "--name", "m"))
    assert not (work / "m").exists()
    assert "exists" in one_line_error(invoke(*base, "--model", "tiny", "--name", "sft"))
    assert "cannot load" in one_line_error(invoke(*base, "--model", "nobody/no-such-model-xyz"))
    below = one_line_error(invoke(*base, "--model", "tiny", "--lora-r", -1, "--name", "b"))
    assert below.startswith("error: --lora-r -1: ") and not (work / "b").exists()


def test_eval_of_a_model_that_cannot_be_loaded_is_a_one_line_error(work):
    result = invoke(
        "eval", "--env", ENV, "--policy", f"hf:{work / 'nothing'}", "--episodes", 1,
        "--db", work / "nothing.sqlite",
    )  # fmt: skip
    assert result.exit_code == 2 and "cannot load model" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_ctrl_c_leaves_a_usable_model_and_a_run_marked_interrupted(work, db, monkeypatch):
    from transformers import TrainerCallback

    from opsgym.agents import play
    from opsgym.agents.hf import HFPolicy
    from opsgym.training import hf, sft

    class CtrlC(TrainerCallback):
        def on_log(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    cfg = sft.SFTRunConfig(
        env=ENV, model="tiny", episodes=4, eval_episodes=0, max_steps=50, batch_size=2,
        grad_accum=1, logging_steps=1, save_steps=100, device="cpu", lora=hf.LoRA(r=4),
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        sft.train(cfg, out=work, db=db, name="sft-interrupted", callbacks=[CtrlC()])
    with open_store(db) as store:
        run = store.training_run("sft-interrupted")
    assert run["status"] == "interrupted"
    assert [step for step, _ in run["curves"]["loss"]] == [1, 2]
    folder = work / "sft-interrupted"
    assert run["checkpoint"] == str(folder / "model")
    monkeypatch.setenv("OPSGYM_HF_MAX_DECISIONS", "2")
    episode = play(opsgym.make(ENV, "mixed", 9), HFPolicy(ENV, str(folder)))
    assert episode.steps >= 2 and episode.transcript[-1]["kind"] == "stop"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sft, "train", interrupted)
    result = invoke("train", "sft", "--model", "tiny", "--out", work, "--db", db)
    assert result.exit_code == 130 and "interrupted" in result.output


def test_a_local_model_writes_256_tokens_a_turn_by_default_and_logs_each_turn(
    sft_run, monkeypatch, caplog
):
    """The default generation length fits three of the longest reference calls with room (an
    untrained model writes every token it may, so 512 made each episode minutes long), and each
    turn is logged for ``opsgym eval``'s progress line."""
    import logging

    from opsgym.agents import play
    from opsgym.agents.hf import MAX_NEW_TOKENS, HFPolicy, HFSettings

    monkeypatch.delenv("OPSGYM_HF_MAX_NEW_TOKENS")
    monkeypatch.setenv("OPSGYM_HF_MAX_DECISIONS", "2")
    assert HFSettings.from_environment().max_new_tokens is None
    policy = HFPolicy(ENV, str(sft_run))
    assert policy.backend.max_new_tokens == MAX_NEW_TOKENS == 256
    with caplog.at_level(logging.INFO, logger="opsgym.agents.hf"):
        episode = play(opsgym.make(ENV, "mixed", 9), policy)
    assert episode.transcript[0]["settings"]["max_new_tokens"] == 256
    turns = [r.getMessage() for r in caplog.records if "turn" in r.getMessage()]
    assert len(turns) == 2 and "release, turn 1 of at most 2" in turns[0]
    assert not any("seed" in line for line in turns)  # the agent's side never knows it
