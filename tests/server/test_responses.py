"""Every ``/api`` route documents its answer in OpenAPI (so typed clients can be generated from
``/openapi.json``), and what the live server answers is what is documented: each answer is read
by its route's own ``response_model``, whose models refuse unknown fields.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, TypeAdapter

from opsgym.evaluation.harness import evaluate
from opsgym.server import ServerSettings, create_app
from opsgym.server.openenv import JSON
from tests.server.conftest import running
from tests.server.test_training_api import server, start  # noqa: F401 -- server: the fixture
from tests.server.training_helpers import over, wait_for
from tests.server.wire import wait_until


def test_every_api_operation_documents_a_2xx_answer():
    schema = create_app(ServerSettings(db=":memory:")).openapi()
    undocumented = []
    count = 0
    for path, operations in schema["paths"].items():
        if not path.startswith("/api"):
            continue
        for method, operation in operations.items():
            count += 1
            answers = [r for code, r in operation["responses"].items() if code.startswith("2")]
            schemas = [c.get("schema") for r in answers for c in r.get("content", {}).values()]
            if not schemas or not all(schemas):
                undocumented.append(f"{method.upper()} {path}")
    assert count >= 30, count  # every /api route, the training ones among them
    assert not undocumented, undocumented


def test_a_route_returning_a_response_skips_its_response_model():
    """What the hot routes rely on: FastAPI sends a returned ``Response`` as it is, neither
    validated nor re-serialised by the declared model (which only documents it).
    """

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int

    app = FastAPI()

    @app.get("/t", response_model=Strict)
    def route() -> JSON:
        return JSON({"x": "not an int", "extra": 1})

    with TestClient(app) as client:
        reply = client.get("/t")
    assert reply.status_code == 200
    assert reply.json() == {"x": "not an int", "extra": 1}


# -- the live answers, read by their routes' models ----------------------------------------------


def documented(app: Any, method: str, url: str) -> Any:
    """The ``response_model`` of the route that answers ``method url``."""
    path = httpx.URL(url).path
    for route in api_routes(app.routes):
        if method in route.methods and route.path_regex.match(path):
            if route.response_model is not None:
                return route.response_model
    raise AssertionError(f"no route with a response model answers {method} {path}")


def api_routes(routes: list[Any]) -> Any:
    """Every ``APIRoute`` under ``routes`` (FastAPI >= 0.16x keeps included routers whole)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):
            yield from api_routes(route.original_router.routes)


def checked(live: Any, method: str, url: str, expect: int = 200, **kwargs: Any) -> Any:
    """Send the request, assert its status, and read its body by the route's model."""
    reply = live.client.request(method, url, **kwargs)
    assert reply.status_code == expect, f"{method} {url}: {reply.status_code} {reply.text[:500]}"
    TypeAdapter(documented(live.app, method, url)).validate_python(reply.json())
    return reply.json()


def test_the_worlds_sessions_and_store_answer_as_documented(tmp_path):
    db = str(tmp_path / "store.sqlite")
    evaluate("release", ["oracle", "naive"], episodes=2, db=db, name="small")
    with running(db=db, allow_overrides=True) as live:
        for env in ("release", "fleet", "oversight"):
            checked(live, "GET", f"/api/envs/{env}")
            checked(live, "GET", f"/api/envs/{env}/tasks?split=test")
        checked(live, "GET", "/api/envs")
        checked(live, "GET", "/api/envs/fleet/curriculum")
        checked(live, "POST", "/api/envs/fleet/compose", json={"faults": ["oom", "version"]})

        sid = checked(live, "POST", "/api/sessions", 201, json={"env": "fleet", "seed": 1})["id"]
        checked(live, "POST", f"/api/sessions/{sid}/step", json={"policy": "oracle"})
        checked(live, "GET", f"/api/sessions/{sid}")
        checked(live, "GET", "/api/sessions")
        body = {"policy": "oracle", "to_end": True}
        checked(live, "POST", f"/api/sessions/{sid}/step", json=body)
        ended = checked(live, "GET", f"/api/sessions/{sid}")
        assert ended["done"] and ended["family"]
        record = checked(live, "GET", f"/api/sessions/{sid}/record")["record"]
        checked(live, "GET", f"/api/sessions/{sid}/replay")
        checked(live, "POST", "/api/grade", json={"record": record})
        checked(live, "POST", "/api/timeline", json={"record": record, "limit": 3})
        checked(live, "DELETE", f"/api/sessions/{sid}")
        live.flush()

        rows = checked(live, "GET", "/api/episodes?order=newest")
        episode = rows[0]["id"]
        checked(live, "GET", f"/api/episodes/{episode}")
        checked(live, "GET", f"/api/episodes/{episode}/replay")
        checked(live, "GET", f"/api/episodes/{episode}/timeline?start=1&limit=2")
        checked(live, "GET", "/api/evaluations")
        checked(live, "GET", "/api/evaluations/small")
        checked(live, "GET", "/api/evaluations/small/pairs?a=oracle&b=naive")
        checked(live, "GET", "/api/evaluations/small/pairs?a=oracle&b=naive&versus=small")
        checked(live, "POST", "/api/evaluations/small/verify", 202)
        wait_until(
            lambda: live.client.get("/api/evaluations/small").json()["verify"]["status"] == "done",
            "the verification",
            60,
        )
        assert checked(live, "GET", "/api/evaluations/small")["verify"]["result"]["exit_code"] == 0
        body = {"env": "release", "policies": ["oracle"], "episodes": 1, "name": "tiny"}
        checked(live, "POST", "/api/evaluations", 202, json=body)
        checked(live, "GET", "/api/evaluations/tiny")  # stored or not yet: both documented
        wait_until(
            lambda: live.client.get("/api/evaluations/tiny").json()["status"] == "done",
            "the evaluation",
            60,
        )
        checked(live, "GET", "/api/evaluations/tiny")
        checked(live, "GET", "/api/evaluations")


def test_training_answers_as_documented(server):  # noqa: F811 -- the imported fixture
    live = server()
    checked(live, "GET", "/api/training")
    assert start(live, name="documented").status_code == 202
    checked(live, "GET", "/api/training/jobs/documented")
    checked(live, "GET", "/api/training/jobs")
    wait_for(live.client, "documented", over, 60)
    for tail in ("", "/metrics", "/summary", "/logs", "/artifacts"):
        checked(live, "GET", f"/api/training/jobs/documented{tail}")
    checked(live, "GET", "/api/training/runs")
    checked(live, "GET", "/api/training/runs/documented")
    assert start(live, name="stopped").status_code == 202
    checked(live, "POST", "/api/training/jobs/stopped/stop", 202)
    wait_for(live.client, "stopped", over, 60)
    checked(live, "DELETE", "/api/training/jobs/documented?files=true")
