"""``opsgym train``: ``ppo``, ``sft`` and ``grpo`` (extras ``train``, ``grpo``), their options
generated from the trainers' config models, each a one-line error on bad input.

    opsgym train ppo  --env release --total-timesteps 300000
    opsgym train sft  --env release --model Qwen/Qwen3-0.6B --episodes 256
    opsgym train grpo --env release --model runs/release__sft__1__1767225600 --steps 200
    opsgym eval --env release --policy hf:runs/release__grpo__1__1767225700

Every field of a config model (:class:`~opsgym.training.ppo.PPOConfig`,
:class:`~opsgym.training.sft.SFTRunConfig`, :class:`~opsgym.training.grpo.GRPORunConfig`) is
one option (:func:`options`): field ``n_envs`` is ``--n-envs``, field ``r`` of the nested
``lora`` is ``--lora-r``; its type, default and help (the field's description) are the model's,
and so are its bounds: a value out of them ends the command with one line naming the option
(:func:`opsgym.command_errors.invalid`). Nothing is declared twice. ``--out``, ``--name`` and
``--db`` say where the run goes, not what it is: they are the commands' own.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from rich.markup import escape

from opsgym.command_errors import fail, interrupted, invalid, need_extra
from opsgym.core.errors import OpsgymError
from opsgym.training.grpo import GRPORunConfig
from opsgym.training.ppo import PPOConfig
from opsgym.training.sft import SFTRunConfig

train_app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Train agents on the environments' reward."
)

_KEYWORD = inspect.Parameter.KEYWORD_ONLY

PLACE = (
    inspect.Parameter(
        "out",
        _KEYWORD,
        default=Path("runs"),
        annotation=Annotated[Path, typer.Option(help="Folder the run's folder goes in.")],
    ),
    inspect.Parameter(
        "name",
        _KEYWORD,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(help="The run's name (default {env}__{kind}__{seed}__{time})."),
        ],
    ),
    inspect.Parameter(
        "db",
        _KEYWORD,
        default=None,
        annotation=Annotated[
            str | None, typer.Option(help="Store (path or URL) the run is recorded in.")
        ],
    ),
)
"""The options every trainer takes besides its config: where the run goes."""


def _nested(field: FieldInfo) -> type[BaseModel] | None:
    kind = field.annotation
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def options(
    model: type[BaseModel], prefix: str = "", required: Collection[str] = ()
) -> list[inspect.Parameter]:
    """One keyword parameter per field of ``model``, annotated with its ``typer.Option``: named
    ``PREFIX + field`` (a nested model's fields ``{field}_{its field}``), its type, its default
    (none for the names in ``required``) and, for help, its description.
    """
    params = []
    for name, field in model.model_fields.items():
        key = prefix + name
        inner = _nested(field)
        if inner is not None:
            params += options(inner, f"{key}_", required)
            continue
        help_text = escape(" ".join((field.description or "").replace("``", "").split()))
        default = (
            inspect.Parameter.empty
            if key in required
            else field.get_default(call_default_factory=True)
        )
        annotation = Annotated[field.annotation, typer.Option(help=help_text)]
        params.append(inspect.Parameter(key, _KEYWORD, default=default, annotation=annotation))
    return params


def config_of(model: type[BaseModel], values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The config :func:`options`' ``values`` describe, nested as ``model`` nests it."""
    config = {}
    for name, field in model.model_fields.items():
        inner = _nested(field)
        key = prefix + name
        config[name] = values[key] if inner is None else config_of(inner, values, f"{key}_")
    return config


def config_command(
    model: type[BaseModel],
    run: Callable[[Any, Path, str | None, str | None], None],
    doc: str,
    required: Collection[str] = (),
) -> Callable[..., None]:
    """A Typer command whose options are ``model``'s fields (:func:`options`) and
    :data:`PLACE`: it validates the config (out of bounds: :func:`invalid`) and hands it to
    ``run(cfg, out, name, db)``.
    """

    def command(**values: Any) -> None:
        out, name, db = (values.pop(p.name) for p in PLACE)
        try:
            cfg = model.model_validate(config_of(model, values))
        except ValidationError as exc:
            invalid(exc)
        run(cfg, out, name, db)

    command.__signature__ = inspect.Signature([*options(model, required=required), *PLACE])
    command.__doc__ = doc
    return command


def _train(
    cfg: Any,
    train: Callable[..., Path],
    out: Path,
    db: str | None,
    name: str | None,
    extra: str,
    left: str,
) -> Path:
    """Train, saying every refusal in one line and what Ctrl-C left."""
    try:
        return train(cfg, out=out, db=db, name=name)
    except OpsgymError as exc:
        fail(str(exc))
    except ModuleNotFoundError as exc:
        need_extra(exc, extra)
    except KeyboardInterrupt:
        interrupted(left)


def _ppo(cfg: PPOConfig, out: Path, name: str | None, db: str | None) -> None:
    from opsgym.training.ppo import train

    left = "the policy as it was is saved in the run's model.zip and the run marked interrupted"
    folder = _train(cfg, train, out, db, name, "train", left)
    evaluation = folder / "evaluation.json"
    if evaluation.exists():
        figures = json.loads(evaluation.read_text())
        figures.pop("summary", None)  # every interval: in the file
        typer.echo(json.dumps(figures, indent=1))
    typer.echo(
        f"run saved in {folder}; evaluate it with: "
        f"opsgym eval --env {cfg.env} --policy ppo:{folder / 'model.zip'}"
    )


def _llm(kind: str) -> Callable[[Any, Path, str | None, str | None], None]:
    def run(cfg: Any, out: Path, name: str | None, db: str | None) -> None:
        from opsgym.training import grpo, sft

        train = {"sft": sft.train, "grpo": grpo.train}[kind]
        left = (
            f"the model as it was is saved in the run's model/ and the {kind} run marked "
            "interrupted"
        )
        folder = _train(cfg, train, out, db, name, "grpo", left)
        typer.echo(
            f"run saved in {folder}; evaluate it with: "
            f"opsgym eval --env {cfg.env} --policy hf:{folder}"
        )

    return run


train_app.command("ppo")(
    config_command(
        PPOConfig,
        _ppo,
        "MaskablePPO over the Gym face, with a start-state curriculum; the run goes in the store.",
    )
)
train_app.command("sft")(
    config_command(
        SFTRunConfig,
        _llm("sft"),
        "Fine-tune on the oracle's conversations (TRL's SFTTrainer, LoRA); the run goes in the "
        "store.",
        required={"model"},
    )
)
train_app.command("grpo")(
    config_command(
        GRPORunConfig,
        _llm("grpo"),
        "GRPO with the environment's own reward (TRL's GRPOTrainer with environment_factory, "
        "LoRA); the run goes in the store.",
        required={"model"},
    )
)
