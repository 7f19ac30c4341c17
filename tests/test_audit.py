"""`opsgym audit`: the leak test finds planted leaks, bounds are enforced, the CLI reports."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

import opsgym
import opsgym.audit
from opsgym import cli
from opsgym.audit import audit_world, leak_checks, run_audit
from opsgym.audit.calls import OMIT, argument_space, malformed
from opsgym.audit.exploits import main_scenario
from opsgym.audit.lanes import has_twin
from opsgym.audit.leak import leak_test
from opsgym.core.exploits import Bound, Exploit
from opsgym.core.registry import specs
from opsgym.core.rewards import LeakingConfigError
from opsgym.core.scenarios import seeds
from opsgym.envs.release.world import Release

ENVS = sorted(specs())
RELEASE = specs()["release"]
BIN = Path(sys.executable).with_name("opsgym")


# -- the audit on the registered worlds ------------------------------------------------------


def _failures(sections):
    return "\n".join(
        f"{s}/{c.name}: {c.measured}" for s, cs in sections.items() for c in cs if not c.passed
    )


@pytest.mark.slow
@pytest.mark.parametrize("env", ENVS)
def test_no_registered_world_leaks_a_hidden_fact(env):
    sections = audit_world(specs()[env], 4, parts=("leak",))
    scenarios = [s.name for s in specs()[env].scenarios]
    twin = ["batched face (mixed)"] if has_twin(env) else []
    assert [c.name for c in sections["leak"]] == scenarios + twin
    assert all(c.passed for c in sections["leak"]), _failures(sections)


@pytest.mark.slow
@pytest.mark.parametrize("env", ENVS)
def test_every_registered_world_holds_its_exploit_bounds_at_the_hook_n(env):
    """N=10: what the before-stop hook runs (`make test` runs N=30)."""
    sections = audit_world(specs()[env], 10, parts=("play",))
    assert list(sections) == ["exploits", "rewards"]
    assert [c.name for c in sections["exploits"][:2]] == ["oracle", "random"]
    assert len(sections["exploits"]) == 2 + len(specs()[env].exploits)
    assert all(c.passed for cs in sections.values() for c in cs), _failures(sections)


@pytest.mark.parametrize("env", ENVS)
def test_the_seed_attacks_work_on_public_seeds_and_fail_on_sealed_ones(env):
    """Issue 20: the lookup names public seeds from the first view and the twin then out-earns
    the oracle; on sealed seeds the lookup names none and the twin earns the oracle's return.
    Every store tamper is caught by verify."""
    sections = audit_world(specs()[env], 6, parts=("attacks",))
    lookup, twin = sections["seeds"]
    assert lookup.values["public"] == 6 and lookup.values["sealed"] == 0
    assert twin.values["public_gain"] > 0 and twin.passed
    assert abs(twin.values["sealed_gain"]) < 1e-9
    assert [c.name for c in sections["verify"]][:2] == ["untampered", "lies"]
    assert all(c.passed for c in sections["verify"]), _failures(sections)


def test_processes_change_nothing_but_the_wall_time():
    one, two = (run_audit(["oversight", "release"], episodes=2, jobs=j) for j in (1, 2))
    assert one.worlds == two.worlds
    assert list(two.worlds["release"]) == ["leak", "exploits", "rewards", "seeds", "verify"]


def test_the_audit_refuses_a_reward_timing_that_leaks():
    with pytest.raises(LeakingConfigError, match="dense"):
        run_audit(["release"], episodes=1, reward_timing="dense")
    with pytest.raises(opsgym.OpsgymError, match="Known: dense, end"):
        run_audit(["release"], episodes=1, reward_timing="sparse")


# -- the leak test finds what is planted -----------------------------------------------------


def test_dense_timing_is_found_paying_unsafe_on_the_shift_onto_a_broken_v2():
    found = leak_test(
        RELEASE, RELEASE.scenario("v2_broken"), seeds("test", 5), 60, reward_timing="dense"
    )
    first = found.differences[0]
    assert (first.scenario, first.fact) == ("v2_broken", "v2_broken")
    assert first.channel in ("reward", "components")
    assert first.call[0] == "shift_traffic"
    rows = leak_checks(RELEASE, seeds("test", 5), reward_timing="dense")
    assert not next(r for r in rows if r.name == "v2_broken").passed


def _quiet_rewards(spec):
    """Every component but the step and invalid costs settled at the end: only the planted
    leak can differ."""
    return dataclasses.replace(spec, settled=frozenset(spec.rewards) - {"step", "invalid"})


class _TellsOnOddShifts(Release):
    """A planted leak no Gym catalogue call reaches: shift_traffic with an odd explicit
    percent reports whether v2 can ship."""

    def apply(self, tool, args):
        report = super().apply(tool, args)
        if tool.name == "shift_traffic" and args.percent is not None and args.percent % 2:
            report["v2_shippable"] = self.truth()["v2_shippable"]
        return report


def test_a_leak_reached_only_by_an_argument_outside_the_catalogue_is_found():
    assert all(args == {} for name, args in RELEASE.encoder().actions if name == "shift_traffic")
    leaky = _quiet_rewards(dataclasses.replace(RELEASE, world=_TellsOnOddShifts))
    found = leak_test(leaky, leaky.scenario("v2_broken"), seeds("test", 10), 60)
    first = found.differences[0]
    assert first.fact == "v2_broken" and first.channel in ("observe", "report")
    tool, args = first.call
    assert tool == "shift_traffic" and args["percent"] % 2
    assert "v2_shippable" in str(first)


def test_a_prompt_that_names_a_hidden_fact_is_found_at_the_start():
    leaky = _quiet_rewards(
        dataclasses.replace(RELEASE, prompt=lambda ep: f"v2 ok: {ep.world.truth()['v2_shippable']}")
    )
    first = leak_test(leaky, leaky.scenario("nominal"), seeds("test", 1), 10).differences[0]
    assert (first.channel, first.step, first.call) == ("prompt", 0, None)
    assert first.seen == ("v2 ok: True", "v2 ok: False")


def test_identical_worlds_show_no_difference_and_count_what_was_compared():
    quiet = _quiet_rewards(RELEASE)
    found = leak_test(quiet, quiet.scenario("deploy_timeout"), seeds("test", 3), 40)
    assert found.differences == []
    facts = quiet.scenario("deploy_timeout").hidden_facts().values()
    assert found.facts == len(facts) and found.sequences == 3 * len(facts)
    assert found.values == sum(len(f["values"]) for f in facts)
    assert found.sequences <= found.steps <= found.sequences * 40


# -- every argument form ---------------------------------------------------------------------


def test_the_argument_space_lists_every_literal_small_int_none_and_omission():
    tools = RELEASE.world.tools
    percent = argument_space(tools["shift_traffic"])["percent"]
    assert percent[0] is OMIT and None in percent and set(range(-1, 102)) <= set(percent)
    assert argument_space(tools["health_check"])["target"] == [OMIT, "auto", "green", "blue"]
    oversight = specs()["oversight"].world.tools
    ask = argument_space(oversight["ask_worker"], ["w-ada"])
    assert "w-ada" in ask["worker_id"] and None in ask["worker_id"]
    assert OMIT not in ask["question_type"]


@pytest.mark.parametrize("env", ENVS)
def test_malformed_calls_are_always_rejected(env):
    episode = opsgym.make(env, seed=9)
    rng = np.random.default_rng(0)
    for _ in range(200):
        name, raw = malformed(episode.world.tools, rng)
        assert episode.step(name, raw).rejected is not None
        if episode.done:
            break


# -- the exploit suite and the CLI ------------------------------------------------------------


class _Blind:
    """Completes at once; remembers the family it was told."""

    name = "blind"
    told: list[Any] = []

    def reset(self, seed=None, family=None):
        _Blind.told.append(family)

    def act(self, obs, legal):
        return "complete", {}


def _with_exploits(monkeypatch, *exploits):
    """Register release with ``exploits`` and no leak section (tested above on its own)."""
    patched = dataclasses.replace(RELEASE, exploits=exploits)
    monkeypatch.setattr(opsgym.core.registry, "specs", lambda: {**specs(), "release": patched})
    monkeypatch.setattr(opsgym.audit, "leak_checks", lambda spec, seeds: [])
    monkeypatch.setattr(cli, "console", Console(width=250))
    return patched


def _blind(bound, **kwargs):
    scenario = main_scenario(RELEASE)
    return Exploit("blind_complete", "Completes at once.", _Blind, (bound,), scenario, **kwargs)


def test_a_family_aware_exploit_is_told_the_drawn_family_and_measured(monkeypatch):
    _with_exploits(monkeypatch)
    _Blind.told.clear()
    exploit = _blind(Bound("safe", "<=", 0.0), family_aware=True)
    report = run_audit([dataclasses.replace(RELEASE, exploits=(exploit,))], episodes=3)
    row = report.worlds["release"]["exploits"][2]
    assert row.name == "blind_complete" and row.passed
    assert row.values["safe"] == 0.0 and row.values["return"] < 0
    assert len(_Blind.told) == 3 and all(isinstance(f, str) for f in _Blind.told)


def test_cli_exits_1_when_a_bound_is_exceeded_and_0_when_all_hold(monkeypatch):
    runner = CliRunner()
    _with_exploits(monkeypatch, _blind(Bound("safe", ">=", 0.5)))
    out = runner.invoke(cli.app, ["audit", "--env", "release", "--episodes", "2", "--jobs", "1"])
    assert out.exit_code == 1, out.output
    row = next(line for line in out.output.splitlines() if "blind_complete" in line)
    assert "safe >= 0.5" in row and "NO" in row
    _with_exploits(monkeypatch, _blind(Bound("gap", ">=", 1.0)))
    out = runner.invoke(cli.app, ["audit", "--env", "release", "--episodes", "2", "--jobs", "1"])
    assert out.exit_code == 0, out.output
    assert "audit passed" in out.output


def test_cli_writes_the_report_as_json(monkeypatch, tmp_path):
    _with_exploits(monkeypatch, _blind(Bound("gap", ">=", 1.0)))
    path = tmp_path / "audit.json"
    out = CliRunner().invoke(
        cli.app,
        ["audit", "--env", "release", "--episodes", "2", "--jobs", "1", "--json", str(path)],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(path.read_text())
    assert data["passed"] and data["episodes"] == 2 and data["split"] == "test"
    rows = data["worlds"]["release"]["exploits"]
    assert [r["name"] for r in rows] == ["oracle", "random", "blind_complete"]
    assert rows[2]["values"]["gap"] >= 1.0 and rows[2]["bound"] == "gap >= 1"


@pytest.mark.parametrize(
    "args,says",
    [
        (["--env", "relase"], "Unknown environment 'relase'. Did you mean 'release'?"),
        (["--episodes", "0"], "--episodes"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, says):
    out = subprocess.run(
        [str(BIN), "audit", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 2
    text = out.stdout + out.stderr
    assert says in text
    if "relase" in args:
        assert text.strip().count("\n") == 0 and "fleet, oversight, release" in text


def test_the_audit_never_imports_torch():
    code = "import sys, opsgym.audit, opsgym.cli; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
