"""``opsgym train``: ``ppo`` (and the LLM trainers), each a one-line error on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from opsgym.command_errors import fail, interrupted, need_extra
from opsgym.core.errors import OpsgymError

train_app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Train agents on the environments' reward."
)


@train_app.command("ppo")
def ppo_command(
    env: Annotated[str, typer.Option(help="World to train on.")] = "release",
    scenario: Annotated[str, typer.Option(help="Training scenario (train split).")] = "mixed",
    total_timesteps: Annotated[int, typer.Option(help="Environment steps.")] = 300_000,
    seed: Annotated[int, typer.Option(help="Seeds everything.")] = 1,
    n_envs: Annotated[int, typer.Option(help="Environments stepped together.")] = 4,
    curriculum: Annotated[
        bool, typer.Option(help="Start episodes along the oracle's trajectory, fading out.")
    ] = True,
    mask: Annotated[bool, typer.Option(help="Sample only valid calls (action masks).")] = True,
    eval_episodes: Annotated[
        int, typer.Option(help="Test episodes evaluated at the end (0: none).")
    ] = 200,
    out: Annotated[Path, typer.Option(help="Folder the run's folder goes in.")] = Path("runs"),
    name: Annotated[
        str | None, typer.Option(help="The run's name (default {env}__ppo__{seed}__{time}).")
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="Store (path or URL) the run is recorded in.")
    ] = None,
) -> None:
    """MaskablePPO over the Gym face, with a start-state curriculum; the run goes in the store."""
    try:
        from opsgym.training.ppo import PPOConfig, train
    except ModuleNotFoundError as exc:
        need_extra(exc, "train")
    cfg = PPOConfig(
        env=env,
        scenario=scenario,
        total_timesteps=total_timesteps,
        seed=seed,
        n_envs=n_envs,
        curriculum=curriculum,
        mask=mask,
        eval_episodes=eval_episodes,
    )
    try:
        folder = train(cfg, out=out, db=db, name=name)
    except OpsgymError as exc:
        fail(str(exc))
    except ModuleNotFoundError as exc:
        need_extra(exc, "train")
    except KeyboardInterrupt:
        interrupted(
            "the policy as it was is saved in the run's model.zip and the run marked interrupted"
        )
    evaluation = folder / "evaluation.json"
    if evaluation.exists():
        typer.echo(evaluation.read_text())
    typer.echo(
        f"run saved in {folder}; evaluate it with: "
        f"opsgym eval --env {env} --policy ppo:{folder / 'model.zip'}"
    )


def _register_llm_trainers() -> None:
    from opsgym.training.cli_llm import register

    register(train_app)


_register_llm_trainers()
