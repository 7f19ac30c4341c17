"""What the server takes from the worlds' specs alone: their routes, and ``openenv.yaml``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

import opsgym
from opsgym import cli
from opsgym.core.errors import SpecError
from opsgym.core.registry import package_specs, specs
from opsgym.core.spec import Route
from opsgym.server.app import create_app
from opsgym.server.manifest import render
from tests.conftest import install_plugin
from tests.plugin_world import SPEC as FLAG

ROOT = Path(__file__).resolve().parents[2]


# -- the worlds' own routes -------------------------------------------------------------------


def test_every_worlds_routes_are_mounted_under_its_prefix_the_plugins_too(live):
    paths = live.client.get("/openapi.json").json()["paths"]
    declared = {f"/api/envs/{s.name}{r.path}" for s in specs().values() for r in s.routes}
    assert declared == {"/api/envs/fleet/compose", "/api/envs/flag/plan"}
    assert declared <= set(paths)
    plan = paths["/api/envs/flag/plan"]["post"]
    assert plan["tags"] == ["worlds"] and plan["description"].startswith("The oracle's calls")
    body = plan["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PlanRequest"}


def test_a_worlds_route_validates_its_body_with_the_worlds_model(live):
    made = live.client.post("/api/envs/flag/plan", json={"lost_writes": 1})
    assert made.status_code == 200
    assert made.json() == {"calls": ["enable", "read_flag"] * 2 + ["complete"], "steps": 5}
    for bad, field in (({"lost_writes": 9}, "lost_writes"), ({"lost_writes": 1, "x": 0}, "x")):
        refused = live.client.post("/api/envs/flag/plan", json=bad)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", field]
    assert live.client.get("/api/envs/flag/plan").status_code == 405


def test_a_world_route_that_the_server_already_answers_is_refused(tmp_path, monkeypatch):
    shadow = dataclasses.replace(
        FLAG,
        name="shadow",
        gym_id="opsgym_flag/Shadow-v0",
        routes=(Route("GET", "/tasks", lambda: {}),),
    )
    monkeypatch.setattr("tests.plugin_world.SHADOW", shadow, raising=False)
    install_plugin(tmp_path, "shadow = tests.plugin_world:SHADOW", dist="opsgym_shadow")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert "shadow" in opsgym.refresh_envs()
        with pytest.raises(SpecError, match=r"GET /api/envs/shadow/tasks is already the server's"):
            create_app(db=str(tmp_path / "store.sqlite"))
    finally:
        monkeypatch.undo()
        opsgym.refresh_envs()


# -- openenv.yaml -----------------------------------------------------------------------------


def test_the_committed_openenv_yaml_is_what_the_specs_generate():
    written = (ROOT / "openenv.yaml").read_text()
    assert written == render(package_specs().values()), "run `opsgym openenv-yaml`"


def test_the_command_writes_checks_and_names_plugins_only_when_asked(tmp_path):
    out = tmp_path / "openenv.yaml"
    runner = CliRunner()
    stale = runner.invoke(cli.app, ["openenv-yaml", "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "stale" in stale.output
    wrote = runner.invoke(cli.app, ["openenv-yaml", "--out", str(out)])
    assert wrote.exit_code == 0, wrote.output
    assert out.read_text() == (ROOT / "openenv.yaml").read_text()
    assert runner.invoke(cli.app, ["openenv-yaml", "--out", str(out), "--check"]).exit_code == 0
    runner.invoke(cli.app, ["openenv-yaml", "--out", str(out), "--plugins"])
    text = out.read_text()
    assert "  flag:\n    gym_id: opsgym_flag/Flag-v0\n" in text
    assert "routes: [POST /api/envs/flag/plan]" not in text  # a space inside: quoted
    assert '    routes: ["POST /api/envs/flag/plan"]\n' in text
