"""Discovery: the package's worlds and the ``opsgym.envs`` entry points; what a spec carries."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Callable, Iterator

import gymnasium as gym
import pytest

import opsgym
from opsgym.core.errors import SpecError
from opsgym.core.registry import package_specs, spec, specs
from opsgym.core.spec import Route
from opsgym.core.tools import NoArgs, tool
from tests.conftest import install_plugin
from tests.plugin_world import SPEC as FLAG
from tests.plugin_world.world import Flag

SECOND = dataclasses.replace(FLAG, name="flag2", gym_id="opsgym_flag/Flag2-v0")
"""A spec an entry point names directly (``module:attr``)."""
TAKEN = dataclasses.replace(FLAG, name="release", gym_id="opsgym_flag/Release-v0")
"""A plugin that claims a name the package holds."""
NOT_A_SPEC = {"name": "flag3"}


@pytest.fixture
def plugins(tmp_path, monkeypatch) -> Iterator[Callable[..., list[str]]]:
    """``install(*entry_points)``: one more distribution on ``sys.path`` per call, then a
    refresh; every one is gone, and the registry refreshed, after the test."""
    made = []

    def install(*entry_points: str) -> list[str]:
        site = tmp_path / f"site{len(made)}"
        install_plugin(site, "\n".join(entry_points), dist=f"opsgym_extra{len(made)}")
        monkeypatch.syspath_prepend(str(site))
        made.append(site)
        return opsgym.refresh_envs()

    yield install
    monkeypatch.undo()
    opsgym.refresh_envs()


# -- discovery --------------------------------------------------------------------------------


def test_the_test_suites_plugin_world_is_found_through_its_installed_entry_point():
    (point,) = importlib.metadata.distribution("opsgym-flag-world").entry_points
    assert (point.group, point.name, point.value) == ("opsgym.envs", "flag", "tests.plugin_world")
    assert spec("flag") is FLAG and "flag" not in package_specs()
    assert list(specs()) == sorted(specs()) == opsgym.list_envs()
    assert gym.spec(FLAG.gym_id).kwargs == {"env": "flag"}
    assert gym.make(FLAG.gym_id).spec.max_episode_steps == FLAG.max_steps


def test_an_entry_point_may_name_the_spec_and_a_refresh_finds_and_forgets_it(plugins):
    assert "flag2" not in opsgym.list_envs()
    assert "flag2" in plugins("flag2 = tests.test_registry:SECOND")
    assert spec("flag2") is SECOND
    episode = gym.make(SECOND.gym_id).unwrapped
    episode.reset(seed=0)
    assert episode.episode.env == "flag2"


def test_a_removed_plugin_loses_its_name_and_its_gym_id(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_plugin(site, "flag2 = tests.test_registry:SECOND", dist="opsgym_gone")
    monkeypatch.syspath_prepend(str(site))
    try:
        assert "flag2" in opsgym.refresh_envs()
        assert SECOND.gym_id in gym.registry
    finally:
        monkeypatch.undo()
        names = opsgym.refresh_envs()
    assert "flag2" not in names and SECOND.gym_id not in gym.registry
    with pytest.raises(opsgym.OpsgymError, match="Did you mean 'flag'"):
        spec("flag2")


@pytest.mark.parametrize(
    ("entry_point", "says"),
    [
        ("broken = tests.no_such_world", "could not be loaded: ModuleNotFoundError"),
        ("dict = tests.test_registry:NOT_A_SPEC", "names neither an EnvSpec nor a module"),
        ("release = tests.test_registry:TAKEN", "the name 'release' is taken"),
    ],
)
def test_a_plugin_that_cannot_be_a_world_is_skipped_with_a_warning(plugins, entry_point, says):
    before = opsgym.list_envs()
    with pytest.warns(RuntimeWarning, match=says):
        assert plugins(entry_point) == before
    assert spec("release") is package_specs()["release"]


# -- what a spec carries ----------------------------------------------------------------------


def test_the_terminal_tool_is_read_off_the_tool_table():
    assert {name: s.terminal for name, s in specs().items()} == {
        "flag": "complete",
        "fleet": "declare_resolved",
        "oversight": None,  # the world ends it: a ship or a hold
        "release": "complete",
    }

    class TwoEnds(Flag):
        @tool(terminal=True)
        def give_up(self, args: NoArgs) -> dict:
            """Stop here."""
            return {}

    with pytest.raises(
        SpecError, match=r"one terminal tool at most, got \['complete', 'give_up'\]"
    ):
        dataclasses.replace(FLAG, world=TwoEnds)


def test_the_manual_summary_and_curriculum_are_the_specs_own():
    for s in specs().values():
        assert s.summary and s.manual.startswith(s.summary)
    assert spec("fleet").curriculum().config == {"level": 1}
    assert [name for name, s in specs().items() if s.curriculum] == ["fleet"]


@pytest.mark.parametrize(
    ("route", "says"),
    [
        (dict(method="PUT", path="/x"), "method must be one of"),
        (dict(method="POST", path="compose"), "path must look like"),
        (dict(method="POST", path="/Compose/"), "path must look like"),
        (dict(method="GET", path="/x", body=NoArgs), "cannot take a body"),
    ],
)
def test_a_malformed_route_is_refused_when_declared(route, says):
    with pytest.raises(SpecError, match=says):
        Route(handler=print, **route)


def test_two_routes_of_one_method_and_path_are_refused():
    twice = (*FLAG.routes, *FLAG.routes)
    with pytest.raises(SpecError, match="two routes POST /plan"):
        dataclasses.replace(FLAG, routes=twice)
