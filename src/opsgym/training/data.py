"""LLM training and evaluation rows for every world: episode starts, and reference conversations.

```python
from opsgym.training.data import episode_rows, prompt_rows, reference_rows, write
episode_rows("oversight", "eval_unseen", 100)   # reset arguments: held-out families, test seeds
prompt_rows("fleet", "train", 256)              # the same, with the first prompt of each
reference_rows("release", "train", 256)         # the oracle's conversations, for SFTTrainer
write("oversight", "data/oversight", n_train=4000, n_eval=400)  # three JSONL files
```

or, from the shell, ``opsgym data prompts --env oversight --out data/oversight --train 4000
--eval 400`` and ``opsgym data reference --env release --out data/release`` (see
:mod:`opsgym.training.data_cli`).

**One builder, two views.** :func:`episode_rows` names the episodes of a *subset*; each row is
the row of :func:`opsgym.adapters.episodes.rows` (``environment``, ``seed``, ``scenario``,
``split``, ``config``: what TRL's ``reset(**row)`` takes, and :func:`request` turns into the core
:class:`~opsgym.core.request.EpisodeRequest`), plus ``subset`` and ``family``. Two views add to
it: :func:`prompt_row` the episode's first prompt (``prompt``), :func:`reference_conversation`
what a policy (the oracle) says and is told over the whole episode (``messages``, ``tools``).

**Subsets** (:data:`SUBSETS`), one file each:

* ``train``: the training families (never a held-out one) on ``train`` seeds;
* ``eval_seen``: the same families on ``test`` seeds;
* ``eval_unseen``: the held-out families on other ``test`` seeds (from :data:`UNSEEN_START`);
  none for a world without a held-out family.

Families take turns, each row is a named family (``scenario``), and row ``i`` takes the
``i``-th seed of its subset, so no seed repeats within a file (nor between the two eval files),
and train and eval seeds never overlap. ``family`` labels a row for analysis only: the prompt
never names it. The world's named settings (every field of its config model that takes one of a
list of names: oversight's ``difficulty`` and ``archetype_mix``) cycle over every combination
within each family; ``settings`` chooses the values of any config key instead
(:func:`setting_grid`). Every seed, split, family and setting goes through the episode request,
so a held-out family never meets a train seed and a bad setting is refused as ``opsgym.make``
refuses it.

**The prompt** is the tool-calling face's (:func:`opsgym.adapters.toolcalls.render_messages`):
a system message (the world's ``EnvSpec.brief``, the reply rules and, unless ``tools=False``, the
tool schemas) and a user message with the first state; what an OpenAI-compatible endpoint is
sent. TRL's environment loop builds its own from ``reset`` (use
:func:`opsgym.adapters.episodes.dataset`, or these rows without ``prompt``).

**Reference conversations** are in the format of TRL's environment loop
(``GRPOTrainer(environment_factory=...)``, see :mod:`opsgym.adapters.trl`), so that a model
fine-tuned on them (``opsgym train sft``), trained further on the environment's reward
(``opsgym train grpo``) and evaluated (the ``hf:`` policies, :mod:`opsgym.agents.hf`) sees one
kind of conversation throughout:

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

A reference row is ``messages`` (arguments of calls as JSON text, so that every row has the same
column types), ``tools`` (the schemas as JSON text, which ``SFTTrainer`` reads), and where it
came from: ``environment``, ``seed``, ``scenario``, ``family`` (the family the seed drew),
``split``, ``config`` (and ``subset``, for a subset's row), ``outcome``, ``return`` and ``steps``
of the reference episode. :func:`write` plays the rows of the subsets; :func:`reference_rows` and
:func:`reference_dataset` (what ``opsgym train sft`` learns from) those of a seed split
(:func:`opsgym.adapters.episodes.rows`: ``mixed`` by default; seeds by ``seed % 10``, 0-7 train,
8 dev, 9 test, so the splits never share a seed; a ``mixed`` train seed never draws a held-out
family, so held-out families appear only in dev and test).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from opsgym.adapters.chat import call_message, tool_message, tool_schemas_json, user_message
from opsgym.adapters.episodes import config_json, parse_config, rows
from opsgym.adapters.toolcalls import render_messages
from opsgym.adapters.trl import environment_factory
from opsgym.agents import get_policy, play
from opsgym.core.errors import UnknownNameError
from opsgym.core.registry import spec
from opsgym.core.request import EpisodeRequest
from opsgym.core.scenarios import seeds

if TYPE_CHECKING:
    from datasets import Dataset

FINAL = "Done: the episode is over."
"""The reference's last message, without a call (TRL ends a rollout at the first such reply)."""

UNSEEN_START = 1_000_000
"""The first seed ``eval_unseen`` rows may use (``eval_seen`` rows start at 0)."""


@dataclass(frozen=True)
class Subset:
    """Which episodes one file of a dataset holds.

    Attributes:
        split: The seeds' split (``train`` or ``test``).
        held_out: The world's held-out families if true, else its training families.
        start: The first seed considered.
    """

    split: str
    held_out: bool
    start: int = 0


SUBSETS = {
    "train": Subset("train", held_out=False),
    "eval_seen": Subset("test", held_out=False),
    "eval_unseen": Subset("test", held_out=True, start=UNSEEN_START),
}
"""The subsets, by name: each is one file, ``{name}.jsonl``."""

VIEWS = ("prompts", "reference")
"""What :func:`write` can write of each row: its first prompt, or a reference conversation."""


def _subset(name: str) -> Subset:
    if name not in SUBSETS:
        raise UnknownNameError("subset", name, SUBSETS)
    return SUBSETS[name]


def families(env: str, subset: str) -> list[str]:
    """The named families whose episodes ``subset`` holds, in the world's order."""
    part = _subset(subset)
    return [f.name for f in spec(env).families() if f.held_out == part.held_out]


def named_settings(env: str) -> dict[str, tuple[Any, ...]]:
    """The world's config keys that take one of a list of names, with the names (oversight's
    ``difficulty`` and ``archetype_mix``), in the config model's order.
    """
    fields = spec(env).config.model_fields
    return {
        key: get_args(field.annotation)
        for key, field in fields.items()
        if get_origin(field.annotation) is Literal
    }


def setting_grid(
    env: str, settings: Mapping[str, Any | Sequence[Any]] | None = None
) -> list[dict[str, Any]]:
    """Every combination of the world's named settings (:func:`named_settings`), with the
    values ``settings`` gives instead for its keys (a value or a list of values; any config key
    of the world). ``[{}]`` for a world without settings.
    """
    choices = dict(named_settings(env))
    for key, values in (settings or {}).items():
        given = (values,) if isinstance(values, str) or not isinstance(values, Sequence) else values
        if not given:
            raise ValueError(f"setting {key!r} has no value")
        choices[key] = tuple(given)
    keys = list(choices)
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*(choices[k] for k in keys))
    ]


def episode_rows(
    env: str,
    subset: str,
    n: int,
    *,
    settings: Mapping[str, Any | Sequence[Any]] | None = None,
) -> list[dict[str, Any]]:
    """``n`` episode rows of ``subset`` (``train``, ``eval_seen`` or ``eval_unseen``).

    Families take turns and each family cycles over the settings (:func:`setting_grid`); row
    ``i`` takes the ``i``-th seed of the subset (see the module docstring). Every family and
    setting is checked by the episode request first, so a bad one is refused before any row is
    made.

    Raises:
        UnknownNameError: an unknown world, subset or config key or value.
        ValueError: a world without a family for ``subset`` (``n`` > 0), a bad ``n``.
    """
    part, names = _subset(subset), families(env, subset)
    if not names:
        if n == 0:
            return []
        kind = "held-out" if part.held_out else "training"
        raise ValueError(f"{env!r} has no {kind} family, so no {subset} rows")
    grid = setting_grid(env, settings)
    probe = seeds(part.split, 1, part.start)[0]
    for config in grid:
        EpisodeRequest(env, names[0], probe, split=part.split, config=config).resolve()
    table = rows(env, part.split, n, scenario=names, start=part.start)
    for i, row in enumerate(table):
        row["config"] = config_json(grid[(i // len(names)) % len(grid)])
        row["subset"] = subset
        row["family"] = row["scenario"]
    return table


def request(row: Mapping[str, Any]) -> EpisodeRequest:
    """The episode request a row names (of :func:`episode_rows` or
    :func:`opsgym.adapters.episodes.rows`): ``request(row).start()`` recreates its episode.
    """
    return EpisodeRequest(
        row["environment"],
        row["scenario"],
        int(row["seed"]),
        split=row.get("split"),
        config=parse_config(row.get("config")),
    )


def prompt_row(row: Mapping[str, Any], *, tools: bool = True) -> dict[str, Any]:
    """``row`` with its episode's first prompt (``prompt``: system and user messages, the tool
    schemas in the system message unless ``tools`` is false).
    """
    episode = request(row).start()
    return {**row, "prompt": render_messages(episode, tools_in_prompt=tools)}


def prompt_rows(
    env: str,
    subset: str,
    n: int,
    *,
    settings: Mapping[str, Any | Sequence[Any]] | None = None,
    tools: bool = True,
) -> list[dict[str, Any]]:
    """:func:`episode_rows` with their first prompts (:func:`prompt_row`)."""
    return [prompt_row(r, tools=tools) for r in episode_rows(env, subset, n, settings=settings)]


def reference_conversation(row: Mapping[str, Any], policy: str = "oracle") -> dict[str, Any]:
    """The conversation ``policy`` has on the episode ``row`` names (a row of
    :func:`episode_rows` or :func:`opsgym.adapters.episodes.rows`), with where it came from (see
    the module docstring).

    The policy plays the episode (as ``opsgym.run`` does); its calls are then made through the
    TRL environment's methods, so the prompt and every tool message are what GRPO's rollouts get.
    """
    env, seed, scenario = row["environment"], int(row["seed"]), row["scenario"]
    played = play(request(row).start(), get_policy(env, policy))
    instance = environment_factory(env, scenario)()
    config = parse_config(row.get("config"))
    messages = [user_message(instance.reset(seed=seed, config=config, split=row.get("split")))]
    for call in played.record()["calls"]:
        said = getattr(instance, call["tool"])(**call["args"])
        messages += [call_message(call["tool"], call["args"]), tool_message(call["tool"], said)]
    messages.append({"role": "assistant", "content": FINAL})
    subset = {"subset": row["subset"]} if "subset" in row else {}
    return {
        "messages": messages,
        "tools": tool_schemas_json(env),
        "environment": env,
        "seed": seed,
        "scenario": scenario,
        "family": played.family.name,
        "split": row.get("split"),
        **subset,
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


def write(
    env: str,
    out: str | Path,
    *,
    view: str = "prompts",
    n_train: int = 2000,
    n_eval: int = 200,
    settings: Mapping[str, Any | Sequence[Any]] | None = None,
    tools: bool = True,
    policy: str = "oracle",
) -> dict[str, Path]:
    """Write one JSONL file per subset under ``out`` (``train.jsonl``, ``eval_seen.jsonl``,
    ``eval_unseen.jsonl``: ``n_train`` rows in the first, ``n_eval`` in each eval file; the
    last is empty for a world without a held-out family); return their paths by subset.

    Args:
        env: The world.
        out: The folder (made if missing).
        view: ``prompts`` (:func:`prompt_row`) or ``reference`` (:func:`reference_conversation`,
            the ``grpo`` extra).
        n_train: Rows of ``train``.
        n_eval: Rows of each eval subset.
        settings: Values of config keys to cycle over (see :func:`setting_grid`).
        tools: ``prompts``: list the tool schemas in the system message.
        policy: ``reference``: the policy that plays.

    Every subset's rows are checked before any file is written.
    """
    if view not in VIEWS:
        raise UnknownNameError("view", view, VIEWS)
    plan = {
        subset: episode_rows(
            env,
            subset,
            n_train if subset == "train" else n_eval if families(env, subset) else 0,
            settings=settings,
        )
        for subset in SUBSETS
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for subset, table in plan.items():
        path = paths[subset] = out / f"{subset}.jsonl"
        with path.open("w") as f:
            for row in table:
                made = (
                    prompt_row(row, tools=tools)
                    if view == "prompts"
                    else reference_conversation(row, policy)
                )
                f.write(json.dumps(made, separators=(",", ":")) + "\n")
    return paths
