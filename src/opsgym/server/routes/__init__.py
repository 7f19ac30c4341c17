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


def routers(*, allow_overrides: bool = False) -> list[APIRouter]:
    """Every ``/api`` resource's router, for the app to include in this order
    (``allow_overrides``: sessions may force hidden facts; leak tests).

    A list rather than one ``/api`` router: FastAPI keeps an included router whole and tries
    its routes through it, so each level of nesting costs every request its matching again.
    """
    return [
        sessions.router,  # first: it holds the route every REST step takes
        sessions.creating(allow_overrides),
        envs.router,
        episodes.router,
        evaluations.router,
    ]
