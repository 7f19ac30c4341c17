"""`opsgym serve`: unsafe settings are refused in one line; safe ones serve."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx

OPSGYM = [sys.executable, "-m", "opsgym.cli"]


def _serve(*args: str, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        [*OPSGYM, "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_a_public_bind_without_a_token_is_refused_in_one_line(tmp_path):
    done = _serve("--host", "0.0.0.0", "--db", str(tmp_path / "s.sqlite"))
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and done.stdout == "", done.stderr
    assert "token" in lines[0] and "0.0.0.0" in lines[0]


def test_a_short_token_and_an_unknown_world_are_refused_in_one_line(tmp_path):
    short = _serve("--host", "0.0.0.0", "--token", "abc", "--db", str(tmp_path / "s.sqlite"))
    assert short.returncode == 2 and "16 characters" in short.stderr
    unknown = _serve("--env", "relase", "--db", str(tmp_path / "s.sqlite"))
    assert unknown.returncode == 2 and "Did you mean 'release'" in unknown.stderr


class _Served:
    """``opsgym serve`` in a subprocess on a free loopback port."""

    def __init__(self, tmp_path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [*OPSGYM, "serve", "--port", str(self.port), "--db", str(tmp_path / "s.sqlite"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/health", timeout=1)
                return
            except httpx.TransportError:
                assert self.proc.poll() is None, self.proc.stderr.read()
                assert time.monotonic() < deadline, "opsgym serve did not answer"
                time.sleep(0.2)

    def stop(self) -> str:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        return out


def test_serve_answers_on_loopback_and_stops_cleanly(tmp_path):
    served = _Served(tmp_path)
    try:
        assert httpx.get(served.url + "/health").json() == {"status": "healthy"}
        made = httpx.post(served.url + "/api/sessions", json={"env": "release", "seed": 9})
        assert made.status_code == 201
    finally:
        out = served.stop()
    assert served.url in out
    assert served.proc.returncode in (0, -15)


def test_the_token_may_come_from_the_environment(tmp_path):
    token = "t" * 24
    served = _Served(tmp_path, env={"OPSGYM_TOKEN": token})
    try:
        assert httpx.get(served.url + "/health").status_code == 200
        assert httpx.get(served.url + "/api/envs").status_code == 401
        authed = {"authorization": f"Bearer {token}"}
        assert httpx.get(served.url + "/api/envs", headers=authed).status_code == 200
    finally:
        served.stop()


def test_the_agent_token_reaches_the_worlds_and_sessions_but_not_the_store(serve):
    operator, agent = "o" * 20, "a" * 20
    live = serve(token=operator, agent_token=agent)
    as_agent = {"authorization": f"Bearer {agent}"}
    made = live.client.post("/api/sessions", json={"env": "release"}, headers=as_agent)
    assert made.status_code == 201
    sid = made.json()["id"]
    step = live.client.post(f"/api/sessions/{sid}/step", json={"tool": "inspect"}, headers=as_agent)
    assert step.status_code == 200
    for path in ("/api/episodes", "/api/evaluations", "/api/sessions"):
        refused = live.client.get(path, headers=as_agent)
        assert refused.status_code == 403, path
        assert live.client.get(path).status_code == 200, path  # the operator's token
    assert live.client.post("/api/grade", json={"record": {}}, headers=as_agent).status_code == 403
    assert (
        live.client.get("/api/envs", headers={"authorization": "Bearer wrong"}).status_code == 401
    )


def test_serve_takes_allowed_hosts_and_a_runs_folder(tmp_path):
    runs = tmp_path / "my-runs"
    (runs / "r1").mkdir(parents=True)
    args = (
        "--allowed-hosts",
        "ops.example",
        "--allowed-hosts",
        "ui.example",
        "--runs-dir",
        str(runs),
    )
    served = _Served(tmp_path, args=args)
    try:
        for host, expected in (("ops.example:80", 200), ("ui.example", 200), ("evil.example", 403)):
            got = httpx.get(served.url + "/api/envs", headers={"host": host}).status_code
            assert got == expected, host
        sid = httpx.post(served.url + "/api/sessions", json={"env": "release"}).json()["id"]
        missing = httpx.post(
            f"{served.url}/api/sessions/{sid}/step", json={"policy": "ppo:runs:r2"}
        )
        assert missing.status_code == 404 and "r1" in missing.json()["detail"]  # listed from there
    finally:
        served.stop()
