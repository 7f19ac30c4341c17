"""Every registered world keeps the shape written down in ``src/opsgym/envs/README.md``.

The template's modules are read from that page's table, and the worlds from the registry (the
plugin world of ``tests/plugin_world`` included): no list of either is written here.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

from opsgym.core.registry import specs
from opsgym.core.spec import EnvSpec, WorldConfig

README = Path(__file__).parents[2] / "src" / "opsgym" / "envs" / "README.md"
ENVS = sorted(specs())


def _template() -> list[str]:
    """The modules in the first column of the README's table of modules, in order."""
    text = README.read_text()
    table = text.split("## The modules", 1)[1].split("\n\n| module", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `(\w+)\.py`", "| module" + table, flags=re.M)


TEMPLATE = _template()


def _package(spec: EnvSpec) -> ModuleType:
    return importlib.import_module(spec.world.__module__.rpartition(".")[0])


def _modules(package: ModuleType) -> set[str]:
    return {m.name for m in pkgutil.iter_modules(package.__path__)}


def _imports(package: ModuleType) -> dict[str, set[str]]:
    """Each module of ``package`` (``__init__`` too) -> the absolute modules it imports."""
    out: dict[str, set[str]] = {}
    for path in Path(package.__path__[0]).glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        out[path.stem] = found
    return out


def test_the_readme_names_the_template_modules():
    assert TEMPLATE[:3] == ["__init__", "world", "state"]
    assert {"scenarios", "judge", "rewards", "encode", "policies", "exploits"} <= set(TEMPLATE)


@pytest.mark.parametrize("env", ENVS)
def test_a_world_is_one_module_or_has_every_template_module(env):
    modules = _modules(_package(specs()[env]))
    if modules != {"world"}:  # the minimal form: every concern in world.py
        missing = [m for m in TEMPLATE if m != "__init__" and m not in modules]
        assert not missing, f"{env} lacks {missing} (see src/opsgym/envs/README.md)"


@pytest.mark.parametrize("env", ENVS)
def test_the_spec_takes_each_concern_from_its_module(env):
    spec = specs()[env]
    package = _package(spec)
    name = package.__name__
    assert package.SPEC is spec and spec.manual == package.__doc__
    assert spec.world.__module__ == f"{name}.world"
    if _modules(package) == {"world"}:
        return
    home = {m: importlib.import_module(f"{name}.{m}") for m in TEMPLATE if m != "__init__"}
    assert spec.encoder.__module__ == f"{name}.encode"
    assert isinstance(home["state"].View, type)
    assert spec.scenarios == home["scenarios"].SCENARIOS
    assert spec.config is WorldConfig or spec.config.__module__ == f"{name}.scenarios"
    assert spec.judge is home["judge"].JUDGE
    rewards = home["rewards"]
    assert spec.rewards == rewards.REWARDS and spec.outcome_rewards == rewards.OUTCOME_REWARDS
    assert spec.settled == rewards.SETTLED and spec.brief == rewards.BRIEF
    assert spec.policies == home["policies"].POLICIES
    assert spec.exploits == home["exploits"].EXPLOITS


@pytest.mark.parametrize("env", ENVS)
def test_a_world_imports_only_core_and_itself(env):
    package = _package(specs()[env])
    own = package.__name__
    for module, imported in _imports(package).items():
        for target in imported:
            if target.split(".")[0] == "opsgym" or target.startswith(own.split(".")[0] + "."):
                ok = target.startswith(("opsgym.core.", f"{own}.")) or target in (
                    "opsgym.core",
                    own,
                )
                assert ok, f"{own}.{module} imports {target}: a world imports only opsgym.core"


@pytest.mark.parametrize("env", ENVS)
def test_nothing_below_the_world_imports_it_back(env):
    package = _package(specs()[env])
    world = f"{package.__name__}.world"
    for module, imported in _imports(package).items():
        if module not in ("__init__", "exploits", "world"):
            back = sorted(t for t in imported if t == world or t.startswith(world + "."))
            assert not back, f"{package.__name__}.{module} imports {back}"
