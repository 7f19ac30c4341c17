"""Tools: the only way an agent acts on a world.

A tool is a world method marked with :func:`tool`. Its arguments are a pydantic model
(``extra="forbid"``), from which the OpenAI-style JSON schema is generated, so a schema is never
written twice. Its preconditions are small functions of the *agent-visible* state and the
arguments, returning ``None`` when they hold or a sentence saying what is missing. They never
look at the hidden truth: a rejection, or an action mask built from preconditions, would
otherwise tell the agent something its tools did not.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeAlias, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError


class Args(BaseModel):
    """Base of every tool's arguments: strict, immutable, no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(Args):
    """Arguments of a tool that takes none."""


_A = TypeVar("_A", bound=Args)
"""A tool's arguments model."""
_W = TypeVar("_W")
"""The world a tool's handler is a method of."""

Precondition: TypeAlias = Callable[[Any, _A], str | None]
"""``(view, args) -> reason or None``: why a call may not run now, judged on the agent's view.

``Precondition[RankArgs]`` reads arguments of type ``RankArgs`` (a precondition may declare a
base of the model, or a protocol of the fields it reads: ``args: Ranked``). The view is the
world's own class, which a precondition names; the tool table does not know it (``Any``).
"""

Handler: TypeAlias = Callable[[_W, _A], dict[str, Any]]
"""A tool's method: ``(world, args) -> report``."""


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's decorative ``title`` keys; keep everything a model needs."""
    if isinstance(schema, dict):
        return {
            k: _clean_schema(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [_clean_schema(v) for v in schema]
    return schema


@dataclass(frozen=True, eq=False)
class Tool:
    """One operation a world offers.

    Attributes:
        name: The name agents call it by.
        description: What it does and when it may be called (shown to LLMs).
        args: The pydantic model of its arguments.
        handler: Name of the world method that carries it out.
        requires: Preconditions, checked in order on the agent-visible state.
        terminal: Whether calling it asks the judge to end the episode.
        minutes: Simulated minutes the operation takes when it runs.
    """

    name: str
    description: str
    args: type[Args] = NoArgs
    handler: str = ""
    requires: tuple[Precondition[Any], ...] = ()
    terminal: bool = False
    minutes: float = 0.0
    default: Args = field(init=False)

    def __post_init__(self) -> None:
        try:
            default = self.args()
        except ValidationError:
            default = None  # a tool whose every argument is required has no default call
        object.__setattr__(self, "default", default)

    @cached_property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments, generated from the pydantic model."""
        schema = _clean_schema(self.args.model_json_schema())
        schema.setdefault("properties", {})
        schema["additionalProperties"] = False
        return schema

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def parse(self, raw: Mapping[str, Any] | None) -> Args | str:
        """Validate raw arguments; return the model, or a reason naming each bad field."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            return f"arguments of {self.name!r} must be an object, got {type(raw).__name__}"
        if not raw and self.default is not None:  # the default call: made once (models are frozen)
            return self.default
        try:
            return self.args.model_validate(dict(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                + (f" (got {err['input']!r})" if err["type"] != "missing" else "")
                for err in exc.errors()
            )
            return f"bad arguments for {self.name!r}: {problems}"

    def check(self, view: Any, args: Args) -> str | None:
        """Return the first unmet precondition, or ``None`` when the call may run."""
        for requirement in self.requires:
            reason = requirement(view, args)
            if reason is not None:
                return reason
        return None


@overload
def tool(
    *,
    requires: tuple[Precondition[NoArgs], ...] = (),
    terminal: bool = False,
    minutes: float = 0.0,
) -> Callable[[Handler[_W, NoArgs]], Handler[_W, NoArgs]]: ...


@overload
def tool(
    args: type[_A],
    *,
    requires: tuple[Precondition[_A], ...] = (),
    terminal: bool = False,
    minutes: float = 0.0,
) -> Callable[[Handler[_W, _A]], Handler[_W, _A]]: ...


def tool(
    args: type[Args] = NoArgs,
    *,
    requires: tuple[Precondition[Any], ...] = (),
    terminal: bool = False,
    minutes: float = 0.0,
) -> Callable[[Handler[Any, Any]], Handler[Any, Any]]:
    """Mark a world method as a tool.

    The method's docstring becomes the description; each precondition's docstring is appended
    as a "Requires:" line so that an LLM reads the same rules the validator applies.

    The types tie the three together: the method takes ``args`` (``NoArgs`` when omitted) and
    every precondition reads that model (or a base or protocol of it), so a precondition that
    reads a field the tool's arguments lack is a type error, not an exception mid-episode.

    Args:
        args: Pydantic model of the arguments.
        requires: Preconditions on the agent-visible state.
        terminal: Whether the call asks the judge to end the episode.
        minutes: Simulated minutes the operation takes.
    """

    def mark(method: Handler[Any, Any]) -> Handler[Any, Any]:
        description = inspect.cleandoc(method.__doc__ or method.__name__)
        needs = [inspect.cleandoc(r.__doc__).rstrip(".") for r in requires if r.__doc__]
        if needs:
            description += "\nRequires: " + "; ".join(needs)
        method.__opsgym_tool__ = Tool(  # type: ignore[attr-defined]
            name=method.__name__,
            description=description,
            args=args,
            handler=method.__name__,
            requires=tuple(requires),
            terminal=terminal,
            minutes=minutes,
        )
        return method

    return mark
