"""The REST face under ``/api``: one router per resource, sharing state through dependencies.

=====================  ============================================================  ===========
module                 routes                                                        tag
=====================  ============================================================  ===========
:mod:`.envs`           ``/api/envs``, ``/{env}``, ``/{env}/tasks``, ``/{env}/curriculum``  worlds
:mod:`.sessions`       ``/api/sessions`` (create, list), ``/{id}``, ``/{id}/step``,       sessions
                       ``/{id}/record``, ``DELETE /{id}``
:mod:`.episodes`       ``/api/episodes``, ``/{id}``, ``/{id}/timeline``, ``/{id}/replay``,  store
                       ``POST /api/grade``, ``POST /api/timeline``
:mod:`.evaluations`    ``/api/evaluations``, ``/{name}``, ``/{name}/verify``,             store
                       ``/{name}/pairs``
=====================  ============================================================  ===========

Routes are thin: they check the body (pydantic, ``extra="forbid"``), call the session manager,
the store or the harness, and shape the answer. What they share (the settings, the session
manager, the store, the evaluation jobs, the replay cache, the caller's role) they ask for as
FastAPI dependencies (:mod:`.deps`), read from ``app.state``. Training jobs are under
``/api/training`` (:mod:`opsgym.server.training`); a world's own routes under
``/api/envs/{world}/`` (:mod:`opsgym.server.worlds`).
"""

from __future__ import annotations

from fastapi import APIRouter

from opsgym.server.routes import envs, episodes, evaluations, sessions


def router(*, allow_overrides: bool = False) -> APIRouter:
    """Every ``/api`` route (``allow_overrides``: sessions may force hidden facts; leak tests)."""
    api = APIRouter()
    api.include_router(sessions.router)  # first: it holds the route every REST step takes
    api.include_router(sessions.creating(allow_overrides))
    api.include_router(envs.router)
    api.include_router(episodes.router)
    api.include_router(evaluations.router)
    return api
