"""GRPO on the environment's own reward: TRL's ``GRPOTrainer(environment_factory=...)``, LoRA
through PEFT.

    opsgym train grpo --env release --model runs/release__sft__1__... [--episodes 512]
                      [--num-generations 8] [--batch-size 8] [--max-completion-length 4096]
                      [--steps 200] [--lora-r 16] [--precision auto] [--device auto] [--vllm]

The script reads top to bottom: :class:`GRPORunConfig` (a field per argument), the checks
(before anything is loaded), the rows, the environment, the model, the trainer, training with
checkpoints, the final model.

**Rollouts** are TRL's: each row (a train seed, :func:`opsgym.adapters.episodes.dataset`)
resets an environment of :func:`opsgym.adapters.trl.environment_factory` (train seeds only),
whose first prompt the model answers with tool calls; TRL runs them through the environment's
methods (each one step of the episode) and hands back what the tools reported, until the model
replies without a call, runs out of ``max_completion_length`` tokens or of
``max_tool_calls`` rounds. **The reward is the environment's** ``get_reward``: the episode's
return as the judge settles it (:func:`opsgym.adapters.episodes.settle`, an episode stopped early
judged as its budget ending there would be), never a reading of the text; no other reward
function is given.

Every rollout's episode is written to ``episodes.jsonl`` in the run's folder (the step, seed,
family, calls, outcome and return: :data:`LEDGER`), so what the trainer was paid can be checked
against the episodes it played; the curves add ``judged/return`` and ``judged/safe`` per logged
step from it.

A run is named ``{env}__grpo__{seed}__{time}``; its folder holds ``config.json``,
``checkpoints/``, ``episodes.jsonl`` and ``model/`` (LoRA merged in, tokenizer, ``opsgym.json``),
which ``opsgym eval --policy hf:RUN`` loads. The store records the run. Ctrl-C saves ``model/``
as it is and marks the run ``interrupted``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from opsgym.agents.hf_models import one_line, resolve_device, resolve_precision
from opsgym.core.errors import TrainingError
from opsgym.training import runs
from opsgym.training.hf import LoRA
from opsgym.training.runs import TrainerConfig

LEDGER = "episodes.jsonl"
"""The rollouts' episodes, one JSON object a line:
``{"step", "seed", "scenario", "family", "calls", "steps", "done", "outcome", "return"}``."""


class GRPORunConfig(TrainerConfig):
    """Everything a GRPO run depends on (saved as ``config.json`` and in the store)."""

    env: str = "release"
    """World to train on."""
    model: str = "tiny"
    """Model to train: ``tiny`` (built here, offline), a run folder (an SFT run's), a model
    folder or a Hub id."""
    scenario: str = "mixed"
    """Scenario of the training episodes (``mixed``: the seed draws the family)."""
    episodes: int = Field(512, ge=1)
    """Train seeds in the dataset (each one an episode, played ``num_generations`` times)."""
    steps: int = Field(200, ge=1)
    """Optimizer steps."""
    num_generations: int = Field(8, ge=2)
    """Rollouts per seed: the group whose returns GRPO compares (at least two)."""
    batch_size: int = Field(8, ge=1)
    """Rollouts per device per step (``batch_size x grad_accum``: a multiple of
    ``num_generations``)."""
    grad_accum: int = Field(1, ge=1)
    """Batches accumulated per optimizer step."""
    learning_rate: float = Field(1e-5, gt=0)
    """AdamW's step size."""
    beta: float = Field(0.0, ge=0)
    """KL penalty towards the starting model (0: no reference model is kept)."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of the rollouts."""
    max_completion_length: int = Field(4096, ge=1)
    """Tokens of one rollout after its prompt: the model's turns and the tools' reports."""
    max_tool_calls: int | None = Field(None, ge=1)
    """Rounds of tool calls per rollout (default: until the tokens run out)."""
    thinking: bool = False
    """Let a reasoning chat template think (Qwen3's ``enable_thinking``); off by default."""
    lora: LoRA = Field(default_factory=LoRA)
    """LoRA's settings (``r=0``: every weight is trained)."""
    precision: str = "auto"
    """``auto`` (bf16 on a GPU that has it, else fp32), ``fp32``, ``bf16`` or ``fp16``."""
    device: str = "auto"
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    vllm: bool = False
    """Generate with vLLM in this process (``vllm_mode="colocate"``); needs vLLM and a GPU."""
    seed: int = Field(1, ge=0)
    """Seeds the trainer (data order, sampling) and ``tiny``'s weights."""
    logging_steps: int = Field(1, ge=1)
    """Log (and record in the store) every this many steps."""
    save_steps: int = Field(50, ge=1)
    """Checkpoint every this many steps (the last two are kept)."""
    report_to: str = "none"
    """Where the trainer also reports: ``none``, ``tensorboard``, ``wandb``..."""
    torch_threads: int = Field(0, ge=0)
    """Torch's CPU threads (0: torch's default)."""

    @model_validator(mode="after")
    def _whole_groups(self) -> GRPORunConfig:
        if (self.batch_size * self.grad_accum) % self.num_generations:
            raise ValueError(
                f"batch_size x grad_accum ({self.batch_size} x {self.grad_accum}) must be a "
                f"multiple of num_generations ({self.num_generations})"
            )
        return self

    def check(self) -> GRPORunConfig:
        """Check the names against the registry (an unknown world or scenario raises, naming
        the known ones); the fields' bounds were checked when the config was made.
        """
        from opsgym.core.registry import spec

        spec(self.env).scenario(self.scenario)
        return self


# -- the environment, with its ledger ---------------------------------------------------------


def ledgered_environment(env: str, scenario: str, path: Path, clock: dict[str, Any]) -> type:
    """The TRL environment class of ``env`` (train seeds only) whose ``get_reward`` also writes
    the episode it judged to ``path`` (see :data:`LEDGER`), tagged with ``clock["step"]``, and
    adds it to the list ``clock["new"]``.

    It keeps the class name TRL logs the reward under (``rewards/ReleaseEnvironment/mean``).
    """
    from opsgym.adapters.episodes import settle
    from opsgym.adapters.trl import environment_factory, episode

    base = environment_factory(env, scenario, split="train")

    def get_reward(self: Any) -> float:
        reward = base.get_reward(self)
        played = episode(self)
        verdict, _ = settle(played)
        entry = {
            "step": clock["step"],
            "seed": played.seed,
            "scenario": played.scenario.name,
            "family": played.family.name,
            "calls": [{"tool": c["tool"], "args": c["args"]} for c in played.record()["calls"]],
            "steps": played.steps,
            "done": played.done,
            "outcome": verdict.outcome,
            "return": reward,
        }
        with path.open("a") as ledger:
            ledger.write(json.dumps(entry) + "\n")
        clock["new"].append(entry)
        return reward

    get_reward.__doc__ = base.get_reward.__doc__
    return type(base.__name__, (base,), {"get_reward": get_reward, "__module__": base.__module__})


def read_ledger(folder: str | Path) -> list[dict[str, Any]]:
    """The episodes a GRPO run played (its ``episodes.jsonl``)."""
    path = Path(folder) / LEDGER
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _judged_callback(env: str, clock: dict[str, Any], curves: Any) -> Any:
    """Sets the ledger's clock at each step, and adds the judged returns to the curves."""
    from transformers import TrainerCallback

    from opsgym.core.registry import spec

    safe = spec(env).safe_outcomes

    class Judged(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any):
            clock["step"] = state.global_step + 1

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            entries, clock["new"] = clock["new"], []
            if entries and logs is not None and "reward" in logs:
                returns = [e["return"] for e in entries]
                step = state.global_step
                curves.curves.setdefault("judged/return", []).append(
                    [step, sum(returns) / len(returns)]
                )
                share = sum(e["outcome"] in safe for e in entries) / len(entries)
                curves.curves.setdefault("judged/safe", []).append([step, share])

    return Judged()


# -- training ---------------------------------------------------------------------------------


def train(
    cfg: GRPORunConfig,
    out: str | Path = "runs",
    db: str | None | bool = None,
    *,
    name: str | None = None,
    callbacks: list[Any] | None = None,
) -> Path:
    """Train as ``cfg`` says; return the run's folder.

    ``db`` is the store the run is recorded in (``None``: ``OPSGYM_DB`` or the default file;
    ``False``: none). ``callbacks`` are more ``TrainerCallback``s.

    Raises:
        TrainingError: a bad argument, a model that cannot be loaded, or the folder exists.
        KeyboardInterrupt: after saving the model and marking the run interrupted.
    """
    # -- checks: everything that can be refused is refused before anything is loaded
    cfg.check()
    name = name or runs.run_name(cfg.env, "grpo", cfg.seed)
    folder = runs.new_folder(out, name)

    import shutil

    import torch
    from trl import GRPOConfig, GRPOTrainer

    from opsgym.adapters.episodes import dataset
    from opsgym.training import hf

    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    if cfg.vllm and not device.startswith("cuda"):
        raise TrainingError("--vllm needs a GPU (device cuda)")
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)

    # -- rows and the environment: train seeds, judged by the environment itself
    rows = dataset(cfg.env, "train", cfg.episodes, scenario=cfg.scenario)
    clock: dict[str, Any] = {"step": 0, "new": []}
    environment = ledgered_environment(cfg.env, cfg.scenario, folder / LEDGER, clock)

    # -- the model
    model, tokenizer = hf.load(
        cfg.model, cfg.env, device=device, precision=precision, seed=cfg.seed
    )

    # -- the trainer
    curves = runs.curves_callback()
    args = GRPOConfig(
        output_dir=str(folder / "checkpoints"),
        max_steps=cfg.steps,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        num_generations=cfg.num_generations,
        learning_rate=cfg.learning_rate,
        beta=cfg.beta,
        temperature=cfg.temperature,
        max_completion_length=cfg.max_completion_length,
        max_tool_calling_iterations=cfg.max_tool_calls,
        chat_template_kwargs={"enable_thinking": cfg.thinking},
        use_vllm=cfg.vllm,
        vllm_mode="colocate",
        logging_steps=cfg.logging_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=2,
        seed=cfg.seed,
        report_to=cfg.report_to,
        disable_tqdm=True,
        **hf.trainer_arguments(device, precision),
    )
    try:
        trainer = GRPOTrainer(
            model=model,
            args=args,
            train_dataset=rows,
            processing_class=tokenizer,
            peft_config=cfg.lora.peft_config(),
            environment_factory=environment,
            # judged first: its curves go to the store with the trainer's
            callbacks=[_judged_callback(cfg.env, clock, curves), curves, *(callbacks or [])],
        )
    except (ValueError, TypeError, ImportError) as exc:
        shutil.rmtree(folder, ignore_errors=True)  # it did not exist: the trainer made it
        raise TrainingError(f"GRPOTrainer refused the setup: {one_line(exc)}") from None
    runs.write_config(folder, cfg.model_dump())
    curves.record = runs.Record(db, name, kind="grpo", env=cfg.env, config=cfg.model_dump())

    # -- training, then the final model
    def save() -> Path:
        meta = {
            "env": cfg.env,
            "kind": "grpo",
            "run": name,
            "base": cfg.model,
            "thinking": cfg.thinking,
        }
        return hf.save(trainer.model, tokenizer, folder / "model", meta)

    runs.train_and_save(trainer, curves, save)
    return folder
