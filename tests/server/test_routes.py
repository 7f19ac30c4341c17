"""The ``/api`` routers, one per resource (:mod:`opsgym.server.routes`): every route each one
declares is served and documented with its answer's model, the state they share comes from
the app they serve (never from another app in the same process), and the step route is matched
first.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from opsgym.server import ServerSettings, create_app, routes
from opsgym.server.routes.sessions import HOT_ROUTE, creating

LOCAL = "http://127.0.0.1"  # the guard answers a tokenless server's own host names only


def resource_routers() -> dict[str, Any]:
    """Every module of the package that declares a ``router``, by name."""
    found = {}
    for info in pkgutil.iter_modules(routes.__path__):
        module = importlib.import_module(f"{routes.__name__}.{info.name}")
        if hasattr(module, "router"):
            found[info.name] = module.router
    return found


def test_each_resource_has_its_own_router():
    assert set(resource_routers()) >= {"envs", "sessions", "episodes", "evaluations"}


def test_every_route_of_every_resource_router_is_documented_with_its_answers_model():
    for forced in (False, True):
        doc = create_app(ServerSettings(db=":memory:", allow_overrides=forced)).openapi()
        declared = [r for router in resource_routers().values() for r in router.routes]
        declared += creating(forced).routes
        assert declared and all(isinstance(r, APIRoute) for r in declared)
        for route in declared:
            assert route.response_model is not None, route.path
            for method in route.methods:
                operation = doc["paths"][route.path][method.lower()]
                answer = operation["responses"][str(route.status_code or 200)]
                assert answer["content"]["application/json"]["schema"], (method, route.path)
                assert operation["operationId"].startswith(route.name), operation["operationId"]
                assert operation["tags"] == route.tags


def test_the_create_body_is_each_apps_own_though_the_routers_are_shared(tmp_path):
    """Overrides are a field only where the server allows them, whichever app was made last."""
    body = {"env": "release", "seed": 1, "overrides": {"v2_broken": True}}
    forced = create_app(ServerSettings(db=str(tmp_path / "a.sqlite"), allow_overrides=True))
    plain = create_app(ServerSettings(db=str(tmp_path / "b.sqlite")))
    forced_again = create_app(ServerSettings(db=str(tmp_path / "c.sqlite"), allow_overrides=True))
    for app, expected in ((forced, 201), (plain, 422), (forced_again, 201)):
        reply = TestClient(app, base_url=LOCAL).post("/api/sessions", json=body)
        assert reply.status_code == expected, reply.text
        if expected == 422:
            assert [e["loc"] for e in reply.json()["detail"]] == [["body", "overrides"]]
        else:  # each app's sessions are its own manager's
            assert list(app.state.manager.sessions) == [reply.json()["id"]]


def test_the_step_route_is_the_first_api_route_a_request_tries():
    def flat(found: list[Any]) -> Any:
        for route in found:
            if hasattr(route, "original_router"):
                yield from flat(route.original_router.routes)
            else:
                yield route

    paths = [getattr(r, "path", "") for r in flat(create_app(db=":memory:").routes)]
    assert [p for p in paths if p.startswith("/api")][0] == HOT_ROUTE
