"""TRL's face: one environment class per world for ``GRPOTrainer(environment_factory=...)``.

```python
from trl import GRPOConfig, GRPOTrainer
from opsgym.adapters.episodes import dataset
from opsgym.adapters.trl import environment_factory

trainer = GRPOTrainer(
    model="Qwen/Qwen3-0.6B",
    args=GRPOConfig(max_completion_length=2048),
    train_dataset=dataset("oversight", "train", 512),
    environment_factory=environment_factory("oversight", scenario="mixed"),
)
```

The class keeps the contract TRL (1.9 and later) sets for an environment:

* it is built with no arguments, once, and reused: ``reset(**row)`` starts an episode from a
  dataset row (``seed``, ``scenario``, ``config``; see :mod:`opsgym.adapters.episodes`) and
  returns the first prompt (:func:`prompt`: the tool-calling face's rendering, see
  :mod:`opsgym.adapters.toolcalls`), which TRL appends to the row's last user message;
* every public method other than ``reset`` and ``get_reward`` is a tool: one per world tool,
  named after it, typed from the tool's pydantic model, with a Google-style docstring whose
  ``Args:`` section ``transformers.utils.get_json_schema`` turns into the schema the model is
  shown. Each returns what the tool reported (or why the call was rejected), never the reward;
* ``get_reward()`` is the episode's return as the judge settles it (see
  :func:`opsgym.adapters.episodes.settle`): the outcome's terminal reward and every reward
  component, never a reading of the text.

A method accepts whatever arguments the model sent, not only the ones its schema names: the
episode validates them, and a bad call is recorded as a rejected step that costs ``invalid``, as
in every other face, instead of failing inside TRL unrecorded. (A call to a name that is not a
tool never reaches the environment: TRL answers it.) Each call is charged the world's fixed
token cost (the record says ``token_source: fixed``): TRL does not tell an environment how many
tokens a call took.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from opsgym.adapters.episodes import parse_config, settle
from opsgym.adapters.toolcalls import render_messages, result_text
from opsgym.core.episode import Episode
from opsgym.core.registry import spec
from opsgym.core.request import EpisodeRequest
from opsgym.core.scenarios import split_of
from opsgym.core.seat import AgentView
from opsgym.core.tools import Tool

RESERVED = frozenset({"reset", "get_reward"})
"""Method names TRL gives a meaning of its own; no tool may take them."""

RETURNS = "What the tool reported, as JSON, or why the call was rejected."

OVER = json.dumps({"rejected": "the episode is over; this call did not run"})


class OpsgymEnvironment:
    """Base of the generated classes: one episode at a time, reset from a dataset row."""

    _env: str = ""
    _scenario: str = "mixed"
    _split: str | None = None
    _max_steps: int | None = None

    def __init__(self) -> None:
        self._episode: Episode | None = None

    def reset(
        self,
        seed: int,
        scenario: str | None = None,
        config: Mapping[str, Any] | str | None = None,
        split: str | None = None,
        overrides: Mapping[str, Any] | str | None = None,
        environment: str | None = None,
        **columns: Any,
    ) -> str:
        """Start the episode a dataset row names and return its first prompt.

        Args:
            seed: The episode's seed.
            scenario: Its scenario; the factory's when missing.
            config: Its public settings (a JSON object, as text or a mapping).
            split: The split the row was drawn from; the seed must lie in it.
            overrides: Hidden facts to force (curricula and leak tests), as for ``opsgym.make``.
            environment: The world the row is for (TRL's routing column); must be this one.
            **columns: Other columns of the row (TRL passes them all, ``prompt`` included);
                ignored.
        """
        if environment is not None and environment != self._env:
            raise ValueError(
                f"this environment plays {self._env!r}, but the row is for {environment!r}; "
                "pass environment_factory={env: environment_factory(env) ...} for several worlds"
            )
        seed = int(seed)
        if self._split is not None and split_of(seed) != self._split:
            raise ValueError(
                f"seed {seed} is in the {split_of(seed)!r} split; this environment plays only "
                f"{self._split!r} seeds (seeds split by seed % 10: 0-7 train, 8 dev, 9 test)"
            )
        self._episode = EpisodeRequest(
            self._env,
            scenario or self._scenario,
            seed,
            split=split,
            config=parse_config(config),
            overrides=parse_config(overrides, "overrides"),
            max_steps=self._max_steps,
        ).start()
        return prompt(self._episode)

    def get_reward(self) -> float:
        """The episode's return, as the judge settles it (see ``opsgym.adapters.episodes``)."""
        return float(settle(self._started())[1])

    def _started(self) -> Episode:
        if self._episode is None:
            raise RuntimeError(f"{type(self).__name__}: call reset(**row) before anything else")
        return self._episode

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        episode = self._started()
        if episode.done:
            return OVER
        return result_text(episode.step(tool, arguments))


def prompt(episode: AgentView) -> str:
    """The first prompt: the tool-calling face's system and user messages as one text, without
    the tool schemas (TRL's chat template lists the methods' own).
    """
    return "\n\n".join(m["content"] for m in render_messages(episode, tools_in_prompt=False))


def episode(environment: OpsgymEnvironment) -> Episode | None:
    """The episode an environment instance is playing (its record, verdict, ...), if any."""
    return environment._episode


def _describe(name: str, schema: Mapping[str, Any]) -> str:
    """One argument's line of the ``Args:`` section: its description, bounds and default."""
    text = " ".join(str(schema.get("description", name)).split())
    bounds = [schema] + list(schema.get("anyOf", ()))
    low = next((b["minimum"] for b in bounds if "minimum" in b), None)
    high = next((b["maximum"] for b in bounds if "maximum" in b), None)
    if low is not None and high is not None:
        text += f" From {low} to {high}."
    elif low is not None:
        text += f" At least {low}."
    elif high is not None:
        text += f" At most {high}."
    if "default" in schema and schema["default"] is not None:
        text += f" Default: {json.dumps(schema['default'])}."
    return text


def _docstring(tool: Tool) -> str:
    """A Google-style docstring: the tool's description, ``Args:`` and ``Returns:``."""
    lines = [tool.description.strip(), ""]
    properties = tool.parameters.get("properties", {})
    if properties:
        lines.append("Args:")
        lines += [f"    {n}: {_describe(n, s)}" for n, s in properties.items()]
        lines.append("")
    lines += ["Returns:", f"    {RETURNS}"]
    return "\n".join(lines)


def _method(tool: Tool) -> Callable[..., str]:
    """The method TRL exposes as ``tool``: typed keyword arguments, taking any it is given."""
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for field_name, field in tool.args.model_fields.items():
        name = field.alias or field_name
        default = (
            inspect.Parameter.empty
            if field.is_required()
            else field.get_default(call_default_factory=True)
        )
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=field.annotation
            )
        )
        annotations[name] = field.annotation
    annotations["return"] = str

    def method(self: OpsgymEnvironment, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = _docstring(tool)
    # inspect.signature reads __signature__, which typeshed does not declare on functions.
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


@cache
def environment_factory(
    env: str,
    scenario: str = "mixed",
    *,
    split: str | None = None,
    max_steps: int | None = None,
) -> type[OpsgymEnvironment]:
    """The environment class of ``env`` for ``GRPOTrainer(environment_factory=...)``.

    Args:
        env: Environment name.
        scenario: The scenario of rows that name none (``mixed``: the seed draws the family).
        split: If given, ``reset`` refuses seeds of any other split (a guard for training).
        max_steps: The episodes' step budget; ``None`` for the world's own.

    Returns:
        A class built with no arguments (the same class for the same arguments).
    """
    s = spec(env)
    s.scenario(scenario)
    if split is not None and split not in ("train", "dev", "test"):
        raise ValueError(f"split must be 'train', 'dev', 'test' or None, got {split!r}")
    body: dict[str, Any] = {}
    for name, tool in s.world.tools.items():
        if name in RESERVED or name.startswith("_") or hasattr(OpsgymEnvironment, name):
            raise ValueError(
                f"tool {name!r} of {env!r} cannot be a TRL environment method: the name is "
                "reserved by TRL or by the environment class"
            )
        body[name] = _method(tool)
    title = env.title().replace("_", "")
    return type(
        f"{title}Environment",
        (OpsgymEnvironment,),
        {
            **body,
            "__module__": __name__,
            "__doc__": f"A TRL environment over opsgym's {env!r} world (scenario {scenario!r}).",
            "_env": env,
            "_scenario": scenario,
            "_split": split,
            "_max_steps": max_steps,
        },
    )
