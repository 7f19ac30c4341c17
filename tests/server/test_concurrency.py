"""Sessions played at the same time do not see each other: sixteen clients, each in its own
thread with its own connection, each end as their seeds end alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.server.wire import ENVS, act, alone, calls_of, create, reset, stored, verdict_of, ws

CLIENTS = 16


def over_rest(live: Any, env: str, seed: int, calls: list, start: threading.Barrier) -> dict:
    """Play ``calls`` one request each; what every step showed, and the verdict."""
    with httpx.Client(base_url=live.url, timeout=60) as client:
        sid = create(client, env=env, scenario="mixed", seed=seed)["id"]
        start.wait()
        seen = []
        for tool, args in calls:
            reply = client.post(f"/api/sessions/{sid}/step", json={"tool": tool, "args": args})
            seen += [(s["report"], s["done"]) for s in reply.json()["steps"]]
        return {"seen": seen, "verdict": client.get(f"/api/sessions/{sid}").json()["verdict"]}


def by_policy(live: Any, env: str, seed: int, calls: list, start: threading.Barrier) -> dict:
    """Let the oracle play the whole episode in one request (on the server's worker threads)."""
    with httpx.Client(base_url=live.url, timeout=60) as client:
        sid = create(client, env=env, scenario="mixed", seed=seed)["id"]
        start.wait()
        reply = client.post(
            f"/api/sessions/{sid}/step", json={"policy": "oracle", "to_end": True}
        ).json()
        assert calls_of(reply["steps"]) == calls
        seen = [(s["report"], s["done"]) for s in reply["steps"]]
        return {"seen": seen, "verdict": reply["session"]["verdict"]}


def over_ws(live: Any, env: str, seed: int, calls: list, start: threading.Barrier) -> dict:
    """Play ``calls`` over a WebSocket of its own."""
    with ws(live) as sock:
        reset(sock, env=env, scenario="mixed", seed=seed)
        start.wait()
        seen, verdict = [], None
        for tool, args in calls:
            data = act(sock, tool, args)["data"]
            seen.append((data["observation"]["last"]["report"], data["done"]))
            verdict = data.get("verdict")
        return {"seen": seen, "verdict": verdict}


def test_sixteen_concurrent_sessions_each_end_as_their_seed_ends_alone(live):
    """Every client plays a different seed of a world at once, over REST one call a request,
    over REST by a policy, or over the WebSocket; each sees, call for call, what its seed shows
    alone, and ends with the same verdict.
    """
    faces = (over_rest, by_policy, over_ws)
    plan = []
    for i in range(CLIENTS):
        env, seed = ENVS[i % len(ENVS)], 100 + i
        plan.append((faces[i % len(faces)], env, seed, alone(env, "mixed", seed)))
    start = threading.Barrier(CLIENTS, timeout=60)
    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [
            pool.submit(face, live, env, seed, calls_of(solo.events), start)
            for face, env, seed, solo in plan
        ]
        results = [f.result(timeout=120) for f in futures]
    for (face, env, seed, solo), result in zip(plan, results, strict=True):
        where = f"{face.__name__} {env} seed {seed}"
        assert result["seen"] == [(e["report"], e["done"]) for e in solo.events], where
        assert result["verdict"] == verdict_of(solo), where
    live.flush()
    saved = {(r["env"], r["seed"]): r["outcome"] for r in stored(live.client)}
    assert saved == {(env, seed): solo.verdict.outcome for _, env, seed, solo in plan}
