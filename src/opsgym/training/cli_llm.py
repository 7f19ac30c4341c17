"""``opsgym train sft`` and ``opsgym train grpo`` (extra ``grpo``), each a one-line error on bad
input (an unknown world, a model that cannot be loaded, a run folder that exists).

    opsgym train sft  --env release --model Qwen/Qwen3-0.6B --episodes 256
    opsgym train grpo --env release --model runs/release__sft__1__1767225600 --steps 200
    opsgym eval --env release --policy hf:runs/release__grpo__1__1767225700
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from opsgym.command_errors import fail, interrupted, need_extra
from opsgym.core.errors import OpsgymError

# Options both trainers take.
Env = Annotated[str, typer.Option(help="World to train on.")]
Model = Annotated[
    str,
    typer.Option(
        help="Model: 'tiny' (built here, offline), a run folder, a model folder or a Hub id."
    ),
]
Scenario = Annotated[str, typer.Option(help="Scenario of the episodes (train split).")]
LoraR = Annotated[int, typer.Option(help="LoRA rank (0: train every weight).")]
LoraAlpha = Annotated[int, typer.Option(help="LoRA alpha (scale alpha / r).")]
LoraDropout = Annotated[float, typer.Option(help="LoRA dropout.")]
LoraTargets = Annotated[
    str, typer.Option(help="LoRA modules: all-linear, or names separated by commas.")
]
Precision = Annotated[str, typer.Option(help="auto (bf16 on a GPU that has it), fp32, bf16, fp16.")]
Device = Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")]
Seed = Annotated[int, typer.Option(help="Seeds the trainer (and tiny's weights).")]
SaveSteps = Annotated[int, typer.Option(help="Checkpoint every this many steps.")]
ReportTo = Annotated[str, typer.Option(help="Also report to: none, tensorboard, wandb...")]
Threads = Annotated[int, typer.Option(help="Torch CPU threads (0: torch's default).")]
Out = Annotated[Path, typer.Option(help="Folder the run's folder goes in.")]
Name = Annotated[
    str | None, typer.Option(help="The run's name (default {env}__{kind}__{seed}__{time}).")
]
Db = Annotated[str | None, typer.Option(help="Store (path or URL) the run is recorded in.")]


def _run(
    kind: str, train: Callable[..., Path], cfg: Any, out: Path, db: str | None, name: str | None
) -> None:
    """Train, saying every refusal in one line and what Ctrl-C left."""
    try:
        folder = train(cfg, out=out, db=db, name=name)
    except OpsgymError as exc:
        fail(str(exc))
    except ModuleNotFoundError as exc:
        need_extra(exc, "grpo")
    except KeyboardInterrupt:
        interrupted(
            f"the model as it was is saved in the run's model/ and the {kind} run marked "
            "interrupted"
        )
    typer.echo(
        f"run saved in {folder}; evaluate it with: opsgym eval --env {cfg.env} --policy hf:{folder}"
    )


def _lora(r: int, alpha: int, dropout: float, targets: str) -> Any:
    from opsgym.training.hf import LoRA

    return LoRA(r=r, alpha=alpha, dropout=dropout, targets=targets)


def sft_command(
    model: Model,
    env: Env = "release",
    scenario: Scenario = "mixed",
    episodes: Annotated[int, typer.Option(help="Train-split reference episodes.")] = 256,
    eval_episodes: Annotated[
        int, typer.Option(help="Dev-split reference episodes for eval_loss (0: none).")
    ] = 32,
    safe_only: Annotated[
        bool, typer.Option(help="Learn only from reference episodes that ended safely.")
    ] = True,
    epochs: Annotated[float, typer.Option(help="Passes over the data.")] = 1.0,
    max_steps: Annotated[int, typer.Option(help="Optimizer steps (-1: epochs decide).")] = -1,
    batch_size: Annotated[int, typer.Option(help="Conversations per device per step.")] = 2,
    grad_accum: Annotated[int, typer.Option(help="Batches accumulated per step.")] = 8,
    learning_rate: Annotated[float, typer.Option(help="AdamW's step size.")] = 2e-4,
    max_length: Annotated[int, typer.Option(help="Tokens of a conversation trained on.")] = 8192,
    assistant_only_loss: Annotated[
        bool, typer.Option(help="Loss on the assistant's turns only.")
    ] = True,
    lora_r: LoraR = 16,
    lora_alpha: LoraAlpha = 32,
    lora_dropout: LoraDropout = 0.05,
    lora_targets: LoraTargets = "all-linear",
    precision: Precision = "auto",
    device: Device = "auto",
    seed: Seed = 1,
    logging_steps: Annotated[int, typer.Option(help="Log every this many steps.")] = 10,
    eval_steps: Annotated[int, typer.Option(help="Evaluate every this many steps.")] = 100,
    save_steps: SaveSteps = 200,
    report_to: ReportTo = "none",
    torch_threads: Threads = 0,
    out: Out = Path("runs"),
    name: Name = None,
    db: Db = None,
) -> None:
    """Fine-tune on the oracle's conversations (TRL's SFTTrainer, LoRA); the run goes in the
    store.
    """
    from opsgym.training import sft

    cfg = sft.SFTRunConfig(
        env=env,
        model=model,
        scenario=scenario,
        episodes=episodes,
        eval_episodes=eval_episodes,
        safe_only=safe_only,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        grad_accum=grad_accum,
        learning_rate=learning_rate,
        max_length=max_length,
        assistant_only_loss=assistant_only_loss,
        lora=_lora(lora_r, lora_alpha, lora_dropout, lora_targets),
        precision=precision,
        device=device,
        seed=seed,
        logging_steps=logging_steps,
        eval_steps=eval_steps,
        save_steps=save_steps,
        report_to=report_to,
        torch_threads=torch_threads,
    )
    _run("sft", sft.train, cfg, out, db, name)


def grpo_command(
    model: Model,
    env: Env = "release",
    scenario: Scenario = "mixed",
    episodes: Annotated[int, typer.Option(help="Train seeds in the dataset.")] = 512,
    steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 200,
    num_generations: Annotated[int, typer.Option(help="Rollouts per seed (the group).")] = 8,
    batch_size: Annotated[int, typer.Option(help="Rollouts per device per step.")] = 8,
    grad_accum: Annotated[int, typer.Option(help="Batches accumulated per step.")] = 1,
    learning_rate: Annotated[float, typer.Option(help="AdamW's step size.")] = 1e-5,
    beta: Annotated[float, typer.Option(help="KL penalty towards the starting model.")] = 0.0,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    max_completion_length: Annotated[
        int, typer.Option(help="Tokens of a rollout after its prompt, tool reports included.")
    ] = 4096,
    max_tool_calls: Annotated[
        int | None, typer.Option(help="Rounds of tool calls per rollout (default: no limit).")
    ] = None,
    thinking: Annotated[
        bool, typer.Option(help="Let a reasoning chat template think (enable_thinking).")
    ] = False,
    lora_r: LoraR = 16,
    lora_alpha: LoraAlpha = 32,
    lora_dropout: LoraDropout = 0.05,
    lora_targets: LoraTargets = "all-linear",
    precision: Precision = "auto",
    device: Device = "auto",
    vllm: Annotated[bool, typer.Option(help="Generate with vLLM (colocated; a GPU).")] = False,
    seed: Seed = 1,
    logging_steps: Annotated[int, typer.Option(help="Log every this many steps.")] = 1,
    save_steps: SaveSteps = 50,
    report_to: ReportTo = "none",
    torch_threads: Threads = 0,
    out: Out = Path("runs"),
    name: Name = None,
    db: Db = None,
) -> None:
    """GRPO with the environment's own reward (TRL's GRPOTrainer with environment_factory,
    LoRA); the run goes in the store.
    """
    from opsgym.training import grpo

    cfg = grpo.GRPORunConfig(
        env=env,
        model=model,
        scenario=scenario,
        episodes=episodes,
        steps=steps,
        num_generations=num_generations,
        batch_size=batch_size,
        grad_accum=grad_accum,
        learning_rate=learning_rate,
        beta=beta,
        temperature=temperature,
        max_completion_length=max_completion_length,
        max_tool_calls=max_tool_calls,
        thinking=thinking,
        lora=_lora(lora_r, lora_alpha, lora_dropout, lora_targets),
        precision=precision,
        device=device,
        vllm=vllm,
        seed=seed,
        logging_steps=logging_steps,
        save_steps=save_steps,
        report_to=report_to,
        torch_threads=torch_threads,
    )
    _run("grpo", grpo.train, cfg, out, db, name)


def register(app: typer.Typer) -> None:
    """Add the LLM trainers' commands to ``opsgym train``."""
    app.command("sft")(sft_command)
    app.command("grpo")(grpo_command)
