"""``opsgym serve``: OpenEnv's wire protocol, REST sessions and the store over HTTP.

Needs the ``server`` extra (FastAPI, Uvicorn). See :mod:`opsgym.server.app` for what is safe by
default, :mod:`opsgym.server.openenv` for the protocol, :mod:`opsgym.server.routes` for ``/api`` and
:mod:`opsgym.server.training` for training jobs (``/api/training``).
"""

from opsgym.server.app import create_app, serve
from opsgym.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "serve"]
