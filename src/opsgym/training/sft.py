"""Supervised fine-tuning on the oracle's conversations: TRL's ``SFTTrainer``, LoRA through PEFT.

    opsgym train sft --env release --model Qwen/Qwen3-0.6B [--episodes 256] [--eval-episodes 32]
                     [--lora-r 16] [--max-length 8192] [--precision auto] [--device auto]

The script reads top to bottom, as CleanRL's do: :class:`SFTRunConfig` (a field per argument),
the checks (before anything is loaded), the data, the model, the trainer, training with
checkpoints, the final model. The data are reference conversations (:mod:`opsgym.training.data`):
the oracle's episodes of ``episodes`` train seeds in the chat format GRPO and the ``hf:``
policies use, with the loss on the assistant's turns only; the dev split's conversations
(``eval_episodes`` seeds, held-out families included when ``scenario`` is ``all`` or ``mixed``)
give ``eval_loss``, before training, every ``eval_steps`` and at the end.

A run is named ``{env}__sft__{seed}__{time}``; its folder holds ``config.json``,
``checkpoints/`` (the trainer's: LoRA adapters), and ``model/``: the model with LoRA merged in,
its tokenizer and ``opsgym.json``, which ``opsgym train grpo --model RUN`` and ``opsgym eval
--policy hf:RUN`` load. The store records the run (config, curves of every logged number,
status, checkpoint). Ctrl-C saves ``model/`` as it is and marks the run ``interrupted``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from opsgym.agents.hf_models import one_line, resolve_device, resolve_precision
from opsgym.core.errors import TrainingError
from opsgym.training import runs
from opsgym.training.hf import LoRA
from opsgym.training.runs import TrainerConfig


class SFTRunConfig(TrainerConfig):
    """Everything an SFT run depends on (saved as ``config.json`` and in the store)."""

    env: str = "release"
    """World whose reference conversations are learnt."""
    model: str = "tiny"
    """Model to fine-tune: ``tiny`` (built here, offline), a run folder, a model folder or a Hub
    id."""
    scenario: str = "mixed"
    """Scenario of the episodes (``mixed``: the seed draws the family; ``all``: each family)."""
    episodes: int = Field(256, ge=1)
    """Train-split reference episodes (one conversation each)."""
    eval_episodes: int = Field(32, ge=0)
    """Dev-split reference episodes for ``eval_loss`` (0: none)."""
    safe_only: bool = True
    """Learn only from reference episodes that ended in a safe outcome."""
    epochs: float = Field(1.0, gt=0)
    """Passes over the data (``max_steps`` wins when it is set)."""
    max_steps: int = Field(-1, ge=-1)
    """Optimizer steps to train for (-1: ``epochs`` decide)."""
    batch_size: int = Field(2, ge=1)
    """Conversations per device per step, before accumulation."""
    grad_accum: int = Field(8, ge=1)
    """Batches accumulated per optimizer step."""
    learning_rate: float = Field(2e-4, gt=0)
    """AdamW's step size (LoRA's usual; lower it for full fine-tuning)."""
    max_length: int = Field(8192, ge=1)
    """Tokens of a conversation trained on (the rest is cut)."""
    assistant_only_loss: bool = True
    """Loss on the assistant's turns only (needs a chat template TRL knows, as Qwen's)."""
    lora: LoRA = Field(default_factory=LoRA)
    """LoRA's settings (``r=0``: full fine-tuning)."""
    precision: str = "auto"
    """``auto`` (bf16 on a GPU that has it, else fp32), ``fp32``, ``bf16`` or ``fp16``."""
    device: str = "auto"
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    seed: int = Field(1, ge=0)
    """Seeds the trainer (data order, dropout, LoRA's initialisation) and ``tiny``'s weights."""
    logging_steps: int = Field(10, ge=1)
    """Log (and record in the store) every this many steps."""
    eval_steps: int = Field(100, ge=1)
    """Evaluate on the dev conversations every this many steps."""
    save_steps: int = Field(200, ge=1)
    """Checkpoint every this many steps (the last two are kept)."""
    report_to: str = "none"
    """Where the trainer also reports: ``none``, ``tensorboard``, ``wandb``..."""
    torch_threads: int = Field(0, ge=0)
    """Torch's CPU threads (0: torch's default)."""

    @field_validator("max_steps")
    @classmethod
    def _steps_or_epochs(cls, value: int) -> int:
        if value == 0:
            raise ValueError("must be -1 (the epochs decide) or at least 1")
        return value

    def check(self) -> SFTRunConfig:
        """Check the names against the registry (an unknown world or scenario raises, naming
        the known ones); the fields' bounds were checked when the config was made.
        """
        from opsgym.core.registry import spec

        spec(self.env)
        if self.scenario != "all":
            spec(self.env).scenario(self.scenario)
        return self


def train(
    cfg: SFTRunConfig,
    out: str | Path = "runs",
    db: str | None | bool = None,
    *,
    name: str | None = None,
    callbacks: list[Any] | None = None,
) -> Path:
    """Fine-tune as ``cfg`` says; return the run's folder.

    ``db`` is the store the run is recorded in (``None``: ``OPSGYM_DB`` or the default file;
    ``False``: none). ``callbacks`` are more ``TrainerCallback``s.

    Raises:
        TrainingError: a bad argument, a model that cannot be loaded, or the folder exists.
        KeyboardInterrupt: after saving the model and marking the run interrupted.
    """
    # -- checks: everything that can be refused is refused before anything is loaded
    cfg.check()
    name = name or runs.run_name(cfg.env, "sft", cfg.seed)
    folder = runs.new_folder(out, name)

    import torch
    from trl import SFTConfig, SFTTrainer

    from opsgym.training import hf
    from opsgym.training.data import reference_dataset

    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)

    # -- the model
    model, tokenizer = hf.load(
        cfg.model, cfg.env, device=device, precision=precision, seed=cfg.seed
    )

    # -- data: the oracle's conversations, train seeds to learn, dev seeds to check
    columns = ["messages", "tools"]
    train_data = reference_dataset(
        cfg.env, "train", cfg.episodes, scenario=cfg.scenario, safe_only=cfg.safe_only
    )
    if len(train_data) == 0:
        raise TrainingError(f"no reference episode of {cfg.episodes} ended safely to learn from")
    eval_data = None
    if cfg.eval_episodes:
        eval_data = reference_dataset(
            cfg.env, "dev", cfg.eval_episodes, scenario=cfg.scenario, safe_only=cfg.safe_only
        ).select_columns(columns)

    # -- the trainer
    curves = runs.curves_callback()
    args = SFTConfig(
        output_dir=str(folder / "checkpoints"),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate,
        max_length=cfg.max_length,
        assistant_only_loss=cfg.assistant_only_loss,
        logging_steps=cfg.logging_steps,
        eval_strategy="steps" if eval_data is not None else "no",
        eval_steps=cfg.eval_steps,
        eval_on_start=eval_data is not None,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=2,
        seed=cfg.seed,
        report_to=cfg.report_to,
        disable_tqdm=True,
        **hf.trainer_arguments(device, precision),
    )
    try:
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=train_data.select_columns(columns),
            eval_dataset=eval_data,
            processing_class=tokenizer,
            peft_config=cfg.lora.peft_config(),
            callbacks=[curves, *(callbacks or [])],
        )
    except (ValueError, TypeError) as exc:
        shutil.rmtree(folder, ignore_errors=True)  # it did not exist: the trainer made it
        hint = " (--no-assistant-only-loss trains on whole conversations)"
        raise TrainingError(
            f"SFTTrainer refused the setup: {one_line(exc)}"
            + (hint if cfg.assistant_only_loss and "template" in str(exc) else "")
        ) from None
    runs.write_config(folder, cfg.model_dump())
    curves.record = runs.Record(db, name, kind="sft", env=cfg.env, config=cfg.model_dump())

    # -- training, then the final evaluation and model
    def save() -> Path:
        meta = {"env": cfg.env, "kind": "sft", "run": name, "base": cfg.model, "thinking": False}
        return hf.save(trainer.model, tokenizer, folder / "model", meta)

    def evaluate() -> None:  # at the end, unless the last step was just evaluated
        last = curves.curves.get("eval_loss", [[None]])[-1][0]
        if eval_data is not None and last != trainer.state.global_step:
            trainer.evaluate()

    runs.train_and_save(trainer, curves, save, after=evaluate)
    return folder
