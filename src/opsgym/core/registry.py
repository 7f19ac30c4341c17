"""Discovery of environments, and the functions of the public API that build episodes.

A world is found in one of two places, and adding one needs no change anywhere else:

* a subpackage of ``opsgym.envs`` that defines ``SPEC`` (an :class:`~opsgym.core.spec.EnvSpec`);
* an entry point of the group :data:`ENTRY_POINTS` in an installed distribution, naming a module
  that defines ``SPEC`` or the ``EnvSpec`` itself, as Gymnasium loads plugin environments::

      [project.entry-points."opsgym.envs"]
      flag = "opsgym_flag"            # or "opsgym_flag.spec:SPEC"

A plugin that cannot be loaded, is not an ``EnvSpec`` or takes a name already held (the
package's own worlds come first) is skipped with a warning, so that one broken package does not
break ``import opsgym``. Discovery runs once; :func:`refresh` runs it again (a test that installs
a plugin, a notebook after ``pip install``).

The registry is core, and core imports no world: the worlds' package is found by its name
(:data:`WORLDS`) when the registry is first asked, as Gymnasium loads an ``entry_point``
string, so no static import points up from core (the layers contract in ``pyproject.toml``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import warnings
from collections.abc import Iterator
from functools import cache
from types import ModuleType
from typing import Any

from opsgym.core.episode import Episode
from opsgym.core.errors import UnknownNameError
from opsgym.core.request import EpisodeRequest
from opsgym.core.scenarios import check_seed, families
from opsgym.core.spec import EnvSpec
from opsgym.core.tools import Args, Tool

WORLDS = "opsgym.envs"
"""The package whose subpackages are the worlds."""

ENTRY_POINTS = "opsgym.envs"
"""The entry-point group through which installed packages add worlds."""


@cache
def specs() -> dict[str, EnvSpec]:
    """Every registered environment, by name (sorted): the package's, then the plugins'."""
    found = {spec.name: spec for spec in _package_worlds()}
    for where, spec in _plugin_worlds():
        if spec.name in found:
            warnings.warn(
                f"opsgym world plugin {where} is skipped: the name {spec.name!r} is taken",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        found[spec.name] = spec
    return dict(sorted(found.items()))


def package_specs() -> dict[str, EnvSpec]:
    """The worlds of the opsgym package itself, by name (no plugin): what ``openenv.yaml``
    describes.
    """
    return {spec.name: spec for spec in _package_worlds()}


def refresh() -> dict[str, EnvSpec]:
    """Discover the worlds again (plugins installed or removed since) and return them.

    Gymnasium ids follow with :func:`opsgym.refresh_envs`, which calls this.
    """
    specs.cache_clear()
    catalogue.cache_clear()
    return specs()


def _package_worlds() -> Iterator[EnvSpec]:
    worlds = importlib.import_module(WORLDS)
    for info in sorted(pkgutil.iter_modules(worlds.__path__), key=lambda m: m.name):
        spec = getattr(importlib.import_module(f"{WORLDS}.{info.name}"), "SPEC", None)
        if isinstance(spec, EnvSpec):
            yield spec


def _plugin_worlds() -> Iterator[tuple[str, EnvSpec]]:
    """``(where, spec)`` of each loadable ``opsgym.envs`` entry point, by entry-point name."""
    found = importlib.metadata.entry_points(group=ENTRY_POINTS)
    for point in sorted(found, key=lambda p: (p.name, p.value)):
        where = f"{point.name} = {point.value!r}"
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin must not break every other world
            warnings.warn(
                f"opsgym world plugin {where} could not be loaded: {exc!r}",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        spec = getattr(loaded, "SPEC", None) if isinstance(loaded, ModuleType) else loaded
        if not isinstance(spec, EnvSpec):
            warnings.warn(
                f"opsgym world plugin {where} is skipped: it names neither an EnvSpec nor a "
                f"module defining SPEC, got {type(loaded).__name__}",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        yield where, spec


def spec(env: str) -> EnvSpec:
    """The spec of ``env``; unknown names raise with close matches."""
    try:
        return specs()[env]
    except (KeyError, TypeError):
        raise UnknownNameError("environment", env, specs()) from None


def list_envs() -> list[str]:
    """Names of every environment, e.g. ``["fleet", "oversight", "release"]``."""
    return list(specs())


def scenarios(env: str, split: str = "train") -> list[str]:
    """Names of the scenario families of ``env`` in ``split`` (held-out ones only in dev/test)."""
    return families(spec(env).scenarios, split)


def make(
    env: str,
    scenario: str | None = None,
    seed: int = 0,
    *,
    max_steps: int | None = None,
    overrides: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    reward_timing: str = "end",
    token_source: str = "caller",
) -> Episode:
    """Start an episode.

    Args:
        env: Environment name (see :func:`list_envs`).
        scenario: Fault family (see :func:`scenarios`); the environment's first when ``None``.
        seed: Seeds everything random in the episode; its split (``seed % 10``: 0-7 train, 8
            dev, 9 test) decides the families it may face (no held-out family on a train seed).
        max_steps: Step budget; ``None`` takes the environment's default.
        overrides: Force hidden facts the seed would draw (leak tests, curricula, debugging).
        config: Public settings of the episode (each environment documents its keys).
        reward_timing: ``"end"`` (default) pays reward computed from hidden facts on the last
            step; ``"dense"`` pays it at once and leaks the truth through the reward.
        token_source: Who counts the tokens passed to ``Episode.step(tokens=...)``.

    Every rule of the request is :mod:`opsgym.core.request`'s, as on every other face.
    """
    return EpisodeRequest(
        env,
        scenario,
        check_seed(seed),
        config=config or {},
        overrides=overrides or {},
        max_steps=max_steps,
        reward_timing=reward_timing,
        token_source=token_source,
    ).start()


def hidden_facts(env: str, scenario: str | None = None) -> dict[str, dict[str, list[Any]]]:
    """The hidden facts of a scenario: ``{fact: {"values": [...], "revealed_by": [...]}}``.

    ``values`` are the values the leak test forces; ``revealed_by`` are the tools that may
    legitimately reveal the fact (no other channel may).
    """
    return spec(env).scenario(scenario).hidden_facts()


@cache
def catalogue(env: str) -> tuple[tuple[Tool, Args], ...]:
    """The discrete action catalogue of ``env``: index ``i`` is ``(tool, args)``."""
    s = spec(env)
    tools = s.world.tools
    return tuple(
        (tools[name], tools[name].args.model_validate(args)) for name, args in s.encoder().actions
    )


def legal_actions(episode: Episode) -> list[int]:
    """Indices of the catalogue actions that pass validation now."""
    view = episode.world.view
    return [i for i, (t, a) in enumerate(catalogue(episode.env)) if t.check(view, a) is None]
