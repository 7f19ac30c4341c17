"""The worlds' own routes (``EnvSpec.routes``), mounted under ``/api/envs/{world}/...``.

A world declares a route as data (:class:`~opsgym.core.spec.Route`: method, path, handler, body
model) and imports nothing of the server. Here each becomes a FastAPI route like any other: the
body is the world's pydantic model (a bad one is a 422 naming the field, and the OpenAPI document
shows its schema), the handler's value is the JSON answer, and the handler's errors take the
app's exception handlers (an unknown name is a 404). A world's route may not shadow a route the
server already has: :func:`router` refuses it when the app is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from fastapi import APIRouter
from starlette.routing import BaseRoute, Match

from opsgym.core.errors import SpecError
from opsgym.core.registry import specs
from opsgym.core.spec import Route
from opsgym.server.openenv import JSON

PREFIX = "/api/envs"


def router(taken: Iterable[BaseRoute] = ()) -> APIRouter:
    """Every registered world's routes, each at ``/api/envs/{world}{path}``.

    Raises:
        SpecError: a world's route would be answered by one of ``taken`` (the app's routes).
    """
    api = APIRouter(prefix=PREFIX)
    taken = list(taken)
    for name, spec in specs().items():
        for route in spec.routes:
            path = f"/{name}{route.path}"
            scope = {"type": "http", "path": PREFIX + path, "method": route.method}
            for other in taken:
                if other.matches(scope)[0] is Match.FULL:
                    raise SpecError(
                        f"{name}: route {route.method} {PREFIX}{path} is already the server's "
                        f"({getattr(other, 'path', other)}); choose another path"
                    )
            api.add_api_route(
                path,
                _endpoint(route),
                methods=[route.method],
                name=route.name,
                tags=["worlds"],
                response_model=route.reply or dict[str, Any],
            )
    return api


def _endpoint(route: Route) -> Callable[..., JSON]:
    """A FastAPI endpoint calling ``route.handler``; its signature names the body model."""
    handler = route.handler

    def endpoint(**body: Any) -> JSON:
        return JSON(handler(*body.values()))

    params = []
    if route.body is not None:
        kind = inspect.Parameter.KEYWORD_ONLY
        params.append(inspect.Parameter("body", kind, annotation=route.body))
    endpoint.__signature__ = inspect.Signature(params, return_annotation=JSON)  # type: ignore[attr-defined]
    endpoint.__name__ = route.name
    endpoint.__doc__ = handler.__doc__
    return endpoint
