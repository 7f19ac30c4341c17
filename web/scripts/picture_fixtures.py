"""Write the world pictures' test fixtures: real observations and truths, from episodes played
through the server's REST API (an in-process app on a temporary store).

    cd web && PYTHONPATH=../src ../.venv/bin/python scripts/picture_fixtures.py

Each world's file holds a few episodes; each episode the steps the tests draw (the observation
after the step and, as an ended episode's viewer gets it, the truth after it) and its lies.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from opsgym.server import ServerSettings, create_app

OUT = Path(__file__).resolve().parent.parent / "src" / "pictures" / "__fixtures__"

# world -> episode name -> (scenario, seed, policy, steps kept: 0 is the start, -1 the last)
EPISODES: dict[str, dict[str, tuple[str, int, str, tuple[int, ...]]]] = {
    "release": {
        "timeout": ("deploy_timeout", 3, "oracle", (0, 2, -1)),
        "stale": ("stale_health", 2, "naive", (-1,)),
        "partial": ("partial_traffic_shift", 2, "naive", (-1,)),
    },
    "fleet": {
        "black_swan": ("black_swan", 1, "oracle", (0, 1, 16, -1)),
        "gpu_lost": ("gpu_lost", 1, "naive", (-1,)),
        "rescheduled": ("gpu_lost", 1, "oracle", (-1,)),
    },
    "oversight": {
        "blocked": ("mixed", 1, "oracle", (0, 5, -1)),
        "unsafe": ("canary_over_error_budget", 2, "approve_all", (-1,)),
    },
}


def play(client: TestClient, env: str, scenario: str, seed: int, policy: str) -> dict[str, Any]:
    """Play one episode to its end by a named policy: every observation, and the record."""
    body = {"env": env, "scenario": scenario, "seed": seed, "split": "train"}
    created = client.post("/api/sessions", json=body)
    created.raise_for_status()
    sid = created.json()["id"]
    observations = [created.json()["observation"]]
    while True:
        stepped = client.post(f"/api/sessions/{sid}/step", json={"policy": policy})
        stepped.raise_for_status()
        session = stepped.json()["session"]
        observations.append(session["observation"])
        if session["done"]:
            break
    record = client.get(f"/api/sessions/{sid}/record").json()
    return {"observations": observations, "record": record}


def episode(played: dict[str, Any], keep: tuple[int, ...], about: dict[str, Any]) -> dict[str, Any]:
    """The steps ``keep`` of a played episode, as a fixture: observation and truth, and its lies."""
    observations, record = played["observations"], played["record"]
    events = record["record"]["events"]
    steps = []
    for index in keep:
        step = index % len(observations)
        steps.append(
            {
                "step": step,
                "observation": observations[step],
                # the truth after step n is event n-1's; before the first call there is none
                "truth": events[step - 1]["truth"] if step else None,
            }
        )
    return {
        **about,
        "outcome": record["verdict"]["outcome"],
        "steps": steps,
        "lies": record["lies"]["told"],
    }


def main() -> None:
    """Play every fixture episode on a fresh in-process server; write one file per world."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = ServerSettings(
            host="127.0.0.1", db=f"{tmp}/store.sqlite", runs_dir=f"{tmp}/runs"
        )
        app = create_app(settings)
        # a loopback server answers loopback clients only
        with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as client:
            for env, episodes in EPISODES.items():
                out = {}
                for name, (scenario, seed, policy, keep) in episodes.items():
                    about = {"env": env, "scenario": scenario, "seed": seed, "policy": policy}
                    out[name] = episode(play(client, env, scenario, seed, policy), keep, about)
                path = OUT / f"{env}.json"
                path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
                print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
