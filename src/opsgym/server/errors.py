"""The server's own refusals, each mapped to its status by the app's exception handlers.

Domain errors (an unknown name, a refused policy, a bad value) come from
:mod:`opsgym.core.errors`; these two say what only a server can: the thing named is not here,
or it is here but not in a state to take the request.
"""

from __future__ import annotations

from opsgym.core.errors import OpsgymError


class Missing(OpsgymError, LookupError):
    """What the request names does not exist here (404)."""


class Conflict(OpsgymError):
    """The request is well formed but the resource is not in a state to take it (409)."""
