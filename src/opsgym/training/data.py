"""Reference conversations: the oracle's episodes in the chat format the LLM trainers use.

```python
from opsgym.training.data import reference_dataset
reference_dataset("release", "train", 256)          # messages + tools, for SFTTrainer
reference_dataset("release", "dev", 64, scenario="all")  # every family, held-out ones too
```

**The format** is the one of TRL's environment loop (``GRPOTrainer(environment_factory=...)``,
see :mod:`opsgym.adapters.trl`), so that a model fine-tuned on these conversations (``opsgym
train sft``), trained further on the environment's reward (``opsgym train grpo``) and evaluated
(the ``hf:`` policies, :mod:`opsgym.agents.hf`) sees one kind of conversation throughout:

1. one user message: the tool-calling face's system text and the first state
   (:func:`opsgym.adapters.trl.prompt`), as TRL builds it (it appends the environment's
   ``reset`` text to the row's user message, empty here);
2. the tools in the chat template's own tool list: the JSON schemas ``transformers`` builds from
   the environment class's methods (:func:`opsgym.adapters.chat.tool_schemas`), in the order
   TRL lists them;
3. per call, an assistant message with the call in the template's tool-call format and a tool
   message with what the tool reported (the method's return, :func:`~opsgym.adapters.toolcalls.
   result_text`);
4. after the last call, an assistant message without a call (:data:`FINAL`): TRL ends a rollout
   at the first reply without one.

A row of :func:`reference_dataset` is ``messages`` (arguments of calls as JSON text, so that
every row has the same column types), ``tools`` (the schemas as JSON text, which ``SFTTrainer``
reads), and where it came from: ``environment``, ``seed``, ``scenario``, ``family`` (the family
the seed drew), ``split``, ``config``, ``outcome``, ``return`` and ``steps`` of the reference
episode.

**Splits** are those of :func:`opsgym.adapters.episodes.rows`: seeds by ``seed % 10`` (0-7
train, 8 dev, 9 test), so the splits never share a seed; a held-out family is refused on train
and a ``mixed`` train seed never draws one, so held-out families appear only in dev and test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opsgym.adapters.chat import call_message, tool_message, tool_schemas_json, user_message
from opsgym.adapters.episodes import parse_config, rows
from opsgym.adapters.trl import environment_factory
from opsgym.agents import get_policy, play
from opsgym.core.registry import make, spec

if TYPE_CHECKING:
    from datasets import Dataset

FINAL = "Done: the episode is over."
"""The reference's last message, without a call (TRL ends a rollout at the first such reply)."""


def reference_conversation(row: Mapping[str, Any], policy: str = "oracle") -> dict[str, Any]:
    """The conversation ``policy`` has on the episode ``row`` names (a row of
    :func:`opsgym.adapters.episodes.rows`), with where it came from (see the module docstring).

    The policy plays the episode (as ``opsgym.run`` does); its calls are then made through the
    TRL environment's methods, so the prompt and every tool message are what GRPO's rollouts get.
    """
    env, seed, scenario = row["environment"], int(row["seed"]), row["scenario"]
    config = parse_config(row.get("config"))
    played = play(make(env, scenario, seed, config=config or None), get_policy(env, policy))
    instance = environment_factory(env, scenario)()
    messages = [user_message(instance.reset(seed=seed, config=config, split=row.get("split")))]
    for call in played.record()["calls"]:
        said = getattr(instance, call["tool"])(**call["args"])
        messages += [call_message(call["tool"], call["args"]), tool_message(call["tool"], said)]
    messages.append({"role": "assistant", "content": FINAL})
    return {
        "messages": messages,
        "tools": tool_schemas_json(env),
        "environment": env,
        "seed": seed,
        "scenario": scenario,
        "family": played.family.name,
        "split": row.get("split"),
        "config": row.get("config", "{}"),
        "outcome": played.verdict.outcome,
        "return": float(played.total_reward),
        "steps": played.steps,
    }


def reference_rows(
    env: str,
    split: str = "train",
    n: int = 64,
    *,
    scenario: str | Iterable[str] = "mixed",
    start: int = 0,
    policy: str = "oracle",
    safe_only: bool = False,
) -> list[dict[str, Any]]:
    """The reference conversations of the first ``n`` seeds of ``split`` (see
    :func:`opsgym.adapters.episodes.rows` for ``scenario`` and ``start``).

    ``safe_only`` keeps only episodes whose outcome is one of the world's safe outcomes (there
    may then be fewer than ``n``).
    """
    safe = spec(env).safe_outcomes
    out = [
        reference_conversation(row, policy)
        for row in rows(env, split, n, scenario=scenario, start=start)
    ]
    return [r for r in out if r["outcome"] in safe] if safe_only else out


def reference_dataset(
    envs: str | Iterable[str],
    split: str = "train",
    n: int = 64,
    *,
    scenario: str | Iterable[str] = "mixed",
    start: int = 0,
    policy: str = "oracle",
    safe_only: bool = False,
) -> Dataset:
    """:func:`reference_rows` of one world, or of several one after another, as a
    ``datasets.Dataset`` (the ``grpo`` extra).
    """
    from datasets import Dataset

    names = [envs] if isinstance(envs, str) else list(envs)
    table = [
        row
        for env in names
        for row in reference_rows(
            env,
            split,
            n,
            scenario=scenario,
            start=start,
            policy=policy,
            safe_only=safe_only,
        )
    ]
    return Dataset.from_list(table)
