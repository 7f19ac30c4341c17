"""The rows builder of every world (``opsgym.training.data``): episode rows and their reset
arguments, the two views (first prompts, reference conversations), the three JSONL subsets and
``opsgym data``. Every test runs over the registered worlds, the plugin world included."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import opsgym
from opsgym.adapters.episodes import parse_config
from opsgym.adapters.toolcalls import render_messages
from opsgym.adapters.trl import environment_factory, prompt
from opsgym.cli import app
from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import specs
from opsgym.training import data
from opsgym.training.data import (
    SUBSETS,
    UNSEEN_START,
    episode_rows,
    families,
    named_settings,
    prompt_rows,
    request,
    setting_grid,
    write,
)

ENVS = sorted(specs())
COLUMNS = {"environment", "seed", "scenario", "split", "config", "subset", "family"}


def held_out(env):
    return {f.name for f in specs()[env].families() if f.held_out}


def names_in(text, names):
    """The names that appear in ``text`` as names, not inside another word ("hard" in "shards")."""
    return [n for n in names if re.search(rf"(?<![\w+]){re.escape(n)}(?![\w+])", text)]


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("env", ENVS)
def test_write_makes_train_seen_and_unseen_files(env, tmp_path):
    n_families = len(families(env, "train"))
    n_train, n_eval = 2 * n_families * len(setting_grid(env)), 12
    paths = write(env, tmp_path, n_train=n_train, n_eval=n_eval)
    assert {s: p.name for s, p in paths.items()} == {s: f"{s}.jsonl" for s in SUBSETS}
    table = {s: read(p) for s, p in paths.items()}
    unseen = n_eval if held_out(env) else 0
    assert [len(table[s]) for s in SUBSETS] == [n_train, n_eval, unseen]
    for subset, rows in table.items():
        for row in rows:
            assert COLUMNS | {"prompt"} <= set(row) and row["environment"] == env
            assert row["subset"] == subset and row["family"] == row["scenario"]
            assert [m["role"] for m in row["prompt"]] == ["system", "user"]
            assert opsgym.split_of(row["seed"]) == row["split"] == SUBSETS[subset].split
    assert not {r["family"] for r in table["train"] + table["eval_seen"]} & held_out(env)
    assert {r["family"] for r in table["eval_unseen"]} == held_out(env)
    assert {r["family"] for r in table["train"]} == set(families(env, "train"))
    assert all(r["seed"] >= UNSEEN_START for r in table["eval_unseen"])


@pytest.mark.parametrize("env", ENVS)
def test_a_rows_request_recreates_its_episode_and_prompt_and_resets_trl(env):
    trl_env = environment_factory(env)()
    for subset in SUBSETS:
        for row in prompt_rows(env, subset, 6 if families(env, subset) else 0):
            episode = request(row).start()
            assert render_messages(episode) == row["prompt"]
            assert episode.config == parse_config(row["config"])
            assert episode.family.name == row["family"] and episode.seed == row["seed"]
            # the row is TRL's reset arguments as it is, its other columns included
            assert trl_env.reset(**row) == prompt(episode)


@pytest.mark.parametrize("env", ENVS)
def test_every_family_meets_every_setting(env):
    grid = setting_grid(env)
    n = len(families(env, "train")) * len(grid)
    seen = {(r["family"], r["config"]) for r in episode_rows(env, "train", n)}
    assert len(seen) == n


def test_oversight_cycles_its_difficulties_and_archetype_mixes():
    assert list(named_settings("oversight")) == ["difficulty", "archetype_mix"]
    assert len(setting_grid("oversight")) == 3 * 5
    rows = episode_rows("oversight", "train", 6 * 15)
    seen = {(r["family"], r["config"]) for r in rows}
    assert len(seen) == 6 * 15
    assert {json.loads(c)["difficulty"] for _, c in seen} == {"easy", "medium", "hard"}


def test_given_settings_replace_the_named_ones_and_reach_any_config_key():
    grid = setting_grid("oversight", {"difficulty": "hard"})
    assert len(grid) == 5 and {g["difficulty"] for g in grid} == {"hard"}
    rows = episode_rows("fleet", "eval_seen", 30, settings={"level": [1, 3]})
    assert {parse_config(r["config"])["level"] for r in rows} == {1, 3}
    assert request(rows[-1]).start().config == parse_config(rows[-1]["config"])


def test_bad_rows_arguments_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(UnknownNameError, match="subset 'validation'"):
        episode_rows("oversight", "validation", 3)
    with pytest.raises(UnknownNameError, match="difficulty 'brutal'"):
        write("oversight", tmp_path / "a", n_train=1, n_eval=1, settings={"difficulty": "brutal"})
    with pytest.raises(UnknownNameError, match="config key 'levle'"):
        episode_rows("fleet", "train", 1, settings={"levle": [1]})
    with pytest.raises(ValueError, match="level"):
        episode_rows("fleet", "train", 1, settings={"level": [9]})
    with pytest.raises(UnknownNameError, match="view 'chats'"):
        write("release", tmp_path / "b", view="chats")
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        episode_rows("release", "train", -1)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_world_without_held_out_families_writes_an_empty_unseen_file(tmp_path, monkeypatch):
    real = data.families
    monkeypatch.setattr(
        data, "families", lambda env, subset: [] if subset == "eval_unseen" else real(env, subset)
    )
    with pytest.raises(ValueError, match="'release' has no held-out family"):
        episode_rows("release", "eval_unseen", 3)
    paths = write("release", tmp_path, n_train=2, n_eval=2)
    assert [len(read(paths[s])) for s in SUBSETS] == [2, 2, 0]


@pytest.mark.parametrize("env", ENVS)
def test_rows_are_labelled_with_their_family_but_prompts_never_name_it(env):
    names = [f.name for f in specs()[env].families()]
    for subset in SUBSETS:
        rows = prompt_rows(env, subset, 24 if families(env, subset) else 0)
        assert {r["family"] for r in rows} <= set(names)
        assert len({r["seed"] for r in rows}) == len(rows), "one seed per row"
        for row in rows:
            text = "\n".join(m["content"] for m in row["prompt"])
            assert not names_in(text, [*names, "mixed"]), row["family"]
    seen = {r["seed"] for r in episode_rows(env, "eval_seen", 30)}
    unseen = episode_rows(env, "eval_unseen", 30 if held_out(env) else 0)
    assert not seen & {r["seed"] for r in unseen}
    train = {r["seed"] for r in episode_rows(env, "train", 30)}
    assert not train & seen


@pytest.mark.parametrize("env", ENVS)
def test_reference_view_writes_the_oracles_conversations(env, tmp_path):
    pytest.importorskip("transformers")
    paths = write(env, tmp_path, view="reference", n_train=2, n_eval=1)
    for subset, path in paths.items():
        rows = read(path)
        assert len(rows) == (1 if subset != "train" else 2) or not families(env, subset)
        for row in rows:
            assert row["subset"] == subset and row["messages"][-1]["content"] == data.FINAL
            episode = request(row).start()
            assert row["messages"][0]["content"] == prompt(episode)
            assert row["family"] == episode.family.name
            assert row["outcome"] in specs()[env].safe_outcomes


def test_the_command_line_writes_the_files(tmp_path):
    runner = CliRunner()
    out = tmp_path / "oversight"
    argv = ["data", "prompts", "--env", "oversight", "--out", str(out), "--train", "7"]
    result = runner.invoke(
        app, [*argv, "--eval", "3", "--no-tools", "--setting", "difficulty=hard"]
    )
    assert result.exit_code == 0, result.output
    assert "train: " in result.output and "(7 rows)" in result.output
    rows = read(out / "train.jsonl")
    assert len(rows) == 7 and "Tools" not in rows[0]["prompt"][0]["content"]
    assert {json.loads(r["config"])["difficulty"] for r in rows} == {"hard"}
    bad = runner.invoke(app, [*argv, "--setting", "difficulty=brutal"])
    assert bad.exit_code == 2 and "error: Unknown oversight difficulty 'brutal'" in bad.output
    bad = runner.invoke(app, [*argv, "--setting", "difficulty"])
    assert bad.exit_code == 2 and "--setting takes KEY=V1,V2" in bad.output
    fleet = ["data", "prompts", "--env", "fleet", "--out", str(tmp_path / "f"), "--eval", "0"]
    n = 2 * len(families("fleet", "train"))
    levels = runner.invoke(app, [*fleet, "--train", str(n), "--setting", "level=1,3"])
    assert levels.exit_code == 0, levels.output
    rows = read(tmp_path / "f" / "train.jsonl")
    assert {json.loads(r["config"])["level"] for r in rows} == {1, 3}
