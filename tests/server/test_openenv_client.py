"""OpenEnv's own client and validator against the real server (the ``openenv`` extra).

The server speaks OpenEnv's wire protocol without depending on ``openenv-core``; these tests
hold it to OpenEnv's own code: ``GenericEnvClient`` plays the oracle's calls over ``WS /ws``,
and ``openenv validate --url`` (the CLI, as a subprocess) checks the HTTP contract. They need
``pip install -e '.[openenv]'``; without it they are skipped, loudly, and with ``CI`` set in the
environment they fail instead, because CI installs the extra and must run them. Importing
``openenv.core`` costs ~8 s (it imports gradio), so it happens once, in a fixture.

``openenv.yaml`` (OpenEnv's manifest, at the repository root) is checked against the code here
too; that check needs no ``openenv``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import opsgym
from opsgym.server import ServerSettings

# One worker runs the module: its servers are module fixtures, started once.
pytestmark = [pytest.mark.xdist_group("openenv_client"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SEED = 9  # a test seed: `mixed` may draw a held-out family
VALIDATOR_CRITERIA = {
    "openapi_version_available",
    "health_endpoint",
    "metadata_endpoint",
    "schema_endpoint",
    "mcp_endpoint",
    "mode_endpoint_consistency",
}


def _missing(what: str, exc: BaseException | None = None) -> None:
    reason = (
        f"{what}: OpenEnv's EnvClient and `openenv validate` did NOT run against the server "
        "(pip install -e '.[openenv]'; CI installs it)"
    )
    if exc is not None:
        reason += f" [{type(exc).__name__}: {exc}]"
    if os.environ.get("CI"):
        pytest.fail(reason + " [CI is set, so this is a failure]")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def generic_client() -> Any:
    """OpenEnv's ``GenericEnvClient`` class."""
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError as exc:
        _missing("openenv-core is not installed", exc)
    return GenericEnvClient


@pytest.fixture(scope="module")
def openenv_cli() -> list[str]:
    """The command that runs OpenEnv's CLI: its console script beside this Python, if any."""
    try:
        import openenv.cli._validation  # noqa: F401  (cheap: no gradio)
    except ImportError as exc:
        _missing("openenv-core is not installed", exc)
    script = Path(sys.executable).with_name("openenv")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "openenv.cli"]


def _no_proxy_env() -> dict[str, str]:
    """The environment, with loopback kept away from any HTTP proxy it names."""
    env = dict(os.environ)
    for key in ("NO_PROXY", "no_proxy"):
        env[key] = ",".join(filter(None, [env.get(key), "127.0.0.1", "localhost"]))
    return env


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_generic_env_client_plays_the_oracles_episode(serve, generic_client, env: str) -> None:
    """OpenEnv's client resets, steps through the oracle's calls to the end, and reads the state;
    the server judges the episode as the oracle's own run was judged.
    """
    oracle = opsgym.run(env, "mixed", SEED, "oracle")
    calls = oracle.record()["calls"]
    spec = opsgym.core.registry.spec(env)
    live = serve()
    label = f"openenv-{env}-{SEED}"

    with generic_client(base_url=live.url).sync() as client:
        result = client.reset(env=env, scenario="mixed", seed=SEED, episode_id=label)
        assert result.done is False and result.reward is None
        assert result.observation["step"] == 0
        assert result.observation["steps_left"] == spec.max_steps
        tools = {t["function"]["name"] for t in result.observation["tools"]}
        assert tools == set(spec.world.tools)
        assert client.state() == {
            "episode_id": label,
            "step_count": 0,
            "env": env,
            "scenario": "mixed",
            "done": False,
            "steps_left": spec.max_steps,
        }

        rewards = []
        for i, call in enumerate(calls):
            assert not result.done, f"done after {i} of the oracle's {len(calls)} calls"
            result = client.step({"tool": call["tool"], "args": call["args"]})
            assert type(result.reward) in (int, float), result.reward
            assert type(result.done) is bool
            assert result.observation["step"] == i + 1
            assert result.observation["last"]["tool"] == call["tool"]
            rewards.append(result.reward)
        assert result.done is True and result.observation["done"] is True

        state = client.state()
        assert state["episode_id"] == label
        assert state["step_count"] == len(calls)
        assert state["done"] is True
        assert state["steps_left"] == spec.max_steps - len(calls)

        # An ended episode takes no step: an error reply, which the client raises.
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
            client.step({"tool": calls[-1]["tool"], "args": calls[-1]["args"]})
        # The connection lives on: a reset on it starts a new episode.
        again = client.reset(env=env, scenario="mixed", seed=SEED)
        assert again.done is False and again.observation["step"] == 0
        assert client.state()["step_count"] == 0

    # The ended episode was saved (the second, unfinished one was dropped with the socket).
    live.flush()
    rows = live.client.get("/api/episodes", params={"env": env}).json()
    assert len(rows) == 1, rows
    row = rows[0]
    assert (row["seed"], row["scenario"], row["policy"], row["split"]) == (
        SEED,
        "mixed",
        "client",
        "test",
    )
    assert row["steps"] == len(calls)
    assert row["outcome"] == oracle.verdict.outcome
    assert row["accepted"] == oracle.verdict.accepted
    assert row["return"] == pytest.approx(sum(rewards))


def test_generic_env_client_sees_the_verdict(serve, generic_client) -> None:
    """The step that ends an episode shows its verdict to an OpenEnv client: ``StepResult``
    keeps only ``observation``, ``reward`` and ``done``.
    """
    oracle = opsgym.run("release", "mixed", SEED, "oracle")
    live = serve()
    with generic_client(base_url=live.url).sync() as client:
        client.reset(env="release", scenario="mixed", seed=SEED)
        for call in oracle.record()["calls"]:
            result = client.step({"tool": call["tool"], "args": call["args"]})
    assert result.done
    verdict = result.observation.get("verdict")
    assert verdict is not None, sorted(result.observation)
    assert verdict["outcome"] == oracle.verdict.outcome
    assert verdict["accepted"] == oracle.verdict.accepted


def test_generic_env_client_shows_which_field_is_invalid_and_why(serve, generic_client) -> None:
    """Regression: the client raised ``Invalid message (code: VALIDATION_ERROR)`` and dropped
    the details; the message now names the field and the reason.
    """
    live = serve()
    with generic_client(base_url=live.url).sync() as client:
        client.reset(env="release", seed=1)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR") as bad_step:
            client.step({"tool": "stage", "force": True})
        assert "force" in str(bad_step.value)
        assert "Extra inputs are not permitted" in str(bad_step.value)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR") as bad_reset:
            client.reset(env="release", split="holdout")
        assert "split: " in str(bad_reset.value)
        assert client.state()["step_count"] == 0  # the episode lives on


def test_generic_env_client_gets_a_new_episode_id_on_every_reset(serve, generic_client) -> None:
    """Regression: ``state().episode_id`` was the connection's, the same after every reset."""
    live = serve()
    with generic_client(base_url=live.url).sync() as client:
        ids = []
        for seed in (1, 2, 3):
            client.reset(env="release", seed=seed)
            ids.append(client.state()["episode_id"])
        client.reset(env="release", seed=4, episode_id="chosen")
        assert client.state()["episode_id"] == "chosen"
    assert len(set(ids)) == 3 and None not in ids, ids


def test_openenv_validate_url_passes_every_criterion(serve, openenv_cli) -> None:
    """``openenv validate --url`` (runtime validation: a JSON report on stdout) passes."""
    live = serve()
    proc = subprocess.run(
        [*openenv_cli, "validate", "--url", live.url, "--timeout", "30"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_no_proxy_env(),
    )
    out = proc.stdout
    try:
        report = json.loads(out[out.index("{") :])
    except ValueError as exc:
        raise AssertionError(
            f"no JSON report (exit {proc.returncode}):\n{out[-3000:]}\n{proc.stderr[-3000:]}"
        ) from exc
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert not failed, json.dumps(failed, indent=2)
    assert report["passed"] is True and proc.returncode == 0, proc.stderr[-3000:]
    assert {c["id"] for c in report["criteria"]} >= VALIDATOR_CRITERIA
    assert report["summary"]["failed_criteria"] == []
    assert report["mode"] == "simulation"  # /reset, /step and /state all served


TOKEN = "operator-token-0123456789"


def _with_token(url: str, token: str = TOKEN) -> str:
    """``url`` with the token as HTTP Basic's password (user ``opsgym``), as README says."""
    return url.replace("http://", f"http://opsgym:{token}@")


def test_the_stock_client_carries_the_token_in_the_url(serve, generic_client) -> None:
    """A token-protected server: ``GenericEnvClient`` unchanged, given
    ``http://opsgym:TOKEN@host:port``, plays an episode (its WebSocket handshake sends the URL's
    credentials as HTTP Basic); without them, or with a wrong one, the handshake is refused.
    """
    live = serve(token=TOKEN)
    with generic_client(base_url=_with_token(live.url)).sync() as client:
        result = client.reset(env="release", scenario="nominal", seed=SEED)
        assert result.observation["step"] == 0
        result = client.step({"tool": "stage", "args": {}})
        assert result.observation["step"] == 1
        assert client.state()["step_count"] == 1
    for url in (live.url, _with_token(live.url, "wrong-token-0123456789")):
        with pytest.raises(ConnectionError, match="HTTP (401|403)"):
            with generic_client(base_url=url).sync() as client:
                client.reset(env="release", seed=SEED)


def test_openenv_validate_url_passes_with_the_token_in_the_url(serve, openenv_cli) -> None:
    """``openenv validate --url http://opsgym:TOKEN@...`` passes on a token-protected server
    (without the credentials it fails 5 of its 6 criteria: every route but /health wants them).
    """
    live = serve(token=TOKEN)
    proc = subprocess.run(
        [*openenv_cli, "validate", "--url", _with_token(live.url), "--timeout", "30"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_no_proxy_env(),
    )
    out = proc.stdout
    report = json.loads(out[out.index("{") :])
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert not failed, json.dumps(failed, indent=2)
    assert report["passed"] is True and proc.returncode == 0, proc.stderr[-3000:]
    assert {c["id"] for c in report["criteria"]} >= VALIDATOR_CRITERIA


def test_manifest_describes_the_server(serve) -> None:
    """``openenv.yaml`` says what the code does: name, app, port, routes, worlds, scenarios."""
    yaml = pytest.importorskip("yaml")
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert manifest["spec_version"] == 1
    assert (manifest["type"], manifest["runtime"]) == ("space", "fastapi")

    module, _, attr = manifest["app"].partition(":")
    from importlib import import_module

    assert getattr(import_module(module), attr) is opsgym.server.create_app
    defaults = ServerSettings.model_fields
    assert manifest["port"] == defaults["port"].default
    assert manifest["protocol"]["default_env"] == defaults["default_env"].default
    assert f"--port {manifest['port']}" in manifest["start"]

    live = serve()
    assert manifest["name"] == live.client.get("/metadata").json()["name"]
    paths = live.client.get("/openapi.json").json()["paths"]
    assert set(manifest["protocol"]["http"]) <= set(paths)
    from websockets.sync.client import connect

    with connect(live.url.replace("http://", "ws://") + manifest["protocol"]["websocket"]) as ws:
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"
    assert set(manifest["protocol"]["reset"]) <= _reset_fields(live)

    envs = manifest["environments"]
    assert list(envs) == list(opsgym.core.registry.package_specs())  # plugins are not its own
    for name, entry in envs.items():
        spec = opsgym.core.registry.spec(name)
        assert entry["gym_id"] == spec.gym_id, name
        assert entry["max_steps"] == spec.max_steps, name
        assert entry["scenarios"] == [s.name for s in spec.scenarios], name
        assert entry["held_out"] == [s.name for s in spec.scenarios if s.held_out], name


def _reset_fields(live: Any) -> set[str]:
    """The fields a reset takes, from the OpenAPI schema of ``POST /reset``'s body."""
    doc = live.client.get("/openapi.json").json()
    body = doc["paths"]["/reset"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    ref = body.get("$ref") or next(s["$ref"] for s in body.get("anyOf", []) if "$ref" in s)
    return set(doc["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
