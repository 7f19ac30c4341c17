"""``opsgym data``: write LLM training and evaluation rows of any world as JSONL.

```bash
opsgym data prompts --env oversight --out data/oversight --train 4000 --eval 400
opsgym data prompts --env fleet --out data/fleet --setting level=1,2,3 --no-tools
opsgym data reference --env release --out data/release --train 256 --eval 64
```

Each writes ``train.jsonl``, ``eval_seen.jsonl`` and ``eval_unseen.jsonl`` under ``--out``: the
rows of :mod:`opsgym.training.data`, with each episode's first prompt (``prompts``) or the
reference policy's whole conversation (``reference``, the ``grpo`` extra).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from opsgym.command_errors import fail, need_extra
from opsgym.core.errors import OpsgymError

data_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Write LLM training and evaluation rows (JSONL: train, eval_seen, eval_unseen).",
)

GRPO_MODULES = frozenset({"torch", "transformers", "datasets", "trl", "peft"})
"""The ``grpo`` extra's packages: the tool schemas of reference rows are ``transformers``'."""

Env = Annotated[str, typer.Option(help="The world.")]
Out = Annotated[Path, typer.Option(help="Folder the three files go in (made if missing).")]
Train = Annotated[int, typer.Option(min=0, help="Rows in train.jsonl.")]
Eval = Annotated[int, typer.Option("--eval", min=0, help="Rows in each eval file.")]
Setting = Annotated[
    list[str] | None,
    typer.Option(
        help="KEY=V1,V2: config values to cycle over (repeatable; values read as JSON, else "
        "text). By default every named setting takes all its values (oversight's difficulty "
        "and archetype_mix)."
    ),
]


def parse_settings(given: list[str] | None) -> dict[str, list[Any]]:
    """``["difficulty=easy,hard", "level=1"]`` as ``{"difficulty": ["easy", "hard"], "level":
    [1]}``: each value JSON if it reads as JSON, else the text itself.
    """
    out: dict[str, list[Any]] = {}
    for item in given or ():
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise ValueError(f"--setting takes KEY=V1,V2,..., got {item!r}")
        out[key.strip()] = [_value(v.strip()) for v in values.split(",")]
    return out


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _write(env: str, out: Path, view: str, n_train: int, n_eval: int, **options: Any) -> None:
    from opsgym.training.data import write

    try:
        paths = write(env, out, view=view, n_train=n_train, n_eval=n_eval, **options)
    except (OpsgymError, ValueError) as exc:
        fail(str(exc))
    for subset, path in paths.items():
        with path.open() as f:
            count = sum(1 for _ in f)
        typer.echo(f"{subset}: {path} ({count} rows)")


@data_app.command("prompts")
def prompts_command(
    out: Out,
    env: Env = "oversight",
    train: Train = 2000,
    eval_: Eval = 200,
    setting: Setting = None,
    tools: Annotated[
        bool, typer.Option(help="List the tool schemas in each system message.")
    ] = True,
) -> None:
    """Episode starts: reset arguments and the first prompt (system and user messages)."""
    try:
        settings = parse_settings(setting)
    except ValueError as exc:
        fail(str(exc))
    _write(env, out, "prompts", train, eval_, settings=settings, tools=tools)


@data_app.command("reference")
def reference_command(
    out: Out,
    env: Env = "release",
    train: Train = 256,
    eval_: Eval = 64,
    setting: Setting = None,
    policy: Annotated[str, typer.Option(help="The policy whose episodes are written.")] = "oracle",
) -> None:
    """Reference conversations in TRL's chat format (messages and tools), for SFT."""
    try:
        settings = parse_settings(setting)
    except ValueError as exc:
        fail(str(exc))
    try:
        _write(env, out, "reference", train, eval_, settings=settings, policy=policy)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in GRPO_MODULES:
            raise
        need_extra(exc, "grpo")
