"""Inspect AI's face: ``inspect eval opsgym/release --model openai/gpt-4o``.

Installed with the ``inspect`` extra, opsgym registers one Inspect task per world under its
package name (the ``inspect_ai`` entry point): ``opsgym/release``, ``opsgym/fleet``,
``opsgym/oversight``. Task parameters, as ``-T name=value``:

| parameter | default | meaning |
| --- | --- | --- |
| ``split`` | ``test`` | the seeds the samples come from (``train``, ``dev``, ``test``) |
| ``n`` | ``20`` | how many samples (one seed each) |
| ``seeds`` | ``sealed`` | ``sealed``: drawn when the task is made; ``public``: see ``start`` |
| ``scenario`` | ``mixed`` | a scenario (``mixed``: the seed draws the family), or ``all`` |
| ``start`` | ``0`` | public seeds: the split's first ``n`` at or after this one |
| ``epochs`` | ``1`` | plays of each sample; above 1 the reducers are mean and pass^k |
| ``max_steps`` | the world's | the episode's step budget |
| ``config`` | none | the episode's public settings, e.g. ``-T config='{coordination: true}'`` |

Sealed seeds are drawn from a space too large to tabulate, so a model cannot know its episodes in
advance (a seed is an episode's hidden facts); the log keeps each one in its sample's metadata,
which the model never sees, so the run replays. Public seeds are the same for everyone.

One sample is one episode (see :mod:`opsgym.adapters.episodes` for the rows). The model meets it
as the LLM agent does (:mod:`opsgym.agents.llm`), so that a model scores the same through either
harness: each turn it is sent ``[system, user]`` from :mod:`opsgym.adapters.toolcalls` (the
world's brief and the reply rules; the state now and what each call of its previous turn
returned) with the world's tools as Inspect tools, generated from each tool's pydantic model.
Its reply is read by :func:`~opsgym.adapters.toolcalls.parse_reply` (native tool calls, or
``<tool_call>`` blocks in the text) and carried out by
:func:`~opsgym.adapters.toolcalls.run_turn`: 1 to 3 calls, each a step of the episode, which
validates it; the batch stops at the first unexpected result. An unknown tool, arguments that
do not parse or do not fit, extra calls and a reply without a call are recorded as rejected steps
(they cost ``invalid``), never answered by Inspect out of the episode's sight. Every turn spends
a step, so the episode's budget bounds the turns. Tokens are the model's output per turn:
Inspect's usage figures (``token_source: provider``), else the face's count (``tokenizer``).

The scorer's value is the judge's verdict: ``C`` when the outcome is one of the world's safe
outcomes (what pass^k counts), else ``I``; its answer is the outcome and its metadata holds the
outcome, the failed invariants, every invariant's result and the return. An episode that an
Inspect limit (tokens, time) cut short is judged as its budget running out would judge it
(:func:`opsgym.adapters.episodes.settle`).

```python
from inspect_ai import eval
from opsgym.adapters.inspect import episode_task
eval(episode_task("release", split="dev", n=5, epochs=4), model="openai/gpt-4o")
```
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    pass_k,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolParams

from opsgym.adapters import toolcalls
from opsgym.adapters.episodes import parse_config, passed, rows, settle
from opsgym.core.episode import Episode
from opsgym.core.registry import list_envs, make
from opsgym.core.tools import Tool as OpsTool

_RUNNING: dict[str, Episode] = {}
"""Episodes in play, by Inspect's sample uuid: the solver starts one, the scorer judges it and
the task's cleanup forgets it. Kept out of the sample's state, whose store and metadata go into
the log: the episode holds the truth."""


def _chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def samples(
    env: str,
    split: str = "test",
    n: int = 20,
    *,
    scenario: str = "mixed",
    start: int = 0,
    config: dict[str, Any] | None = None,
    seeds: str = "sealed",
) -> list[Sample]:
    """One sample per row of :func:`opsgym.adapters.episodes.rows`; its input is the first
    prompt (tools travel natively, so the system message does not list them). The model sees the
    messages only: the seed stays in the sample's metadata and id, for the log and the replay.
    """
    return [
        Sample(
            id=f"{row['scenario']}-{row['seed']}",
            input=_chat(
                toolcalls.render_messages(
                    make(env, row["scenario"], row["seed"], config=parse_config(row["config"])),
                    tools_in_prompt=False,
                )
            ),
            metadata=row,
        )
        for row in rows(env, split, n, scenario=scenario, start=start, config=config, seeds=seeds)
    ]


def _tool(episode: Episode, spec: OpsTool) -> Tool:
    async def execute(**arguments: Any) -> str:
        if episode.done:
            return json.dumps({"rejected": "the episode is over; the call did not run"})
        return toolcalls.result_text(episode.step(spec.name, arguments))

    parameters = {k: v for k, v in spec.parameters.items() if k != "description"}
    return ToolDef(
        execute,
        name=spec.name,
        description=spec.description,
        parameters=ToolParams.model_validate(parameters),
    ).as_tool()


def tools(episode: Episode) -> list[Tool]:
    """The episode's tools as Inspect tools: the schemas of the tools' models, each call a step.

    :func:`play` shows them to the model and carries its calls out itself. Any other Inspect
    agent may use them too; Inspect then checks a call against the schema before it runs, and
    answers one that fails without the episode's knowing.
    """
    return [_tool(episode, t) for t in episode.world.tools.values()]


def parse(message: ChatMessageAssistant) -> toolcalls.ParsedReply:
    """A reply as the tool-calling face reads it: Inspect's parsed native calls (one whose
    arguments did not parse keeps Inspect's error), else the calls written in its text.
    """
    if not message.tool_calls:
        return toolcalls.parse_reply(message.text)
    return toolcalls.ParsedReply(
        tuple(
            toolcalls.ParsedCall(
                call.function,
                call.arguments,
                "tool_calls",
                id=call.id,
                error=None if call.parse_error is None else "arguments are not valid JSON",
            )
            for call in message.tool_calls
        ),
        message.text.strip(),
    )


def tokens(output: ModelOutput) -> tuple[int, str]:
    """The turn's tokens and their source: the model's output tokens as Inspect reports them,
    else the tool-calling face's count of the reply.
    """
    usage = output.usage
    if usage is not None and isinstance(usage.output_tokens, int) and usage.output_tokens >= 0:
        return usage.output_tokens, "provider"
    message = output.message
    calls = [
        {"function": {"name": c.function, "arguments": c.arguments}}
        for c in message.tool_calls or []
    ]
    text = toolcalls.reply_text({"content": message.text, "tool_calls": calls})
    return toolcalls.count_tokens(text), "estimate"


@solver
def play(max_steps: int | None = None, overrides: dict[str, Any] | None = None) -> Solver:
    """Play the sample's episode: model turns until the episode ends (or an Inspect limit).

    Args:
        max_steps: The episode's step budget; ``None`` for the world's own.
        overrides: Hidden facts to force (leak tests, curricula), as for ``opsgym.make``.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = state.metadata
        episode = make(
            row["environment"],
            row["scenario"],
            int(row["seed"]),
            config=parse_config(row.get("config")),
            max_steps=max_steps,
            overrides=overrides,
            token_source="provider",
        )
        _RUNNING[state.uuid] = episode
        state.tools = tools(episode)
        results: list[tuple[str, str]] | None = None
        while not episode.done:
            state.messages = _chat(
                toolcalls.render_messages(episode, tools_in_prompt=False, results=results)
            )
            state = await generate(state, tool_calls="none")
            spent, source = tokens(state.output)
            if episode.steps == 0:
                episode.token_source = source
            results = toolcalls.run_turn(episode, parse(state.output.message), spent).results
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def verdict() -> Scorer:
    """The judge's verdict on the sample's episode: ``C`` for a safe outcome, else ``I``."""

    async def score(state: TaskState, target: Target) -> Score:
        episode = _RUNNING.get(state.uuid)
        if episode is None:
            return Score(value=INCORRECT, explanation="no episode was played for this sample")
        judged, total = settle(episode)
        failed = judged.failed
        return Score(
            value=CORRECT if passed(episode, judged) else INCORRECT,
            answer=judged.outcome,
            explanation=judged.outcome + (f"; failed: {', '.join(failed)}" if failed else ""),
            metadata={
                "outcome": judged.outcome,
                "accepted": judged.accepted,
                "failed": failed,
                "invariants": [r.to_dict() for r in judged.invariants],
                "return": total,
                "steps": episode.steps,
                "ended": episode.done,
                "family": episode.family.name,
            },
        )

    return score


async def _forget(state: TaskState) -> None:
    _RUNNING.pop(state.uuid, None)


def episode_task(
    env: str,
    split: str = "test",
    n: int = 20,
    *,
    scenario: str = "mixed",
    start: int = 0,
    epochs: int = 1,
    max_steps: int | None = None,
    config: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
    seeds: str = "sealed",
) -> Task:
    """The Inspect task over ``n`` seeds of ``split`` of ``env`` (see the module's table).

    ``overrides`` forces hidden facts in every episode (for leak tests and curricula; the
    registered tasks do not take it).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs!r}")
    # Any: Inspect types a list of reducers as all names or all functions; this mixes them.
    reducers: list[Any] = ["mean"] + ([pass_k(epochs)] if epochs > 1 else [])
    return Task(
        dataset=samples(env, split, n, scenario=scenario, start=start, config=config, seeds=seeds),
        solver=play(max_steps=max_steps, overrides=overrides),
        scorer=verdict(),
        cleanup=_forget,
        epochs=Epochs(epochs, reducers),
        metadata={"environment": env, "split": split, "scenario": scenario, "seeds": seeds},
    )


def _register(env: str) -> Callable[..., Task]:
    def define(
        split: str = "test",
        n: int = 20,
        scenario: str = "mixed",
        start: int = 0,
        epochs: int = 1,
        max_steps: int | None = None,
        config: dict[str, Any] | None = None,
        seeds: str = "sealed",
    ) -> Task:
        return episode_task(
            env,
            split,
            n,
            scenario=scenario,
            start=start,
            epochs=epochs,
            max_steps=max_steps,
            config=config,
            seeds=seeds,
        )

    define.__name__ = define.__qualname__ = env
    define.__doc__ = f"opsgym's {env!r} world: one episode per seed, scored by its judge."
    return task(name=env)(define)


TASKS: dict[str, Callable[..., Task]] = {env: _register(env) for env in list_envs()}
"""The registered task of each world (``opsgym/<env>`` to Inspect)."""
