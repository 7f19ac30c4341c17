"""Every form a call can take: the argument space of each tool, and malformed calls.

The leak test must not be limited to the Gym catalogue: an LLM agent can pass any argument a
tool's pydantic model accepts (and many it refuses). The space of each field is read off the
model: every ``Literal`` value, every int of a small bounded range (and one past each end),
both bools, ``None`` where the field is optional, omission where it has a default, and for free
strings the short strings the agent can see in its observation (the ids it would name).
Malformed calls add unknown tool names, arguments of the wrong type, unknown fields and
arguments that are not an object.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

import numpy as np
from pydantic.fields import FieldInfo

from opsgym.core.tools import Tool

Call = tuple[Any, Any]
"""``(tool name, raw arguments)`` exactly as an agent would send them to ``Episode.step``."""

OMIT = object()
"""Marks a field left out of the call (it takes its default)."""

MAX_RANGE = 128
"""Bounded int fields with at most this many values are enumerated whole."""

MAX_STRING = 32
"""Observed strings longer than this are prose, not ids: never used as arguments."""


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low = high = None
    for m in info.metadata:
        low = getattr(m, "ge", low)
        high = getattr(m, "le", high)
        if getattr(m, "gt", None) is not None:
            low = m.gt + 1
        if getattr(m, "lt", None) is not None:
            high = m.lt - 1
    return low, high


def _values(annotation: Any, info: FieldInfo, strings: list[str]) -> list[Any]:
    """The values an annotation admits, as far as they can be listed."""
    origin = get_origin(annotation)
    if origin is Literal:
        return list(get_args(annotation))
    if origin in (Union, types.UnionType):
        return [v for arm in get_args(annotation) for v in _values(arm, info, strings)]
    if annotation is type(None):
        return [None]
    if annotation is bool:
        return [True, False]
    if annotation is int:
        low, high = _bounds(info)
        if low is not None and high is not None and high - low < MAX_RANGE:
            # One past each end as well: in type, out of range, refused by validation.
            return list(range(int(low) - 1, int(high) + 2))
        return [0, 1, 2, 5, 100]
    if annotation is float:
        return [0.0, 0.5, 1.0]
    if annotation is str:
        return [*strings, "unknown-id"]
    return [None]


def argument_space(tool: Tool, strings: Sequence[str] = ()) -> dict[str, list[Any]]:
    """Candidate values of each argument of ``tool`` (``OMIT`` where it may be left out).

    ``strings`` are what free-text fields may take (the ids the agent can see).
    """
    space = {}
    for name, info in tool.args.model_fields.items():
        values = _values(info.annotation, info, list(strings))
        space[name] = values if info.is_required() else [OMIT, *values]
    return space


@cache
def takes_text(tool: Tool) -> bool:
    """Whether some argument of ``tool`` is free text (its candidates come from the view)."""
    return any(str in _arms(info.annotation) for info in tool.args.model_fields.values())


def draw_args(space: dict[str, list[Any]], rng: np.random.Generator) -> dict[str, Any]:
    """One call's arguments: each field drawn uniformly from its candidates."""
    args = {}
    for name, values in space.items():
        value = values[int(rng.integers(len(values)))]
        if value is not OMIT:
            args[name] = value
    return args


_WRONG = {
    int: ["three", 1.5, [1]],
    str: [12, ["x"], {"id": "x"}],
    bool: ["maybe", 2],
}


def malformed(tools: dict[str, Tool], rng: np.random.Generator) -> Call:
    """A call no tool accepts: an unknown name, a wrongly typed, unknown or non-object
    argument. Each draw is checked to fail parsing, so it never reaches a world.
    """
    names = sorted(tools)
    kind = int(rng.integers(4))
    if kind == 0:
        choices = ["", "no_such_tool", names[int(rng.integers(len(names)))] + "s", 42, None]
        return choices[int(rng.integers(len(choices)))], {}
    tool = tools[names[int(rng.integers(len(names)))]]
    fields = list(tool.args.model_fields)
    if kind == 1 and fields:
        field = fields[int(rng.integers(len(fields)))]
        annotation = tool.args.model_fields[field].annotation
        wrong = next((w for t, w in _WRONG.items() if t in _arms(annotation)), [7, "not-a-choice"])
        raw: Any = {field: wrong[int(rng.integers(len(wrong)))]}
    elif kind == 2:
        raw = {"unexpected": 1}
    else:
        raw = ["not", "an", "object"] if rng.integers(2) else "not-an-object"
    if not isinstance(tool.parse(raw), str):
        raw = {"unexpected": 1}  # a lax coercion accepted it: fall back to one that cannot pass
    return tool.name, raw


def _arms(annotation: Any) -> set[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return {a for arm in get_args(annotation) for a in _arms(arm)}
    return {annotation}


def visible_strings(observation: Any) -> list[str]:
    """The short strings in an observation, in order of first appearance (the ids)."""
    found = (v for v in _leaves(observation) if isinstance(v, str) and 0 < len(v) <= MAX_STRING)
    return list(dict.fromkeys(found))


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    else:
        yield value
