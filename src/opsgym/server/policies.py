"""Which policies a client may name over HTTP, and as what.

A policy name can make the server load a file or spend money: a Stable-Baselines3 zip or a
Transformers folder holds pickled objects (loading one from a path a client chose is running that
client's code), and ``llm:MODEL`` calls the server's model endpoint. So over HTTP:

=====================================  ===========================  ==========================
policy                                 agent token                  operator (or no token)
=====================================  ===========================  ==========================
``random``, the world's scripted ones  yes                          yes
``planner:POLICY``                     yes                          yes
``ppo:`` ``hf:`` ``hf+constrained:``   no                           only ``KIND:runs:NAME``
``llm:MODEL``                          no                           yes
any other prefixed kind                no                           no
=====================================  ===========================  ==========================

``runs:NAME`` is a run directly inside the server's runs folder (``--runs-dir``), with no
symbolic link in it (:func:`opsgym.agents.base.resolve_run`). The CLI still takes paths: its user
already runs code on the machine.
"""

from __future__ import annotations

from typing import Any

from opsgym.agents.base import FILE_KINDS, PREFIXED
from opsgym.core.errors import OpsgymError, PolicyRefusedError
from opsgym.core.scenarios import split_of

ROLE = "opsgym.role"
"""Where the guard (:mod:`opsgym.server.guard`) leaves who is asking in the ASGI scope."""


def role_of(scope: Any) -> str:
    """Who made this request, as the guard found it: ``operator`` (the operator token, or any
    client of a server without tokens) or ``agent`` (the agent token).
    """
    return scope.get(ROLE, "operator")


class AgentRefusedError(OpsgymError, PermissionError):
    """What the agent token may not ask for (a 403 naming the rule)."""


def check_episode(role: str, seed: Any, *, curriculum: bool = False) -> None:
    """Refuse an episode the agent token may not start: one on a dev or test seed it chose, or
    one of the server's shared curriculum.

    A chosen evaluation seed is a twin: the same seed replays the same hidden facts, so an agent
    that may start any seed can try calls on a copy of the episode it is scored on (issue 20).
    Training on train seeds stays open, and a seed the server draws is never shown before the
    end. The curriculum is state every client shares: an agent playing it moves it for all
    (the operator may).

    Raises:
        AgentRefusedError: naming the rule.
    """
    if role != "agent":
        return
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        split = split_of(seed)
        if split != "train":
            raise AgentRefusedError(
                f"the agent token may not choose a {split} seed (got {seed}): the same seed is "
                "a twin of an episode being scored. Omit the seed (the server draws one and "
                "shows it at the end) or train on train seeds"
            )
    if curriculum:
        raise AgentRefusedError(
            "the agent token may not play the server's curriculum: its results move state every "
            "client shares (the operator token may)"
        )


AGENT_KINDS = frozenset({"planner"})
"""Prefixed kinds the agent token may name: a scripted policy writing tool calls."""

OPERATOR_KINDS = AGENT_KINDS | FILE_KINDS | {"llm"}
"""Prefixed kinds the operator may name over HTTP (file kinds only as runs)."""


def check_policy(name: str, role: str) -> None:
    """Refuse ``name`` if a client of ``role`` (``operator`` or ``agent``) may not name it here.

    Names that are not prefixed (``random``, scripted policies) and kinds nobody registered
    pass: whether they exist is for :func:`opsgym.agents.get_policy` to say (a 404 listing what
    does).

    Raises:
        PolicyRefusedError: naming the rule that refuses it.
    """
    kind, prefixed, arg = name.partition(":")
    if not prefixed or kind not in PREFIXED:
        return
    allowed = AGENT_KINDS if role == "agent" else OPERATOR_KINDS
    if kind not in allowed:
        if kind in OPERATOR_KINDS:
            why = (
                "it spends the server's model endpoint"
                if kind == "llm"
                else "it loads a trained model"
            )
            raise PolicyRefusedError(
                f"policy {name!r} needs the operator token ({why}); the agent token may name "
                "random, the world's scripted policies and planner:POLICY"
            )
        raise PolicyRefusedError(f"policy kind {kind + ':'!r} is not served over HTTP")
    if kind in FILE_KINDS and not arg.startswith("runs:"):
        raise PolicyRefusedError(
            f"policy {name!r}: over HTTP a {kind}: policy names a run in the server's runs folder "
            f"({kind}:runs:NAME), never a path: model files hold pickled code"
        )
