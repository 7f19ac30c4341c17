"""Trained policies as named policies: ``ppo:PATH`` (extra ``train``), ``hf:PATH`` and
``hf+constrained:PATH`` (extra ``grpo``), and both in the ``llm:`` policies' conversation format,
``hf+snapshot:PATH`` and ``hf+constrained+snapshot:PATH``.

The factories import their policies (and with them torch or Transformers) only when a policy of
their kind is asked for, so naming the kinds costs nothing.
"""

from __future__ import annotations

from typing import Any

from opsgym.agents.base import PREFIXED
from opsgym.core.errors import MissingExtraError


def _ppo(env: str, path: str) -> Any:
    from opsgym.agents.ppo import PPOPolicy

    return PPOPolicy(env, path)


PREFIXED.setdefault("ppo", _ppo)


def _hf(constrained: bool, format: str = "history") -> Any:
    """``hf:PATH`` (free generation) or ``hf+constrained:PATH`` (the likeliest valid call), a
    local Transformers model (extra ``grpo``; see :mod:`opsgym.agents.hf`), in ``format``.
    """

    def factory(env: str, path: str) -> Any:
        from opsgym.agents.hf import HFPolicy

        try:
            return HFPolicy(env, path, constrained=constrained, format=format)
        except ModuleNotFoundError as exc:
            raise MissingExtraError(exc, "grpo") from None

    return factory


PREFIXED.setdefault("hf", _hf(constrained=False))
PREFIXED.setdefault("hf+constrained", _hf(constrained=True))
PREFIXED.setdefault("hf+snapshot", _hf(constrained=False, format="snapshot"))
PREFIXED.setdefault("hf+constrained+snapshot", _hf(constrained=True, format="snapshot"))
