"""Shared helpers for the test suite, and the plugin world it installs.

**A fourth world, installed as a package would be.** Before collection, :func:`pytest_configure`
writes the ``.dist-info`` of a distribution (``opsgym-flag-world``) whose ``entry_points.txt``
declares ``flag = tests.plugin_world`` in the ``opsgym.envs`` group, into a temporary folder put
on ``sys.path``: ``importlib.metadata`` finds it there as it finds an installed package, and
``opsgym.refresh_envs()`` discovers the world and registers its Gym id. Every test that iterates
the registered worlds (contracts, Gym, server, MCP, audit) then meets it with no edit of its own.
Subprocesses do not inherit it (the folder is not on their path).

**The user's store is out of reach.** No test may read or write the user's own store
(``OPSGYM_DB``, else ``opsgym.sqlite`` in ``platformdirs.user_data_dir``): every test runs with
``OPSGYM_DB`` and ``XDG_DATA_HOME`` pointing into a temporary folder (subprocesses inherit both),
and ``platformdirs`` answering from there on every platform. The session ends with a warning if
the user's store changed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs
import pytest

import opsgym
from opsgym.core.registry import catalogue, legal_actions

PLUGIN_DIST = "opsgym_flag_world"
PLUGIN_ENTRY_POINT = "flag = tests.plugin_world"
_site = pytest.StashKey[Path]()


def install_plugin(
    site: Path, entry_point: str = PLUGIN_ENTRY_POINT, dist: str = PLUGIN_DIST
) -> Path:
    """Write into ``site`` the metadata of an installed distribution ``dist`` whose only entry
    point, in the ``opsgym.envs`` group, is ``entry_point`` (``name = module[:attr]``).
    """
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    name = dist.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[opsgym.envs]\n{entry_point}\n")
    return info


def pytest_configure(config: pytest.Config) -> None:
    """Install the plugin world for the whole session (see the module's docstring)."""
    site = Path(tempfile.mkdtemp(prefix="opsgym-plugin-"))
    install_plugin(site)
    sys.path.append(str(site))
    config.stash[_site] = site
    assert "flag" in opsgym.refresh_envs(), "the plugin world was not discovered"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests (marked ``slow``) first, longest first (``slow(minutes=N)``, a rough idle
    figure, default 1), the rest in file order. ``make test`` hands tests to two workers one
    at a time (``--dist loadgroup``), so a long test started last would leave one core idle
    while it ran; started first, it runs beside the short ones."""

    def minutes(item: pytest.Item) -> float:
        mark = item.get_closest_marker("slow")
        return 0.0 if mark is None else float(mark.kwargs.get("minutes", 1))

    items.sort(key=lambda item: -minutes(item))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Uninstall it."""
    site = config.stash.get(_site, None)
    if site is not None:
        sys.path.remove(str(site))
        shutil.rmtree(site, ignore_errors=True)
        opsgym.refresh_envs()


def _users_stores() -> list[Path]:
    """The user's store files, as this process found the environment before any test ran."""
    named = os.environ.get("OPSGYM_DB", "")
    files = [Path(platformdirs.user_data_dir("opsgym")) / "opsgym.sqlite"]
    if named and "://" not in named:
        files.append(Path(named).expanduser())
    elif named.startswith("sqlite:///"):
        files.append(Path(named.removeprefix("sqlite:///")).expanduser())
    return [f.with_name(f.name + tail) for f in files for tail in ("", "-wal", "-shm")]


def _snapshot(files: list[Path]) -> dict[str, tuple[int, int] | None]:
    """Size and modification time of each file (``None``: absent)."""
    seen: dict[str, tuple[int, int] | None] = {}
    for file in files:
        try:
            stat = file.stat()
        except OSError:
            seen[str(file)] = None
        else:
            seen[str(file)] = (stat.st_size, stat.st_mtime_ns)
    return seen


USERS_STORES = _users_stores()
"""The user's store (and its WAL files): no test may touch them."""
_BEFORE = _snapshot(USERS_STORES)


@pytest.fixture(autouse=True, scope="session")
def _no_test_reaches_the_users_store(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """Point the default store into a temporary folder for the whole session (yields it)."""
    home = tmp_path_factory.mktemp("user-data")
    real = platformdirs.user_data_dir
    patch = pytest.MonkeyPatch()
    patch.setenv("OPSGYM_DB", str(home / "opsgym" / "opsgym.sqlite"))
    patch.setenv("XDG_DATA_HOME", str(home))

    def user_data_dir(appname: str | None = None, *args: Any, **kwargs: Any) -> str:
        if not os.environ.get("XDG_DATA_HOME"):  # a test may clear it: still not the user's
            return real(appname, *args, **kwargs).replace(real(), str(home), 1)
        return str(Path(os.environ["XDG_DATA_HOME"]) / (appname or ""))

    patch.setattr(platformdirs, "user_data_dir", user_data_dir)
    yield home
    patch.undo()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Say so if the user's store changed while the suite ran.

    A warning, not a failure: an ``opsgym`` command in another shell may write it meanwhile.
    A test that bypassed the redirection (a subprocess given an environment of its own) shows
    up here; ``test_no_test_reaches_the_users_store`` proves the redirection itself.
    """
    changed = [f for f, seen in _snapshot(USERS_STORES).items() if seen != _BEFORE[f]]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if changed and reporter is not None:
        reporter.write_line(
            f"WARNING: the user's store changed while the tests ran: {changed} (a test that "
            "escaped tests/conftest.py's redirection, or another process)",
            yellow=True,
        )


def playable(env: str, scenario: str | None, seed: int, families: Iterable[Any] = ()) -> int:
    """``seed``, or the dev or test seed of its ten (8 for an even seed, 9 for an odd one) where
    the episode request refuses it: a held-out family (the scenario, or any of ``families`` a
    ``mixed`` episode is forced to) never meets a train seed. Tests that sweep seeds use it.
    """
    spec = opsgym.core.registry.spec(env)
    names = {s.name for s in spec.scenarios}
    asked = [scenario, *(f for f in families if isinstance(f, str) and f in names)]
    held = any(spec.scenario(name).held_out for name in asked if name is None or name in names)
    if not held or opsgym.split_of(seed) != "train":
        return seed
    return seed - seed % 10 + (8 if seed % 2 == 0 else 9)


def make_playable(env: str, scenario: str | None, seed: int, **kwargs: Any) -> opsgym.Episode:
    """``opsgym.make`` on :func:`playable`'s seed (a forced ``family`` counted)."""
    family = (kwargs.get("overrides") or {}).get("family")
    return opsgym.make(env, scenario, playable(env, scenario, seed, [family]), **kwargs)


def random_valid_rollout(
    env: str,
    scenario: str | None,
    seed: int,
    steps: int,
    action_seed: int = 0,
    *,
    terminal: bool = True,
) -> opsgym.Episode:
    """Play ``steps`` uniformly drawn legal catalogue actions (or to the end); with
    ``terminal=False`` never the world's terminal tool (whose refusal ends an episode too), so
    that the walk lasts."""
    ep = make_playable(env, scenario, seed)
    rng = np.random.default_rng(action_seed)
    table = catalogue(env)
    for _ in range(steps):
        if ep.done:
            break
        legal = [i for i in legal_actions(ep) if terminal or not table[i][0].terminal]
        legal = legal or [len(table) - 1]
        tool, args = table[int(rng.choice(legal))]
        ep.step(tool.name, args.model_dump())
    return ep


def world_state(ep: opsgym.Episode) -> dict[str, Any]:
    """Everything about the world that a rejected call must leave alone."""
    w = ep.world
    return {
        "truth": w.truth(),
        "observe": w.observe(),
        "clock": w.clock,
        "rng": w.rng.bit_generator.state,
        "ended": w.ended,
    }


def lie_counts(ep: opsgym.Episode, kind: str) -> dict[str, int]:
    """Lies of ``kind`` told, trusted and reconciled so far in ``ep``."""
    return ep.world.lies.summary()["by_kind"].get(kind, {"told": 0, "trusted": 0, "reconciled": 0})


def measure_lies(
    env: str, name: str, seeds: list[int], kinds: Any, config: dict[str, Any] | None = None
) -> tuple[Counter, dict[str, Counter]]:
    """Lies told, trusted and reconciled by policy ``name`` over ``mixed`` episodes of
    ``seeds``, in all and per kind."""
    from opsgym.agents import get_policy, play

    total: Counter = Counter()
    by_kind: dict[str, Counter] = {k: Counter() for k in kinds}
    for seed in seeds:
        ep = opsgym.make(env, "mixed", seed, config=config)
        summary = play(ep, get_policy(env, name)).world.lies.summary()
        total.update({k: summary[k] for k in ("told", "trusted", "reconciled")})
        for kind, counts in summary["by_kind"].items():
            by_kind[kind].update(counts)
    return total, by_kind
