"""The LLM faces of the oversight world: the prompt renderer and the JSONL dataset."""

from __future__ import annotations

import json

import pytest

import opsgym
from opsgym.envs.oversight import SPEC
from opsgym.training.oversight_dataset import FILES, generate, main, render, reset_args, rows

HELD_OUT = {s.name for s in SPEC.families() if s.held_out}
FAMILIES = [s.name for s in SPEC.families()]


def test_render_gives_a_system_and_a_user_message_from_the_observation_alone():
    ep = opsgym.run("oversight", "stacked_failures_sloppy_fixes", 9, "oracle")
    messages = render(ep.observe(), ep.tools)
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = (m["content"] for m in messages)
    assert SPEC.brief in system
    for rule in ("S1|no_p1_open", "S2|payments_tests_must_pass", "S3|deploy_checks"):
        assert rule in user
    for tool in SPEC.world.tools:
        assert f'"name":"{tool}"' in system
    obs = ep.observe()
    for prop in obs["proposals"]:
        assert prop["id"] in user and prop["claim"] in user
    for ident in obs["evidence"]:
        assert ident in user
    assert "payments" in user and "history (blocked_under|claim|" in user
    assert render(obs)[0]["content"] != system and "Tools" not in render(obs)[0]["content"]


def test_render_shows_answers_and_rejections():
    ep = opsgym.make("oversight", "careful_qa_safe", 2)
    ep.step("ask_worker", {"slot": 1, "question_type": "payment_tests"})
    ep.step("inspect_ci_run", {"run_id": "pr-0"})
    user = render(ep.observe())[1]["content"]
    assert "answers (asked_at|confidence|question|rule|says|text|worker):" in user
    assert "|payment_tests|S2|" in user
    assert "rejected:\"'pr-0' is not a CI run id" in user and "tool:inspect_ci_run" in user


def test_generate_writes_train_seen_and_unseen_files(tmp_path):
    paths = generate(tmp_path, n_train=60, n_eval=30)
    assert {p.name for p in paths.values()} == set(FILES.values())
    data = {s: [json.loads(line) for line in p.read_text().splitlines()] for s, p in paths.items()}
    assert [len(data[s]) for s in FILES] == [60, 30, 30]
    for split, rows_ in data.items():
        for row in rows_:
            assert {"prompt", "family", "seed", "difficulty", "archetype_mix", "env"} <= set(row)
            assert [m["role"] for m in row["prompt"]] == ["system", "user"]
            expected = "train" if split == "train" else "test"
            assert opsgym.split_of(row["seed"]) == expected
    assert not {r["family"] for r in data["train"]} & HELD_OUT
    assert not {r["family"] for r in data["eval_seen"]} & HELD_OUT
    assert {r["family"] for r in data["eval_unseen"]} == HELD_OUT
    assert len({(r["family"], r["seed"]) for r in data["train"]}) == 60


def test_a_rows_reset_arguments_recreate_its_episode_and_prompt():
    for row in rows("eval_unseen", 10):
        ep = opsgym.make("oversight", **reset_args(row))
        assert render(ep.observe(), ep.tools) == row["prompt"]
        assert ep.config == {"difficulty": row["difficulty"], "archetype_mix": row["archetype_mix"]}


def test_every_family_meets_every_difficulty_and_mix():
    seen = {(r["family"], r["difficulty"], r["archetype_mix"]) for r in rows("train", 6 * 15)}
    assert len(seen) == 6 * 15


def test_bad_dataset_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="split must be one of"):
        next(rows("validation", 3))
    with pytest.raises(ValueError, match="unknown difficulty 'brutal'"):
        generate(tmp_path, n_train=1, n_eval=1, difficulties=["brutal"])


def test_the_command_line_writes_the_files(tmp_path, capsys):
    main(["--out", str(tmp_path), "--train", "7", "--eval", "3", "--no-tools"])
    assert "train:" in capsys.readouterr().out
    row = json.loads((tmp_path / "train.jsonl").read_text().splitlines()[0])
    assert "Tools" not in row["prompt"][0]["content"]


def test_rows_are_labelled_with_their_family_but_prompts_never_name_it():
    for split in ("train", "eval_seen", "eval_unseen"):
        data = list(rows(split, 24))
        assert {r["family"] for r in data} <= set(FAMILIES)
        assert len({r["seed"] for r in data}) == len(data), "one seed per row"
        for row in data:
            text = "\n".join(m["content"] for m in row["prompt"])
            assert not [f for f in (*FAMILIES, "mixed") if f in text], row["family"]
    seen = {r["seed"] for r in rows("eval_seen", 30)}
    assert not seen & {r["seed"] for r in rows("eval_unseen", 30)}
